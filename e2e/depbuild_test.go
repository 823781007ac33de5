package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/helm-inject/helm-inject/internal/testenv"
)

// TestShimDependencyBuildAsHelm: helmfile runs `helm dependency build` for
// every local chart; the shim answers a chart without dependencies itself.
// Against the real helm 3 and helm 4, for charts it answers and charts it
// hands on: the same exit code, output and files left in the chart.
func TestShimDependencyBuildAsHelm(t *testing.T) {
	helm4, err := testenv.Tool(cluster.ToolsBin, "helm4")
	if err != nil {
		t.Fatal(err)
	}
	charts := map[string]string{
		"no dependencies":       "",
		"empty dependency list": "dependencies: []\n",
	}
	for _, real := range []string{helmBin(t), helm4} {
		for name, tail := range charts {
			t.Run(filepath.Base(real)+"/"+name, func(t *testing.T) {
				write := func() string {
					dir := filepath.Join(t.TempDir(), "app")
					if err := os.MkdirAll(filepath.Join(dir, "templates"), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(filepath.Join(dir, "Chart.yaml"), []byte("apiVersion: v2\nname: app\nversion: 0.1.0\n"+tail), 0o644); err != nil {
						t.Fatal(err)
					}
					return dir
				}
				direct, shimmed := write(), write()
				want := command{}.run(t, real, "dependency", "build", direct, "--skip-refresh")
				shim := command{env: []string{"HELM_INJECT_AS_HELM=1", "HELM_INJECT_HELM=" + real}}
				got := shim.run(t, filepath.Join(binDir, "helm-inject"), "dependency", "build", shimmed, "--skip-refresh")
				if got != want {
					t.Errorf("through the shim:\n%s\nthe real helm:\n%s", got, want)
				}
				if g, w := entries(t, shimmed), entries(t, direct); !slices.Equal(g, w) {
					t.Errorf("the chart holds %v through the shim, %v after the real helm", g, w)
				}
			})
		}
	}
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}
