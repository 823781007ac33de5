package release

import (
	"context"
	"fmt"
	"slices"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/release/common"
	release "helm.sh/helm/v4/pkg/release/v1"

	"github.com/helm-inject/helm-inject/chartify"
	"github.com/helm-inject/helm-inject/inject"
	"github.com/helm-inject/helm-inject/internal/redact"
)

// InjectorState is one injector of a release, with what the library
// offers now.
type InjectorState struct {
	Name string `json:"name"`
	// Version is the recorded version of a built-in injector; empty for an
	// external command.
	Version string `json:"version,omitempty"`
	// Newest is the library's newest version, when a library was given.
	Newest   string `json:"newest,omitempty"`
	Outdated bool   `json:"outdated"`
	// Program is the executable an external injector ran.
	Program *inject.Program `json:"program,omitempty"`
}

// RevisionInjectors is what one revision of a release recorded of its
// injectors.
type RevisionInjectors struct {
	Revision  int             `json:"revision"`
	Status    string          `json:"status"`
	Injectors []inject.Record `json:"injectors"`
}

// WorkloadState is what the built-in injectors added to one workload.
type WorkloadState struct {
	Kind      string               `json:"kind"`
	Name      string               `json:"name"`
	Hook      bool                 `json:"hook,omitempty"`
	Injectors []inject.StatusEntry `json:"injectors"`
}

// ReleaseState is a helm-inject release as its latest revision records it.
type ReleaseState struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Revision  int    `json:"revision"`
	Status    string `json:"status"`
	// Chart is name-version, MISSING for a record without a chart (as
	// helm list and helm history say).
	Chart     string          `json:"chart"`
	Source    string          `json:"source,omitempty"`
	Injectors []InjectorState `json:"injectors"`
	Outdated  bool            `json:"outdated"`
	Workloads []WorkloadState `json:"workloads,omitempty"`
	// History is every stored revision's injectors, oldest first (status
	// only).
	History []RevisionInjectors `json:"history,omitempty"`
	// Live is what runs in the cluster (--live only).
	Live *LiveState `json:"live,omitempty"`
	// Error says why the release could not be read (list only, which
	// goes on with the next release); the fields before it are what
	// could be.
	Error string `json:"error,omitempty"`
}

// Status reads one release's injectors and per-workload injections from
// its latest revision in Helm's storage; nothing else is queried.
type Status struct {
	cfg *action.Configuration
	// Library, when set, supplies the newest versions for OUTDATED.
	Library *inject.Library
	// Live, when set, adds what runs in the cluster.
	Live *Live
	// connect makes the live view's clients; newLiveClients when nil
	// (tests give in-memory ones).
	connect func(*action.Configuration) (liveClients, error)
}

// NewStatus returns a Status bound to a Helm configuration.
func NewStatus(cfg *action.Configuration) *Status { return &Status{cfg: cfg} }

// Run reports on release name.
func (s *Status) Run(ctx context.Context, name string) (*ReleaseState, error) {
	// One read of the history gives both the latest revision (what
	// Releases.Last would read again) and every revision's injectors.
	rels, err := s.history(name)
	if err != nil {
		return nil, fmt.Errorf("release %q: %w", name, err)
	}
	rel := rels[len(rels)-1]
	st, err := releaseState(rel, s.Library)
	if err != nil {
		return nil, fmt.Errorf("release %q: %w", name, err)
	}
	if st.History, err = injectorHistory(rels); err != nil {
		return nil, fmt.Errorf("release %q: %w", name, err)
	}
	if s.Live != nil {
		c, err := connect(s.connect, s.cfg)
		if err != nil {
			return nil, fmt.Errorf("release %q: %w", name, err)
		}
		if st.Live, err = s.Live.Run(ctx, c, rel); err != nil {
			return nil, err
		}
	}
	docs, err := releaseDocuments(rel, nil)
	if err != nil {
		return nil, fmt.Errorf("release %q: %w", name, err)
	}
	for _, d := range docs {
		if d.Empty() {
			continue
		}
		kind, wname, entries, err := inject.PodStatus(d.Content)
		if err != nil {
			return nil, fmt.Errorf("release %q: %s: %w", name, d.ID, err)
		}
		if len(entries) > 0 {
			st.Workloads = append(st.Workloads, WorkloadState{Kind: kind, Name: wname, Hook: d.Hook != "", Injectors: entries})
		}
	}
	return st, nil
}

