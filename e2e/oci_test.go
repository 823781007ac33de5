package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/helm-inject/helm-inject/internal/testenv"
)

// ociRegistry runs a real OCI registry for the test (testenv.OCIRegistry).
func ociRegistry(t *testing.T) string { return testenv.OCIRegistry(t) }

// TestOCIChart pushes the webapp chart to a real OCI registry with the helm
// CLI and applies it from there by oci:// reference.
func TestOCIChart(t *testing.T) {
	addr := ociRegistry(t)
	dir := t.TempDir()
	mustHelm(t, "package", webappChart, "-d", dir)
	mustHelm(t, "push", filepath.Join(dir, "webapp-1.4.2.tgz"), "oci://"+addr+"/charts", "--plain-http")

	ns := namespace(t)
	ref := fmt.Sprintf("oci://%s/charts/webapp", addr)
	mustHelmInject(t, "apply", "from-oci", ref, "--version", "1.4.2", "--plain-http", "-n", ns, "--injector", "sidecar-injector f=FILE")
	if list := mustHelm(t, "list", "-n", ns).stdout; !strings.Contains(list, "webapp-1.4.2") {
		t.Errorf("helm list:\n%s", list)
	}
	got := workloads(t, mustHelm(t, "get", "manifest", "from-oci", "-n", ns).stdout)
	if !contains(got["Deployment/from-oci-web"].containers, "sidecar") {
		t.Errorf("Deployment/from-oci-web has containers %v", got["Deployment/from-oci-web"].containers)
	}
}
