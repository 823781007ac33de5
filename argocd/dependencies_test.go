package argocd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/loader"

	"github.com/helm-inject/helm-inject/internal/testfs"
)

// TestBuildDependencies: a dependency missing from charts/ is packaged
// from its file:// folder inside the repository; one vendored is left
// alone; one outside the repository, from a chart repository, of another
// name or of a version outside the constraint is refused, naming it.
func TestBuildDependencies(t *testing.T) {
	chart := func(deps string) map[string]string {
		return map[string]string{
			"apps/web/Chart.yaml":          "apiVersion: v2\nname: web\nversion: 0.1.0\ndependencies:\n" + deps,
			"apps/web/templates/x.yaml":    "",
			"libs/lib/Chart.yaml":          "apiVersion: v2\nname: lib\nversion: 1.2.0\n",
			"libs/lib/templates/cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: lib\n",
			"libs/other/Chart.yaml":        "apiVersion: v2\nname: other\nversion: 1.0.0\n",
			"vendored/Chart.yaml":          "apiVersion: v2\nname: vendored\nversion: 0.1.0\n",
			"apps/web/charts/v/Chart.yaml": "apiVersion: v2\nname: vendored\nversion: 0.1.0\n",
		}
	}
	tests := []struct {
		name    string
		deps    string
		want    []string // charts/ entries after the build
		wantErr string
	}{
		{name: "a local dependency", deps: "  - name: lib\n    version: ^1\n    repository: file://../../libs/lib\n", want: []string{"lib-1.2.0.tgz", "v"}},
		{name: "vendored", deps: "  - name: vendored\n    version: 0.1.0\n    repository: https://charts.example\n", want: []string{"v"}},
		{name: "from a chart repository", deps: "  - name: redis\n    version: 18.0.0\n    repository: https://charts.example\n", wantErr: "application web: the chart's dependency redis (https://charts.example) is not in its charts/ folder, and the plugin reaches no network"},
		{name: "outside the repository", deps: "  - name: lib\n    repository: file://../../../outside/lib\n", wantErr: `dependency lib "../../../outside/lib" is outside the repository`},
		{name: "another chart in the folder", deps: "  - name: lib\n    repository: file://../../libs/other\n", wantErr: "dependency lib: the folder holds the chart other"},
		{name: "a version outside the constraint", deps: "  - name: lib\n    version: ^2\n    repository: file://../../libs/lib\n", wantErr: "dependency lib: the folder holds version 1.2.0, which is not ^2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			top := t.TempDir()
			repo := filepath.Join(top, "repo")
			testfs.Write(t, repo, chart(tt.deps))
			testfs.Write(t, top, map[string]string{"outside/lib/Chart.yaml": "apiVersion: v2\nname: lib\nversion: 1.0.0\n"})
			app := filepath.Join(repo, "apps", "web")
			err := (&Request{Release: "web", SourcePath: "apps/web"}).BuildDependencies(app)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			entries, err := os.ReadDir(filepath.Join(app, "charts"))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range entries {
				got = append(got, e.Name())
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("charts/ holds %v, want %v", got, tt.want)
			}
			ch, err := loader.Load(app)
			if err != nil {
				t.Fatal(err)
			}
			if len(ch.Dependencies()) != len(tt.want) {
				t.Errorf("the chart loads %d dependencies, want %d", len(ch.Dependencies()), len(tt.want))
			}
		})
	}
}
