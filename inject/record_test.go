package inject

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestStepRecords: each injector says what a revision records of it: an
// external one its spec, credentials redacted, and its output's digest; a
// built-in one its name, version and definition digest. The annotation
// round-trips, and a record written before redaction is redacted when read.
func TestStepRecords(t *testing.T) {
	cmd := mustCommand(t, "my-injector --token s3cret FILE")
	def, err := ParseDefinition("ann/1.2.0.yaml", []byte("name: ann\nversion: 1.2.0\ntemplate: |\n  annotations: {a: b}\n"))
	if err != nil {
		t.Fatal(err)
	}
	ti, err := NewTemplateInjector(def, nil)
	if err != nil {
		t.Fatal(err)
	}
	prog := &Program{Path: "/usr/bin/my-injector", SHA256: "sha256:0123"}
	got := []Record{Step{Injector: cmd, OutputDigest: "sha256:out", Program: prog}.Record(), Step{Injector: ti, OutputDigest: "ignored"}.Record()}
	want := []Record{{Name: "my-injector --token xxxxx FILE", Digest: "sha256:out", Program: prog}, {Name: "ann", Version: "1.2.0", Digest: ti.Digest()}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
	enc, err := EncodeRecords(got)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeRecords(map[string]string{RecordsAnnotation: enc})
	if err != nil || !cmp.Equal(back, got) {
		t.Errorf("round trip: %v %v", back, err)
	}
	old, err := DecodeRecords(map[string]string{RecordsAnnotation: `[{"name":"my-injector --token s3cret FILE"}]`})
	if err != nil || old[0].Name != "my-injector --token xxxxx FILE" {
		t.Errorf("an old record is not redacted when read: %v %v", old, err)
	}
	if none, err := DecodeRecords(map[string]string{}); none != nil || err != nil {
		t.Errorf("a revision without records: %v %v", none, err)
	}
	if _, err := DecodeRecords(map[string]string{RecordsAnnotation: `[{"name":`}); err == nil || !strings.Contains(err.Error(), "reading the helm-inject.io/injectors annotation") {
		t.Errorf("a broken annotation: %v", err)
	}
}
