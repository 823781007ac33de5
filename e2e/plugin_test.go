package e2e

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestHelmPlugin installs the repository as a Helm 3 plugin with the real
// helm CLI (its install hook builds the binary offline), runs `helm inject
// apply`, and uninstalls the plugin.
func TestHelmPlugin(t *testing.T) {
	ns := namespace(t)
	// A copy of the repository, so the hook's bin/ does not touch ours.
	src := repoCopy(t)
	dataHome := t.TempDir()
	env := []string{"HELM_DATA_HOME=" + dataHome, "HELM_PLUGINS=" + filepath.Join(dataHome, "plugins")}
	c := command{env: env}
	out := c.mustRun(t, helmBin(t), "plugin", "install", src)
	if !strings.Contains(out.stdout, `Installed plugin: inject`) {
		t.Errorf("helm plugin install:\n%s", out)
	}
	if list := c.mustRun(t, helmBin(t), "plugin", "list").stdout; !strings.Contains(list, "inject") {
		t.Errorf("helm plugin list:\n%s", list)
	}
	// Helm passes the namespace as $HELM_NAMESPACE.
	c.mustRun(t, helmBin(t), "inject", "apply", "viaplugin", filepath.Join(repoRoot(t), apiChart), "-n", ns,
		"--injector", "sidecar-injector f=FILE")
	w := workloads(t, mustHelm(t, "get", "manifest", "viaplugin", "-n", ns).stdout)["Deployment/viaplugin"]
	if !contains(w.containers, "sidecar") {
		t.Errorf("helm inject apply: containers %v", w.containers)
	}
	if v := c.mustRun(t, helmBin(t), "inject", "version", "--short").stdout; strings.TrimSpace(v) == "" {
		t.Errorf("helm inject version printed nothing")
	}
	c.mustRun(t, helmBin(t), "plugin", "uninstall", "inject")
	if list := c.mustRun(t, helmBin(t), "plugin", "list").stdout; strings.Contains(list, "inject") {
		t.Errorf("the plugin is still listed after uninstall:\n%s", list)
	}
}

// TestHelmPostRenderer: plain `helm upgrade --install --post-renderer
// helm-inject --post-renderer-args post-render ...` injects the main
// manifests (Helm 3 does not post-render hooks).
func TestHelmPostRenderer(t *testing.T) {
	ns := namespace(t)
	mustHelm(t, "upgrade", "--install", "postrendered", apiChart, "-n", ns,
		"--post-renderer", filepath.Join(binDir, "helm-inject"),
		"--post-renderer-args", "post-render",
		"--post-renderer-args=--injector=sidecar-injector f=FILE")
	got := workloads(t, mustHelm(t, "get", "manifest", "postrendered", "-n", ns).stdout)["Deployment/postrendered"]
	if !contains(got.containers, "sidecar") {
		t.Errorf("post-rendered Deployment has containers %v", got.containers)
	}
	hooks := workloads(t, mustHelm(t, "get", "hooks", "postrendered", "-n", ns).stdout)["Pod/postrendered-smoke"]
	if contains(hooks.containers, "sidecar") {
		t.Errorf("Helm 3 post-rendered a hook; the docs say it does not")
	}
}
