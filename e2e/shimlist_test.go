package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/helm-inject/helm-inject/internal/testenv"
	"github.com/helm-inject/helm-inject/internal/testfs"
)

// TestShimListAsHelm: helmfile lists each release after its upgrade
// (`helm list --filter ^NAME$ ...`). Inside a `helm-inject helmfile` run
// whose real helm said it is Helm 3, the shim answers that form itself;
// any other form, a real helm 4, and any error go to the real helm. Either
// way the caller sees exactly what the real helm prints. A script in front
// of the real helm counts which calls reached it.
func TestShimListAsHelm(t *testing.T) {
	ns := namespace(t)
	chart := filepath.Join(t.TempDir(), "cm")
	testfs.Write(t, chart, map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: cm\nversion: 0.3.0\nappVersion: \"2.1\"\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Values.name | default .Release.Name }}\n",
	})
	// web: two revisions, deployed. bad: its upgrade was refused by the
	// API server (an invalid name), so its newest revision failed. a.b: a
	// name the filter's regular expression reads more widely.
	mustHelm(t, "install", "web", chart, "-n", ns)
	mustHelm(t, "upgrade", "web", chart, "-n", ns, "--set", "name=web-2")
	mustHelm(t, "install", "bad", chart, "-n", ns)
	if r := helm(t, "upgrade", "bad", chart, "-n", ns, "--set", "name=Not_Valid"); r.code == 0 {
		t.Fatalf("the invalid upgrade succeeded:\n%s", r)
	}
	mustHelm(t, "install", "a.b", chart, "-n", ns)

	helm4, err := testenv.Tool(cluster.ToolsBin, "helm4")
	if err != nil {
		t.Fatal(err)
	}
	states := []string{"--uninstalling", "--deployed", "--failed", "--pending"}
	calls := []struct {
		name     string
		args     []string
		answered bool // by the shim itself, when the real helm is Helm 3
	}{
		{"deployed", append([]string{"list", "--filter", "^web$", "--namespace", ns}, states...), true},
		{"failed", append([]string{"list", "--filter", "^bad$", "--namespace", ns}, states...), true},
		{"state not asked for", []string{"list", "--filter", "^web$", "-n", ns, "--failed"}, true},
		{"no such release", append([]string{"list", "--filter", "^nope$", "--namespace", ns}, states...), true},
		{"a dot in the name", append([]string{"list", "--filter", "^a.b$", "--namespace", ns}, states...), true},
		{"a wider filter", []string{"list", "--filter", "^(web|bad)$", "-n", ns}, true},
		{"another flag", []string{"list", "--filter", "^web$", "-n", ns, "-o", "json"}, false},
		{"an unknown context", []string{"list", "--filter", "^web$", "-n", ns, "--kube-context", "nowhere"}, false},
	}
	for _, real := range []string{helmBin(t), helm4} {
		v3 := filepath.Base(real) == "helm"
		t.Run(filepath.Base(real), func(t *testing.T) {
			front, count := countingHelm(t, real)
			shim := command{env: []string{"HELM_INJECT_AS_HELM=1", "HELM_INJECT_HELM=" + front, "HELM_INJECT_PLAN_CACHE=" + t.TempDir()}}
			// helmfile asks for the version first, in every run.
			if got, want := shim.run(t, filepath.Join(binDir, "helm-inject"), "version", "--short"), (command{}).run(t, real, "version", "--short"); got != want {
				t.Fatalf("version through the shim:\n%s\nthe real helm:\n%s", got, want)
			}
			for _, c := range calls {
				if err := os.WriteFile(count, nil, 0o644); err != nil {
					t.Fatal(err)
				}
				want := command{}.run(t, real, c.args...)
				got := shim.run(t, filepath.Join(binDir, "helm-inject"), c.args...)
				if got != want {
					t.Errorf("%s: through the shim:\n%s\nthe real helm:\n%s", c.name, got, want)
				}
				data, err := os.ReadFile(count)
				if err != nil {
					t.Fatal(err)
				}
				if reached, answered := strings.TrimSpace(string(data)) != "", c.answered && v3; reached == answered {
					t.Errorf("%s: the real helm was called: %v; the shim should have answered it itself: %v", c.name, reached, answered)
				}
			}
		})
	}
	// Outside a helm-inject helmfile run (no run folder), the real helm
	// answers.
	front, count := countingHelm(t, helmBin(t))
	shim := command{env: []string{"HELM_INJECT_AS_HELM=1", "HELM_INJECT_HELM=" + front}}
	shim.mustRun(t, filepath.Join(binDir, "helm-inject"), "version", "--short")
	shim.mustRun(t, filepath.Join(binDir, "helm-inject"), calls[0].args...)
	if data, _ := os.ReadFile(count); strings.Count(string(data), "list") != 1 {
		t.Errorf("outside a helm-inject helmfile run the list did not reach the real helm; it saw: %q", data)
	}
}

// countingHelm writes a script that notes each call's first argument in
// count and runs real with the call's arguments.
func countingHelm(t *testing.T, real string) (front, count string) {
	t.Helper()
	count = filepath.Join(t.TempDir(), "calls")
	front = filepath.Join(t.TempDir(), "helm")
	script := fmt.Sprintf("#!/bin/sh\necho \"$1\" >> %q\nexec %q \"$@\"\n", count, real)
	if err := os.WriteFile(front, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return front, count
}
