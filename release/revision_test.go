package release

import (
	"fmt"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"

	"github.com/helm-inject/helm-inject/chartify"
	"github.com/helm-inject/helm-inject/inject"
	"github.com/helm-inject/helm-inject/internal/testfs"
)

// TestDecideRevision holds the revision decision to its expected answer
// for each kind of difference alone, one step after another on one
// release: whether resources change, and exactly which other reasons make
// a new revision. diff and apply share the decision, so their agreement
// proves nothing; this table does. apply's outcome is checked too, so the
// inputs apply passes to the decision (--labels) are covered.
func TestDecideRevision(t *testing.T) {
	cfg := memoryConfig(t)
	cfg.RESTClientGetter = newFakeCluster()
	dir := t.TempDir()
	testfs.Write(t, dir, map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: decide\nversion: 0.1.0\n",
		// Notes print the revision: they differ on every apply, and are
		// never a reason for one.
		"templates/NOTES.txt": "Revision {{ .Release.Revision }}\n",
		"templates/cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: decide\ndata:\n  level: {{ .Values.level | quote }}\n",
	})
	load := func(t *testing.T) Source {
		t.Helper()
		ch, _, err := chartify.Load(dir, chartify.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return Source{Ref: dir, Chart: ch}
	}
	const (
		valuesChange = "the release values change (see helm get values)"
		labelsChange = "the release labels change (--labels)"
	)
	type step struct {
		name        string
		vals        map[string]any
		labels      map[string]string
		force       bool              // --force-upgrade: apply's alone (diff has no such flag)
		chart       map[string]string // files written into the chart first
		fail        bool              // mark the newest revision failed first
		failedOver  bool              // store a failed revision over the deployed one first
		serverSide  string            // --server-side
		wantChanges bool
		wantReasons []string
	}
	steps := []step{
		{name: "install", vals: map[string]any{"level": "info"}, wantChanges: true, wantReasons: []string{"the release does not exist yet: apply installs it"}},
		{name: "the same inputs (only the notes differ)", vals: map[string]any{"level": "info"}},
		{name: "a value nothing renders", vals: map[string]any{"level": "info", "unused": 1}, wantReasons: []string{valuesChange}},
		{name: "a value that renders", vals: map[string]any{"level": "debug", "unused": 1}, wantChanges: true, wantReasons: []string{valuesChange}},
		{name: "a label", vals: map[string]any{"level": "debug", "unused": 1}, labels: map[string]string{"team": "a"}, wantReasons: []string{labelsChange}},
		{name: "the same label again", vals: map[string]any{"level": "debug", "unused": 1}, labels: map[string]string{"team": "a"}},
		{name: "the label removed", vals: map[string]any{"level": "debug", "unused": 1}, labels: map[string]string{"team": "null"}, wantReasons: []string{labelsChange}},
		{name: "--force-upgrade", vals: map[string]any{"level": "debug", "unused": 1}, force: true},
		{name: "the newest revision failed", vals: map[string]any{"level": "debug", "unused": 1}, fail: true, wantReasons: []string{"the newest revision 6 is failed: apply applies again"}},
		{name: "a new chart version", vals: map[string]any{"level": "debug", "unused": 1},
			chart:       map[string]string{"Chart.yaml": "apiVersion: v2\nname: decide\nversion: 0.2.0\n"},
			wantReasons: []string{"chart decide-0.1.0 (app ) → decide-0.2.0 (app )"}},
		{name: "only Chart.yaml's description", vals: map[string]any{"level": "debug", "unused": 1},
			chart:       map[string]string{"Chart.yaml": "apiVersion: v2\nname: decide\nversion: 0.2.0\ndescription: now described\n"},
			wantReasons: []string{"the chart's metadata changes (Chart.yaml fields or helm-inject annotations)"}},
		// An upgrade that failed leaves the revision before it deployed:
		// the resources compare with that one, not with the failed one.
		// Its labels are the ones --labels merge with, as helm's upgrade
		// takes the newest revision's.
		{name: "a failed upgrade over the deployed revision", vals: map[string]any{"level": "debug", "unused": 1}, failedOver: true,
			labels: map[string]string{"team": "b"}, wantReasons: []string{"the newest revision 10 is failed: apply applies again"}},
		// An explicit apply method other than the deployed revision's
		// applies again; the same one, or auto, does not.
		{name: "--server-side=true on a server-side release", vals: map[string]any{"level": "debug", "unused": 1}, labels: map[string]string{"team": "b"}, serverSide: "true"},
		{name: "--server-side=false on a server-side release", vals: map[string]any{"level": "debug", "unused": 1}, labels: map[string]string{"team": "b"}, serverSide: "false",
			wantReasons: []string{"--server-side=false: revision 11 was applied server-side (ssa), apply applies client-side (csa)"}},
		{name: "--server-side=false again", vals: map[string]any{"level": "debug", "unused": 1}, labels: map[string]string{"team": "b"}, serverSide: "false"},
		{name: "--server-side=auto on a client-side release", vals: map[string]any{"level": "debug", "unused": 1}, labels: map[string]string{"team": "b"}, serverSide: "auto"},
		{name: "--server-side=true on a client-side release", vals: map[string]any{"level": "debug", "unused": 1}, labels: map[string]string{"team": "b"}, serverSide: "true",
			wantReasons: []string{"--server-side=true: revision 12 was applied client-side (csa), apply applies server-side (ssa)"}},
	}
	for _, s := range steps {
		testfs.Write(t, dir, s.chart)
		if s.fail {
			last := lastRevision(t, cfg, "decide")
			last.Info.Status = rcommon.StatusFailed
			if err := cfg.Releases.Update(last); err != nil {
				t.Fatal(err)
			}
		}
		if s.failedOver {
			last := lastRevision(t, cfg, "decide")
			failed := *last
			info := *last.Info
			failed.Info, failed.Version, info.Status = &info, last.Version+1, rcommon.StatusFailed
			failed.Manifest = strings.Replace(last.Manifest, `level: "debug"`, `level: "broken"`, 1)
			failed.Labels = map[string]string{"team": "b"}
			if failed.Manifest == last.Manifest {
				t.Fatalf("the deployed manifest has no level to change:\n%s", last.Manifest)
			}
			if err := cfg.Releases.Create(&failed); err != nil {
				t.Fatal(err)
			}
		}
		src := load(t)
		in := Inputs{Namespace: "shop", SkipLiveCheck: true, Injectors: &inject.Declared{}, Labels: s.labels}
		d := NewDiff(cfg)
		d.Inputs, d.AllowUnreleased, d.ServerSide = in, true, s.serverSide
		dr, err := d.Run(t.Context(), "decide", src, s.vals)
		if err != nil {
			t.Fatalf("%s: diff: %v", s.name, err)
		}
		if got := len(dr.Changes) > 0; got != s.wantChanges {
			t.Errorf("%s: resources change %v, want %v (%v)", s.name, got, s.wantChanges, dr.Changes)
		}
		if diff := cmp.Diff(s.wantReasons, dr.Reasons, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: reasons (-want +got)\n%s", s.name, diff)
		}
		a := NewApply(cfg)
		a.Inputs, a.ForceUpgrade, a.ServerSide = in, s.force, s.serverSide
		res, err := a.Run(t.Context(), "decide", src, s.vals)
		if err != nil {
			t.Fatalf("%s: apply: %v", s.name, err)
		}
		if want := !s.wantChanges && len(s.wantReasons) == 0 && !s.force; res.Unchanged != want {
			t.Errorf("%s: apply unchanged %v, want %v", s.name, res.Unchanged, want)
		}
	}
}

