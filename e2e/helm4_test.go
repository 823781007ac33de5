package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/helm-inject/helm-inject/internal/testenv"
)

// TestHelm4Plugins: with the real Helm 4 CLI, the repository installs as
// the `inject` CLI plugin, and plugins/inject-postrenderer as a
// postrenderer/v1 plugin that `--post-renderer` takes by name.
func TestHelm4Plugins(t *testing.T) {
	helm4, err := testenv.Tool(cluster.ToolsBin, "helm4")
	if err != nil {
		t.Fatal(err)
	}
	ns := namespace(t)
	src := repoCopy(t)
	dataHome := t.TempDir()
	h := command{env: []string{"HELM_DATA_HOME=" + dataHome, "HELM_PLUGINS=" + filepath.Join(dataHome, "plugins")}}

	h.mustRun(t, helm4, "plugin", "install", src, "--verify=false")
	h.mustRun(t, helm4, "inject", "apply", "four", filepath.Join(repoRoot(t), apiChart), "-n", ns, "--injector", "sidecar-injector f=FILE")
	if w := workloads(t, mustHelm(t, "get", "manifest", "four", "-n", ns).stdout)["Deployment/four"]; !contains(w.containers, "sidecar") {
		t.Errorf("helm4 inject apply: containers %v", w.containers)
	}

	h.mustRun(t, helm4, "plugin", "install", filepath.Join(src, "plugins", "inject-postrenderer"), "--verify=false")
	if list := h.mustRun(t, helm4, "plugin", "list").stdout; !strings.Contains(list, "inject-postrenderer") || !strings.Contains(list, "postrenderer/v1") {
		t.Errorf("helm4 plugin list:\n%s", list)
	}
	h.mustRun(t, helm4, "upgrade", "--install", "four-pr", filepath.Join(repoRoot(t), apiChart), "-n", ns,
		"--post-renderer", "inject-postrenderer", "--post-renderer-args=--injector=sidecar-injector f=FILE")
	if w := workloads(t, mustHelm(t, "get", "manifest", "four-pr", "-n", ns).stdout)["Deployment/four-pr"]; !contains(w.containers, "sidecar") {
		t.Errorf("helm4 --post-renderer inject-postrenderer: containers %v", w.containers)
	}
}
