package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// revisions returns the revision numbers in a release's history.
func revisions(t *testing.T, rel, ns string) []int {
	t.Helper()
	var h []struct{ Revision int }
	if err := json.Unmarshal([]byte(mustHelm(t, "history", rel, "-n", ns, "-o", "json").stdout), &h); err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, r := range h {
		out = append(out, r.Revision)
	}
	return out
}

// TestBadInjectorsApplyNothing: every kind of injector failure is reported
// with the release and the injector named, exits non-zero, creates no
// release revision and leaves no temporary file behind.
func TestBadInjectorsApplyNothing(t *testing.T) {
	ns := namespace(t)
	mustHelmInject(t, "apply", "guarded", webappChart, "-n", ns, "--injector", "sidecar-injector f=FILE")
	before := mustHelm(t, "get", "manifest", "guarded", "-n", ns).stdout

	tests := []struct {
		name  string
		flags []string
		want  []string
	}{
		{"unknown command", []string{"--injector", "no-such-injector f=FILE"},
			[]string{`injector "no-such-injector f=FILE"`, `command "no-such-injector" not found in PATH`}},
		{"exit 1", []string{"--injector", "sidecar-injector f=FILE,fail=exit1"},
			[]string{`injector "sidecar-injector f=FILE,fail=exit1"`, "exited with status 1", "failing on purpose"}},
		{"hangs past the timeout", []string{"--injector", "sidecar-injector f=FILE,fail=hang", "--injector-timeout", "2s"},
			[]string{`injector "sidecar-injector f=FILE,fail=hang"`, "did not finish within 2s (--injector-timeout)"}},
		{"invalid YAML", []string{"--injector", "sidecar-injector f=FILE,fail=invalid-yaml"},
			[]string{`injector "sidecar-injector f=FILE,fail=invalid-yaml"`, "invalid YAML"}},
		{"drops a resource", []string{"--injector", "sidecar-injector f=FILE,fail=drop"},
			[]string{`injector "sidecar-injector f=FILE,fail=drop"`, "dropped or renamed v1 Secret guarded-credentials"}},
		{"renames a resource", []string{"--injector", "sidecar-injector f=FILE,fail=rename"},
			[]string{"dropped or renamed v1 Secret guarded-credentials; added v1 Secret renamed-by-injector"}},
		{"adds a resource", []string{"--injector", "sidecar-injector f=FILE,fail=add"},
			[]string{"added v1 ConfigMap added-by-injector"}},
		{"second injector fails after the first worked", []string{"--injector", "sidecar-injector f=FILE", "--inject", "sidecar-injector --fail=empty"},
			[]string{`injector "sidecar-injector --fail=empty"`, "dropped or renamed"}},
		{"malformed spec", []string{"--injector", "sidecar-injector f=FILE,,x"},
			[]string{`--injector: injector "sidecar-injector f=FILE,,x": empty element between commas`}},
		{"unbalanced quotes", []string{"--inject", "sidecar-injector 'FILE"},
			[]string{`--inject: injector "sidecar-injector 'FILE": unbalanced quotes`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp := t.TempDir()
			args := append([]string{"apply", "guarded", webappChart, "-n", ns}, tt.flags...)
			r := command{env: []string{"TMPDIR=" + tmp}}.run(t, filepath.Join(binDir, "helm-inject"), args...)
			if r.code == 0 {
				t.Fatalf("apply succeeded:\n%s", r)
			}
			if !strings.Contains(r.stderr, `release "guarded"`) {
				t.Errorf("error does not name the release:\n%s", r.stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("error lacks %q:\n%s", w, r.stderr)
				}
			}
			if revs := revisions(t, "guarded", ns); len(revs) != 1 {
				t.Errorf("release history is %v after a failed apply, want [1]", revs)
			}
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				t.Errorf("temporary files left behind: %s", left[0].Name())
			}
		})
	}
	if after := mustHelm(t, "get", "manifest", "guarded", "-n", ns).stdout; after != before {
		t.Errorf("the release manifest changed after failed applies")
	}
}