// TestReuseValuesPrefersNewValues: with --reuse-values and
// --reset-then-reuse-values, a key given now beats the same key stored in
// the last revision; keys given only before are kept.
func TestReuseValuesPrefersNewValues(t *testing.T) {
	current := &helmrelease.Release{Version: 3, Chart: nil, Config: map[string]any{"level": "info", "keep": "old", "nested": map[string]any{"a": 1, "b": 2}}}
	for _, mode := range []ValuesMode{ValuesReuse, ValuesResetThenReuse} {
		ch, _, err := chartify.Load("../fixtures/charts/api", chartify.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		current.Chart = ch
		vals, _, err := upgradeValues(mode, current, map[string]any{"level": "debug", "nested": map[string]any{"b": 3}})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"level": "debug", "keep": "old", "nested": map[string]any{"a": 1, "b": 3}}
		if diff := cmp.Diff(want, vals); diff != "" {
			t.Errorf("mode %d: values (-want +got)\n%s", mode, diff)
		}
	}
}

// TestRenderedRevision: templates see the revision the apply will make
// (.Release.Revision, .Release.IsUpgrade), as helm upgrade renders them.
func TestRenderedRevision(t *testing.T) {
	cfg := memoryConfig(t)
	cfg.RESTClientGetter = newFakeCluster()
	dir := t.TempDir()
	testfs.Write(t, dir, map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: rev\nversion: 0.1.0\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: rev\ndata:\n  revision: \"{{ .Release.Revision }}\"\n  upgrade: \"{{ .Release.IsUpgrade }}\"\n",
	})
	ch, _, err := chartify.Load(dir, chartify.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	src := Source{Ref: dir, Chart: ch}
	in := Inputs{Namespace: "shop", SkipLiveCheck: true, Injectors: &inject.Declared{}}
	for _, want := range []string{`revision: "1"` + "\n  upgrade: \"false\"", `revision: "2"` + "\n  upgrade: \"true\"", `revision: "3"` + "\n  upgrade: \"true\""} {
		a := NewApply(cfg)
		a.Inputs = in
		res, err := a.Run(t.Context(), "rev", src, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(res.Release.Manifest, want) {
			t.Errorf("revision %d rendered:\n%s\nwant %q", res.Release.Version, res.Release.Manifest, want)
		}
		// Without injectors nothing is recorded: the chart carries no
		// empty record.
		if ann, ok := res.Release.Chart.Metadata.Annotations[inject.RecordsAnnotation]; ok {
			t.Errorf("revision %d records %q without injectors", res.Release.Version, ann)
		}
	}
}

// TestResourceSizeLimit: a resource of MaxResourceBytes is applied; one
// byte more is refused before anything is written, naming it and its
// size.
func TestResourceSizeLimit(t *testing.T) {
	const head = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n  x: "
	for _, tt := range []struct {
		size    int
		wantErr string
	}{
		{MaxResourceBytes, ""},
		{MaxResourceBytes + 1, fmt.Sprintf(`release "big": v1 ConfigMap big in big/templates/big.yaml is %d bytes after injection; the API server stores at most %d bytes`, MaxResourceBytes+1, MaxResourceBytes)},
	} {
		cfg := memoryConfig(t)
		cfg.RESTClientGetter = newFakeCluster()
		dir := t.TempDir()
		testfs.Write(t, dir, map[string]string{
			"Chart.yaml":         "apiVersion: v2\nname: big\nversion: 0.1.0\n",
			"templates/big.yaml": head + strings.Repeat("a", tt.size-len(head)) + "\n",
		})
		ch, _, err := chartify.Load(dir, chartify.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		a := NewApply(cfg)
		a.Inputs = Inputs{Namespace: "shop", SkipLiveCheck: true, Injectors: &inject.Declared{}}
		_, err = a.Run(t.Context(), "big", Source{Ref: dir, Chart: ch}, nil)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%d bytes: %v", tt.size, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%d bytes: error %v, want %q", tt.size, err, tt.wantErr)
		}
		if all, _ := cfg.Releases.ListReleases(); tt.wantErr != "" && len(all) != 0 {
			t.Errorf("%d bytes: %d revisions stored", tt.size, len(all))
		}
	}
}