// history reads every stored revision of release name, oldest first (the
// storage may answer in any order: Secrets list v10 before v2).
func (s *Status) history(name string) ([]*release.Release, error) {
	found, err := s.cfg.Releases.History(name)
	if err != nil {
		return nil, err
	}
	rels, err := V1Releases(found)
	if err != nil {
		return nil, err
	}
	if len(rels) == 0 {
		return nil, fmt.Errorf("no revision for release %q", name)
	}
	slices.SortFunc(rels, func(a, b *release.Release) int { return a.Version - b.Version })
	return rels, nil
}

// injectorHistory is what each revision recorded of its injectors.
func injectorHistory(rels []*release.Release) ([]RevisionInjectors, error) {
	out := make([]RevisionInjectors, 0, len(rels))
	for _, r := range rels {
		recs, err := revisionRecords(r)
		if err != nil {
			return nil, err
		}
		out = append(out, RevisionInjectors{Revision: r.Version, Status: recordStatus(r), Injectors: append([]inject.Record{}, recs...)})
	}
	return out, nil
}

// IsManaged reports whether helm-inject made a release.
func IsManaged(rel *release.Release) bool {
	if rel.Chart == nil || rel.Chart.Metadata == nil {
		return false
	}
	_, ok := rel.Chart.Metadata.Annotations[chartify.AnnotationSource]
	return ok
}

// missingChart is the chart of a record without one, as helm history and
// helm list print it (formatChartName in helm's pkg/cmd).
const missingChart = "MISSING"

// chartName is a record's chart as name-version, MISSING without one.
func chartName(rel *release.Release) string {
	if rel.Chart == nil || rel.Chart.Metadata == nil {
		return missingChart
	}
	return rel.Chart.Metadata.Name + "-" + rel.Chart.Metadata.Version
}

// recordStatus is a record's status; "unknown" (Helm's name for a status
// it cannot tell) for a record without its info, which helm's own list
// and status do not survive.
func recordStatus(rel *release.Release) string {
	if rel.Info == nil {
		return common.StatusUnknown.String()
	}
	return rel.Info.Status.String()
}

func releaseState(rel *release.Release, lib *inject.Library) (*ReleaseState, error) {
	st := &ReleaseState{Name: rel.Name, Namespace: rel.Namespace, Revision: rel.Version, Status: recordStatus(rel), Chart: chartName(rel), Injectors: []InjectorState{}}
	if rel.Chart != nil && rel.Chart.Metadata != nil {
		md := rel.Chart.Metadata
		st.Source = redact.String(md.Annotations[chartify.AnnotationSource])
		recs, err := revisionRecords(rel)
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			is := InjectorState{Name: r.Name, Version: r.Version, Program: r.Program}
			if lib != nil && r.Version != "" {
				if newest := lib.Newest(r.Name); newest != nil {
					is.Newest = newest.Version
					is.Outdated = mustSemverLess(r.Version, newest.Version)
				}
			}
			st.Outdated = st.Outdated || is.Outdated
			st.Injectors = append(st.Injectors, is)
		}
	}
	return st, nil
}

// connect makes a live view's clients with f, newLiveClients when nil.
func connect(f func(*action.Configuration) (liveClients, error), cfg *action.Configuration) (liveClients, error) {
	if f == nil {
		f = newLiveClients
	}
	return f(cfg)
}
