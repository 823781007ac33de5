package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestDemo runs the newcomer's first command (make demo runs go run
// ./hack/demo): the offline result, the injected manifests and a
// before/after summary, comes first, before any tool is built or the
// control plane started; then the real install, seen by the helm 4 CLI
// (as a new user has it).
func TestDemo(t *testing.T) {
	r := command{timeout: 10 * time.Minute}.mustRun(t, "go", "run", "./hack/demo")
	out := r.stdout
	offline := strings.Index(out, "==> injecting fixtures/charts/webapp offline")
	summary := strings.Index(out, "==> before and after: the containers of every workload")
	tools := strings.Index(out, "==> building the control plane and the helm 4 CLI")
	install := strings.Index(out, "==> injecting and installing the webapp chart")
	if offline < 0 || summary < offline || tools < summary || install < tools {
		t.Fatalf("the demo's steps are missing or out of order (offline %d, summary %d, tools %d, install %d):\n%s", offline, summary, tools, install, out)
	}
	if !strings.Contains(out[offline:summary], "name: sidecar") {
		t.Errorf("the offline manifests hold no injected sidecar:\n%s", out[offline:summary])
	}
	var row string
	for _, l := range strings.Split(out[summary:tools], "\n") {
		if strings.Contains(l, "Deployment/demo-web ") {
			row = l
		}
	}
	if f := strings.Fields(row); len(f) < 3 || strings.Contains(f[1], "sidecar") || f[len(f)-1] != "sidecar" {
		t.Errorf("summary row of the Deployment is %q, want no sidecar before and one after:\n%s", row, out[summary:tools])
	}
	if !strings.Contains(out[install:], "demo-web") || !strings.Contains(out[install:], "deployed") {
		t.Errorf("the helm 4 CLI did not show the release:\n%s", out[install:])
	}
}
