package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
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

// TestHelmPluginUpdate: `helm plugin update inject` with the real helm CLI,
// after the plugin's git repository moved to a new version, ends with the
// binary of the version plugin.yaml names, built from the new commit.
// (helm pulls the clone and runs `git clean -xdff`, which removes bin/; the
// hook then builds the new version.) A hook that finds a binary of another
// version or commit in bin/ replaces it; one that finds the right binary
// keeps it.
func TestHelmPluginUpdate(t *testing.T) {
	src := repoCopy(t)
	git := func(args ...string) string {
		t.Helper()
		r := command{dir: src, env: []string{"GIT_AUTHOR_NAME=e2e", "GIT_AUTHOR_EMAIL=e2e@example.com",
			"GIT_COMMITTER_NAME=e2e", "GIT_COMMITTER_EMAIL=e2e@example.com"}}.mustRun(t, "git", args...)
		return strings.TrimSpace(r.stdout)
	}
	setVersion := func(v string) {
		t.Helper()
		p := filepath.Join(src, "plugin.yaml")
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		b = regexp.MustCompile(`(?m)^version: .*$`).ReplaceAll(b, []byte("version: "+v))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		git("add", "-A")
		git("commit", "-q", "--allow-empty", "-m", "plugin version "+v)
	}
	dataHome := t.TempDir()
	plugins := filepath.Join(dataHome, "plugins")
	c := command{env: []string{"HELM_DATA_HOME=" + dataHome, "HELM_PLUGINS=" + plugins, "HELM_CACHE_HOME=" + t.TempDir()}, timeout: 10 * time.Minute}
	// installed checks the plugin's binary: its version, and its commit
	// against the source repository's HEAD.
	installed := func(want, when string, out result) {
		t.Helper()
		var v struct{ Version, Commit string }
		if err := json.Unmarshal([]byte(c.mustRun(t, helmBin(t), "inject", "version", "-o", "json").stdout), &v); err != nil {
			t.Fatal(err)
		}
		if head := git("rev-parse", "HEAD"); v.Version != want || v.Commit != head {
			t.Fatalf("%s: helm inject is version %s at %s, want %s at %s:\n%s", when, v.Version, v.Commit, want, head, out)
		}
	}

	setVersion("0.1.0")
	// A file:// URL makes helm clone the repository, as from a git host.
	out := c.mustRun(t, helmBin(t), "plugin", "install", "file://"+src)
	installed("0.1.0", "after helm plugin install", out)
	setVersion("0.2.0")
	out = c.mustRun(t, helmBin(t), "plugin", "update", "inject")
	installed("0.2.0", "after the repository moved on and helm plugin update", out)

	// The hook itself, as helm runs it, over a bin/ that is current, then
	// over one that holds an older build.
	dirs, _ := filepath.Glob(filepath.Join(plugins, "*", "install-binary.sh"))
	if len(dirs) != 1 {
		t.Fatalf("install-binary.sh in the plugins folder: %v", dirs)
	}
	dir := filepath.Dir(dirs[0])
	hook := command{env: []string{"HELM_PLUGIN_DIR=" + dir}, timeout: 10 * time.Minute}
	if out := hook.mustRun(t, "sh", dirs[0]); !strings.Contains(out.stdout, "is version 0.2.0; keeping it") {
		t.Errorf("the hook with a current binary:\n%s", out)
	}
	old := filepath.Join(t.TempDir(), "old")
	command{dir: dir}.mustRun(t, "go", "build", "-ldflags", "-X github.com/helm-inject/helm-inject/internal/version.version=0.1.0", "-o", old, ".")
	b, err := os.ReadFile(old)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bin", "helm-inject"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	out = hook.mustRun(t, "sh", dirs[0])
	if !strings.Contains(out.stdout, "is version 0.1.0; plugin.yaml wants 0.2.0 (commit ") {
		t.Errorf("the hook did not say why it replaced the binary:\n%s", out)
	}
	installed("0.2.0", "after the hook found an older binary", out)
}