// TestReconcileStrategies: a release keeps the built-in injector version
// it recorded when a newer one appears, unless its strategy says
// otherwise: never keeps it, with-chart keeps it while the chart renders
// the same, always takes the newest the constraint allows.
func TestReconcileStrategies(t *testing.T) {
	ch, _, err := chartify.Load("../fixtures/charts/api", chartify.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	src := Source{Ref: "api", Chart: ch}
	libDir := t.TempDir()
	copyVersion := func(v string) {
		data, err := os.ReadFile(filepath.Join("..", "examples", "injectors", "log-shipper", v+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		testfs.Write(t, libDir, map[string]string{"log-shipper/" + v + ".yaml": string(data)})
	}
	recorded := func(rel *helmrelease.Release) string {
		recs, err := revisionRecords(rel)
		if err != nil || len(recs) != 1 {
			t.Fatalf("records of revision %d: %v %v", rel.Version, recs, err)
		}
		return recs[0].Version
	}
	for _, tt := range []struct {
		strategy inject.ReconcileStrategy
		want     string
	}{
		{inject.ReconcileNever, "1.0.0"},
		{inject.ReconcileWithChart, "1.0.0"},
		{inject.ReconcileAlways, "1.1.0"},
		{"", "1.1.0"}, // always, by default
	} {
		t.Run(string(tt.strategy), func(t *testing.T) {
			_ = os.RemoveAll(filepath.Join(libDir, "log-shipper", "1.1.0.yaml"))
			copyVersion("1.0.0")
			cfg := memoryConfig(t)
			cfg.RESTClientGetter = newFakeCluster()
			apply := func() *helmrelease.Release {
				t.Helper()
				lib, err := inject.LoadLibrary(libDir)
				if err != nil {
					t.Fatal(err)
				}
				ref, err := inject.ParseTemplateRef(lib, "log-shipper@^1", map[string]any{"destination": "logs:24224"})
				if err != nil {
					t.Fatal(err)
				}
				a := NewApply(cfg)
				a.Inputs = Inputs{Namespace: "shop", SkipLiveCheck: true, Reconcile: tt.strategy, Injectors: &inject.Declared{Specs: []inject.Spec{ref}}}
				res, err := a.Run(t.Context(), "web", src, nil)
				if err != nil {
					t.Fatal(err)
				}
				return res.Release
			}
			if v := recorded(apply()); v != "1.0.0" {
				t.Fatalf("installed with %s", v)
			}
			copyVersion("1.1.0")
			if v := recorded(apply()); v != tt.want {
				t.Errorf("after 1.1.0 appeared: %s, want %s", v, tt.want)
			}
		})
	}
}

// TestMergeLabels: as helm's upgrade merges --labels: given over stored,
// "null" removes, the others stay.
func TestMergeLabels(t *testing.T) {
	tests := []struct {
		current, desired, want map[string]string
	}{
		{nil, map[string]string{"team": "a"}, map[string]string{"team": "a"}},
		{map[string]string{"team": "a", "tier": "web"}, map[string]string{"team": "b"}, map[string]string{"team": "b", "tier": "web"}},
		{map[string]string{"team": "a", "tier": "web"}, map[string]string{"tier": "null"}, map[string]string{"team": "a"}},
		{nil, nil, map[string]string{}},
	}
	for _, tt := range tests {
		current := maps.Clone(tt.current)
		if got := mergeLabels(tt.current, tt.desired); !cmp.Equal(got, tt.want) {
			t.Errorf("mergeLabels(%v, %v) = %v, want %v", tt.current, tt.desired, got, tt.want)
		}
		if !cmp.Equal(current, tt.current) {
			t.Errorf("mergeLabels changed the stored labels to %v", tt.current)
		}
	}
}
