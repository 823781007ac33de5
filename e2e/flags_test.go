package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestApplyHelmFlags checks Helm's own flags on apply: --dry-run writes
// nothing, --description and --history-max reach the release history.
func TestApplyHelmFlags(t *testing.T) {
	ns := namespace(t)
	inj := []string{"-n", ns, "--injector", "sidecar-injector f=FILE"}

	out := mustHelmInject(t, append([]string{"apply", "flags", apiChart, "--dry-run"}, inj...)...).stdout
	if !strings.Contains(out, `Release "flags" would be installed (dry run)`) || !strings.Contains(out, "name: sidecar") {
		t.Errorf("--dry-run output:\n%s", out)
	}
	if r := helm(t, "history", "flags", "-n", ns); r.code == 0 {
		t.Fatalf("--dry-run created a release:\n%s", r.stdout)
	}

	for _, level := range []string{"a", "b", "c"} {
		mustHelmInject(t, append([]string{"apply", "flags", apiChart, "--set", "logLevel=" + level,
			"--history-max", "2", "--description", "change " + level}, inj...)...)
	}
	var h []struct {
		Revision    int
		Description string
	}
	if err := json.Unmarshal([]byte(mustHelm(t, "history", "flags", "-n", ns, "-o", "json").stdout), &h); err != nil {
		t.Fatal(err)
	}
	if len(h) != 2 || h[0].Revision != 2 || h[1].Revision != 3 || h[1].Description != "change c" {
		t.Errorf("history with --history-max 2 = %+v, want revisions 2 and 3, the last described \"change c\"", h)
	}

	// upgrade without --install refuses a missing release, as helm does.
	r := helmInject(t, append([]string{"upgrade", "nothing-here", apiChart}, inj...)...)
	if r.code == 0 || !strings.Contains(r.stderr, `release "nothing-here" has no deployed revision`) {
		t.Errorf("upgrade of a missing release: %s", r)
	}
	mustHelmInject(t, append([]string{"upgrade", "--install", "nothing-here", apiChart}, inj...)...)
}

// TestTemplateOutputDir writes one file per template, as helm template does,
// a subchart's under charts/NAME/templates/.
func TestTemplateOutputDir(t *testing.T) {
	dir := t.TempDir()
	mustHelmInject(t, "template", "out", webappChart, "--output-dir", dir, "--injector", "sidecar-injector f=FILE")
	b, err := os.ReadFile(filepath.Join(dir, "webapp", "templates", "statefulset.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(b), "# Source: webapp/templates/statefulset.yaml") != 2 || !strings.Contains(string(b), "name: sidecar") {
		t.Errorf("statefulset.yaml:\n%s", b)
	}
	// Under helm's path for a subchart's template.
	if _, err := os.Stat(filepath.Join(dir, "webapp", "charts", "cache", "templates", "deployment.yaml")); err != nil {
		t.Errorf("the subchart's deployment was not written: %v", err)
	}
}
