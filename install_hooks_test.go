package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeBinary writes an executable that answers `version -o json` as a
// helm-inject of version v would.
func fakeBinary(t *testing.T, path, v string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\nprintf '{\\n  \"version\": \"" + v + "\",\n  \"goVersion\": \"go\"\n}\\n'\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// runHook runs an install hook as Helm does, on a machine without Go and
// with no release to download (a plain-http URL the hook refuses).
func runHook(t *testing.T, hook, pluginDir string) (string, error) {
	t.Helper()
	cmd := exec.Command("sh", hook)
	cmd.Env = []string{"HELM_PLUGIN_DIR=" + pluginDir, "PATH=/usr/bin:/bin", "HELM_INJECT_RELEASE_URL=http://127.0.0.1:1", "HOME=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestInstallHooksCheckTheVersion: the plugin's install hook, and the Helm
// 4 post-renderer plugin's, install a binary they find only when it is the
// version plugin.yaml names; a leftover build of another version in a
// source checkout is not installed. A release archive's own binary is.
func TestInstallHooksCheckTheVersion(t *testing.T) {
	pluginYAML, err := os.ReadFile("plugin.yaml")
	if err != nil {
		t.Fatal(err)
	}
	version := ""
	for _, l := range strings.Split(string(pluginYAML), "\n") {
		if v, ok := strings.CutPrefix(l, "version: "); ok {
			version = strings.TrimSpace(v)
		}
	}
	checkout := func(t *testing.T, stray string) string {
		dir := t.TempDir()
		copyFile(t, "plugin.yaml", filepath.Join(dir, "plugin.yaml"))
		copyFile(t, "install-binary.sh", filepath.Join(dir, "install-binary.sh"))
		copyFile(t, "go.mod", filepath.Join(dir, "go.mod"))
		copyFile(t, "plugins/inject-postrenderer/install.sh", filepath.Join(dir, "plugins", "inject-postrenderer", "install.sh"))
		fakeBinary(t, filepath.Join(dir, "helm-inject"), stray)
		return dir
	}
	installed := func(path string) bool { _, err := os.Stat(path); return err == nil }

	t.Run("a leftover build of another version", func(t *testing.T) {
		dir := checkout(t, "0.0.1-old")
		out, err := runHook(t, filepath.Join(dir, "install-binary.sh"), dir)
		if err == nil || installed(filepath.Join(dir, "bin", "helm-inject")) {
			t.Errorf("the hook installed a binary of version 0.0.1-old:\n%s", out)
		}
		if !strings.Contains(out, dir+"/helm-inject is version 0.0.1-old; plugin.yaml wants "+version+": not using it") {
			t.Errorf("the hook does not say why it skipped the binary:\n%s", out)
		}
		pr := filepath.Join(dir, "plugins", "inject-postrenderer")
		out, err = runHook(t, filepath.Join(pr, "install.sh"), pr)
		if err == nil || installed(filepath.Join(pr, "bin", "helm-inject")) || !strings.Contains(out, "is version 0.0.1-old; plugin.yaml wants "+version+": not using it") {
			t.Errorf("the post-renderer hook used a binary of version 0.0.1-old:\n%s", out)
		}
	})
	t.Run("a build of the wanted version", func(t *testing.T) {
		dir := checkout(t, version)
		if out, err := runHook(t, filepath.Join(dir, "install-binary.sh"), dir); err != nil || !installed(filepath.Join(dir, "bin", "helm-inject")) {
			t.Errorf("the hook did not install the binary of version %s: %v\n%s", version, err, out)
		}
		pr := filepath.Join(dir, "plugins", "inject-postrenderer")
		if out, err := runHook(t, filepath.Join(pr, "install.sh"), pr); err != nil || !installed(filepath.Join(pr, "bin", "helm-inject")) {
			t.Errorf("the post-renderer hook did not install the binary of version %s: %v\n%s", version, err, out)
		}
	})
	t.Run("a release archive", func(t *testing.T) {
		dir := checkout(t, "9.9.9-snapshot+abc")
		if err := os.Remove(filepath.Join(dir, "go.mod")); err != nil {
			t.Fatal(err)
		}
		if out, err := runHook(t, filepath.Join(dir, "install-binary.sh"), dir); err != nil || !installed(filepath.Join(dir, "bin", "helm-inject")) {
			t.Errorf("the hook did not install the archive's binary: %v\n%s", err, out)
		}
	})
}
