package helmfile

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// writeChart writes a chart directory with the given Chart.yaml tail and
// extra files, and returns its path.
func writeChart(t *testing.T, chartYAMLTail string, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "app")
	if err := os.MkdirAll(filepath.Join(dir, "templates"), 0o755); err != nil {
		t.Fatal(err)
	}
	files["Chart.yaml"] = "apiVersion: v2\nname: app\nversion: 0.1.0\n" + chartYAMLTail
	files["templates/cm.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n"
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestShimAnswersDependencyBuildWithNothingToBuild(t *testing.T) {
	// The real helm the shim would hand calls to does not exist: a call
	// the shim answers itself succeeds, one it hands on fails.
	t.Setenv(EnvRealHelm, filepath.Join(t.TempDir(), "no-helm"))
	noDeps := writeChart(t, "", map[string]string{})
	deps := writeChart(t, "dependencies:\n- name: sub\n  version: 0.1.0\n  repository: file://../sub\n", map[string]string{})
	emptyDeps := writeChart(t, "dependencies: []\n", map[string]string{})
	locked := writeChart(t, "", map[string]string{"Chart.lock": "dependencies: []\ndigest: sha256:0\ngenerated: \"2026-01-01T00:00:00Z\"\n"})
	v1 := filepath.Join(t.TempDir(), "v1")
	if err := os.MkdirAll(v1, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(v1, "Chart.yaml"), []byte("apiVersion: v1\nname: v1\nversion: 0.1.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(v1, "requirements.yaml"), []byte("dependencies:\n- name: sub\n  version: 0.1.0\n  repository: file://../sub\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tgz := filepath.Join(t.TempDir(), "app-0.1.0.tgz")
	if err := os.WriteFile(tgz, []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		answered bool
	}{
		{"no dependencies", []string{"dependency", "build", noDeps}, true},
		{"helmfile's flags", []string{"dependency", "build", noDeps, "--skip-refresh", "--verify", "--keyring", "k.gpg", "--debug"}, true},
		{"global flag before the verb", []string{"--kube-context", "ctx", "dependency", "build", noDeps}, true},
		{"flag with its value after =", []string{"dependency", "build", "--keyring=k.gpg", noDeps}, true},
		{"alias", []string{"dep", "build", noDeps}, true},
		{"plural alias", []string{"dependencies", "build", noDeps}, true},
		{"declared dependencies", []string{"dependency", "build", deps}, false},
		{"empty dependency list (helm writes a lock)", []string{"dependency", "build", emptyDeps}, false},
		{"lock file", []string{"dependency", "build", locked}, false},
		{"apiVersion v1 requirements.yaml", []string{"dependency", "build", v1}, false},
		{"packaged chart", []string{"dependency", "build", tgz}, false},
		{"missing chart", []string{"dependency", "build", filepath.Join(t.TempDir(), "gone")}, false},
		{"no chart argument (helm builds .)", []string{"dependency", "build"}, false},
		{"update, not build", []string{"dependency", "update", noDeps}, false},
		{"a flag that can fail on its own", []string{"dependency", "build", noDeps, "--cert-file", "c.pem"}, false},
		{"another verb", []string{"list"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			run := func(context.Context, []string, io.Reader, io.Writer, io.Writer) int {
				t.Fatal("the shim ran helm-inject's own command line for a dependency build")
				return 1
			}
			code := Shim(context.Background(), tt.args, nil, &stdout, &stderr, run)
			if tt.answered && (code != 0 || stdout.Len()+stderr.Len() > 0) {
				t.Fatalf("exit %d, output %q %q; want the call answered with nothing, as helm would", code, stdout.String(), stderr.String())
			}
			if !tt.answered && code == 0 {
				t.Fatalf("exit 0: the shim answered a call the real helm must run")
			}
		})
	}
}
