package inject

import (
	"encoding/json"
	"fmt"

	"github.com/helm-inject/helm-inject/internal/redact"
)

// RecordsAnnotation is the Chart.yaml annotation, in every revision
// helm-inject makes, that lists the injectors the revision got.
const RecordsAnnotation = "helm-inject.io/injectors"

// Record is what a revision remembers of one injector: for an external one
// its spec (credentials redacted) and a digest of what it produced, for a
// built-in one its name, version and the digest of its definition and
// parameters. The reconcile strategies read the versions back; diff and
// status show them.
type Record struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	Digest  string `json:"digest,omitempty"`
	// Program is the executable an external injector ran; none for a
	// built-in one, and in revisions made before helm-inject recorded it.
	Program *Program `json:"program,omitempty"`
}

// Recorder is an Injector that says itself what a revision records of it.
type Recorder interface {
	Record(outputDigest string) Record
}

// Record implements Recorder: the spec as written, credentials redacted
// (the record is stored in every revision), and the output's digest.
func (c *Command) Record(outputDigest string) Record {
	return Record{Name: redact.String(c.Spec), Digest: outputDigest}
}

// Record implements Recorder: the output follows from the definition and
// the parameters, so their digest identifies it.
func (t *TemplateInjector) Record(string) Record {
	return Record{Name: t.Def.Name, Version: t.Def.Version, Digest: t.Digest()}
}

// Record is what a revision records of the step's injector.
func (s Step) Record() Record {
	rec := Record{Name: redact.String(s.Injector.Name()), Digest: s.OutputDigest}
	if r, ok := s.Injector.(Recorder); ok {
		rec = r.Record(s.OutputDigest)
	}
	rec.Program = s.Program
	return rec
}

// EncodeRecords is the value of RecordsAnnotation for records.
func EncodeRecords(records []Record) (string, error) {
	b, err := json.Marshal(records)
	if err != nil {
		return "", fmt.Errorf("encoding the injector records: %w", err)
	}
	return string(b), nil
}

// DecodeRecords reads RecordsAnnotation from a revision's Chart.yaml
// annotations: none when the revision has no such annotation (helm made
// it). Names are redacted again: revisions written before redaction may
// hold credentials.
func DecodeRecords(annotations map[string]string) ([]Record, error) {
	s, ok := annotations[RecordsAnnotation]
	if !ok || s == "" {
		return nil, nil
	}
	var recs []Record
	if err := json.Unmarshal([]byte(s), &recs); err != nil {
		return nil, fmt.Errorf("reading the %s annotation: %w", RecordsAnnotation, err)
	}
	for i := range recs {
		recs[i].Name = redact.String(recs[i].Name)
	}
	return recs, nil
}
