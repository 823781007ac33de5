package chartify

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"

	"github.com/helm-inject/helm-inject/internal/testfs"
)

// TestLoadChartRefusesWhatHelm4CannotInstall: an apiVersion v3 chart (helm
// 4.3.2 refuses it for install) and a library chart are refused with the
// chart named; v1 and v2 charts load.
func TestLoadChartRefusesWhatHelm4CannotInstall(t *testing.T) {
	for _, tt := range []struct {
		chartYAML string
		wantErr   string
	}{
		{"apiVersion: v2\nname: web\nversion: 0.1.0\n", ""},
		{"apiVersion: v1\nname: web\nversion: 0.1.0\n", ""},
		{"apiVersion: v3\nname: web\nversion: 0.1.0\n", `has apiVersion "v3": helm-inject installs apiVersion v1 and v2 charts only`},
		{"apiVersion: v2\nname: web\nversion: 0.1.0\ntype: library\n", "is a library chart and cannot be installed"},
	} {
		dir := filepath.Join(t.TempDir(), "web")
		if err := os.MkdirAll(filepath.Join(dir, "templates"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "Chart.yaml"), []byte(tt.chartYAML), 0o644); err != nil {
			t.Fatal(err)
		}
		ch, err := loadChart(dir)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%q: %v", tt.chartYAML, err)
		case tt.wantErr == "" && ch.Name() != "web":
			t.Errorf("%q: loaded %q", tt.chartYAML, ch.Name())
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), dir)):
			t.Errorf("%q: error %v, want one naming %s and saying %q", tt.chartYAML, err, dir, tt.wantErr)
		}
	}
}

// TestLoadManifestsFolder: a folder of manifests becomes templates named
// after the files (a .json file gets .yaml added; .yml and .yaml stay),
// and hidden folders in it are skipped.
func TestLoadManifestsFolder(t *testing.T) {
	dir := t.TempDir()
	cm := func(name string) string { return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n" }
	testfs.Write(t, dir, map[string]string{
		"a.yaml":           cm("a"),
		"b.yml":            cm("b"),
		"c.json":           `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}`,
		"sub/d.yaml":       cm("d"),
		".git/e.yaml":      cm("e"),
		"sub/.cache/f.yml": cm("f"),
	})
	ch, kind, err := Load(dir, LoadOptions{})
	if err != nil || kind != SourceManifests {
		t.Fatalf("Load: %v %v", kind, err)
	}
	var names []string
	for _, tpl := range ch.Templates {
		names = append(names, tpl.Name)
	}
	if diff := cmp.Diff([]string{"templates/a.yaml", "templates/b.yml", "templates/c.json.yaml", "templates/sub/d.yaml"}, names); diff != "" {
		t.Errorf("templates (-want +got):\n%s", diff)
	}
}

// TestLoadMissingDependencies: a chart whose Chart.yaml lists a dependency
// that charts/ lacks is refused with what to run, unless the caller
// updates dependencies (--dependency-update), which then loads it.
func TestLoadMissingDependencies(t *testing.T) {
	dir := t.TempDir()
	testfs.Write(t, dir, map[string]string{
		"app/Chart.yaml":         "apiVersion: v2\nname: app\nversion: 0.1.0\ndependencies:\n  - name: lib\n    version: 0.1.0\n    repository: file://../lib\n",
		"app/templates/cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n",
		"lib/Chart.yaml":         "apiVersion: v2\nname: lib\nversion: 0.1.0\n",
		"lib/templates/lib.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: lib\n",
	})
	app := filepath.Join(dir, "app")
	if _, _, err := Load(app, LoadOptions{}); err == nil || !strings.Contains(err.Error(), "run `helm dependency build "+app+"`, or pass --dependency-update") {
		t.Errorf("missing dependency: %v", err)
	}
	var updated []string
	ch, _, err := Load(app, LoadOptions{UpdateDependencies: func(d string) error {
		updated = append(updated, d)
		lib, err := loader.Load(filepath.Join(dir, "lib"))
		if err != nil {
			return err
		}
		_, err = chartutil.Save(lib, filepath.Join(d, "charts"))
		return err
	}})
	if err != nil || len(updated) != 1 || len(ch.Dependencies()) != 1 {
		t.Errorf("with --dependency-update: %v, updated %v", err, updated)
	}
}
