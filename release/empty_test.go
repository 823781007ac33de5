package release

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/helm-inject/helm-inject/chartify"
	"github.com/helm-inject/helm-inject/inject"
	"github.com/helm-inject/helm-inject/internal/testfs"
)

// switchedChart is a chart whose one object renders only with on=true,
// and whose hook renders always.
func switchedChart(t *testing.T) Source {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "switched")
	testfs.Write(t, dir, map[string]string{
		"Chart.yaml":          "apiVersion: v2\nname: switched\nversion: 0.1.0\n",
		"values.yaml":         "on: false\n",
		"templates/cm.yaml":   "{{- if .Values.on }}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: switched\n{{- end }}\n",
		"templates/hook.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hooked\n  annotations:\n    helm.sh/hook: pre-upgrade\n",
	})
	ch, _, err := chartify.Load(dir, chartify.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return Source{Ref: "./switched", Chart: ch}
}

// TestApplyEmptyRender: a chart that renders no object installs as an
// empty release, as helm installs it; an upgrade to no object while the
// deployed revision has one is refused by apply and diff, naming the
// release, what it would delete and --allow-empty, and writes nothing;
// with --allow-empty it goes ahead.
func TestApplyEmptyRender(t *testing.T) {
	cfg, _ := apiRelease(t)
	src := switchedChart(t)
	inputs := Inputs{Namespace: "shop", SkipLiveCheck: true, Injectors: &inject.Declared{}}
	apply := func(on bool, allowEmpty bool) (*Result, error) {
		a := NewApply(cfg)
		a.Inputs = inputs
		a.Inputs.AllowEmpty = allowEmpty
		return a.Run(t.Context(), "web", src, map[string]any{"on": on})
	}

	if _, err := apply(false, false); err != nil {
		t.Fatalf("installing a chart that renders no object: %v", err)
	}
	if rel := lastRevision(t, cfg, "web"); rel.Version != 1 || strings.Contains(rel.Manifest, "kind:") {
		t.Fatalf("revision %d stores %q, want revision 1 with no object", rel.Version, rel.Manifest)
	}
	if _, err := apply(true, false); err != nil {
		t.Fatal(err)
	}

	want := `release "web": ./switched rendered no object, so this upgrade would delete all 1 objects of revision 2; check the chart's conditions and your values, or pass --allow-empty to delete them`
	if _, err := apply(false, false); err == nil || err.Error() != want {
		t.Errorf("apply of an upgrade to no object: %v\nwant %s", err, want)
	}
	d := NewDiff(cfg)
	d.Inputs = inputs
	if _, err := d.Run(t.Context(), "web", src, map[string]any{"on": false}); err == nil || err.Error() != want {
		t.Errorf("diff of an upgrade to no object: %v\nwant %s", err, want)
	}
	if rel := lastRevision(t, cfg, "web"); rel.Version != 2 || !strings.Contains(rel.Manifest, "name: switched") {
		t.Errorf("after the refusal the release is at revision %d with %q, want revision 2 as it was", rel.Version, rel.Manifest)
	}

	if _, err := apply(false, true); err != nil {
		t.Fatalf("--allow-empty: %v", err)
	}
	if rel := lastRevision(t, cfg, "web"); rel.Version != 3 || strings.Contains(rel.Manifest, "name: switched") {
		t.Errorf("--allow-empty left revision %d with %q, want revision 3 with no object", rel.Version, rel.Manifest)
	}
}
