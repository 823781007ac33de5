package helmfile

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPackageArgs: a template call of a `helmfile package` run becomes
// package, without template's print and cluster flags (in both spellings
// of a value), with the injector flags and then the run's package flags;
// global flags before the verb stay there.
func TestPackageArgs(t *testing.T) {
	pr := []string{"--post-renderer", "helm-inject", "--post-renderer-args=--injector", "--post-renderer-args=x f=FILE"}
	for _, tt := range []struct {
		name string
		args []string
		want []string
	}{
		{"injected", slices.Concat([]string{"template", "web", "c", "--namespace", "shop", "--values", "v.yaml"}, pr),
			[]string{"package", "web", "c", "--namespace", "shop", "--values", "v.yaml", "--injector", "x f=FILE", "-d", "out"}},
		{"not injected", []string{"template", "web", "c", "--version", "1.0.0"},
			[]string{"package", "web", "c", "--version", "1.0.0", "-d", "out"}},
		{"template's own flags", []string{"template", "web", "c", "--include-crds", "--skip-tests", "--no-hooks", "--validate",
			"--output-dir", "o", "--show-only", "templates/a.yaml", "-s", "templates/b.yaml", "--output-dir=o2", "--show-only=x", "--is-upgrade",
			"--release-name", "--hide-secret", "--dry-run=server", "--kube-version", "1.31.0"},
			[]string{"package", "web", "c", "--kube-version", "1.31.0", "-d", "out"}},
		{"globals first", []string{"--kube-context", "prod", "template", "web", "c"},
			[]string{"--kube-context", "prod", "package", "web", "c", "-d", "out"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := PackageArgs(ParseCall(tt.args), []string{"-d", "out"})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if _, err := PackageArgs(ParseCall([]string{"upgrade", "web", "c"}), nil); err == nil {
		t.Error("an upgrade became a package")
	}
}

// TestShimPackages: with the run's package flags in the environment, the
// shim packages every template call (injected or not) and leaves other
// calls as they are; a malformed value is an error, not a template.
func TestShimPackages(t *testing.T) {
	t.Setenv(EnvRealHelm, fakeRealHelm(t))
	t.Setenv(envPassThroughDepth, "")
	var ran []string
	run := func(_ context.Context, args []string, _ io.Reader, _, _ io.Writer) int {
		ran = args
		return 0
	}
	t.Setenv(EnvPackage, EncodePackageFlags([]string{"-d", "out", "--push", "oci://r/x"}))
	var stdout, stderr bytes.Buffer
	if code := Shim(t.Context(), []string{"template", "web", "c"}, strings.NewReader(""), &stdout, &stderr, run); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if diff := cmp.Diff([]string{"package", "web", "c", "-d", "out", "--push", "oci://r/x"}, ran); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	ran = nil
	Shim(t.Context(), []string{"upgrade", "web", "c"}, strings.NewReader(""), &stdout, &stderr, run)
	if ran != nil {
		t.Errorf("a plain upgrade ran %v in-process", ran)
	}
	t.Setenv(EnvPackage, "-d out")
	stderr.Reset()
	if code := Shim(t.Context(), []string{"template", "web", "c"}, strings.NewReader(""), &stdout, &stderr, run); code != 1 || !strings.Contains(stderr.String(), EnvPackage) {
		t.Errorf("a malformed %s: exit %d, %s", EnvPackage, code, stderr.String())
	}
}

// TestWrapperDropsInheritedPackage: only a `helmfile package` run tells
// the shim to package; the variable left in the caller's environment does
// not turn a template run into one.
func TestWrapperDropsInheritedPackage(t *testing.T) {
	dir := t.TempDir()
	hf := filepath.Join(dir, "helmfile")
	if err := os.WriteFile(hf, []byte("#!/bin/sh\necho \"package=${"+EnvPackage+"-unset}\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir) // no state file here
	t.Setenv("HELMFILE_HELM_BINARY", fakeRealHelm(t))
	t.Setenv(EnvPackage, `["-d","leftover"]`)
	for _, tt := range []struct {
		pkg  []string
		want string
	}{
		{nil, "package=unset\n"},
		{[]string{"-d", "charts"}, `package=["-d","charts"]` + "\n"},
	} {
		var stdout, stderr bytes.Buffer
		w := &Wrapper{Helmfile: hf, Self: "/nonexistent/helm-inject", Stdout: &stdout, Stderr: &stderr, Stdin: strings.NewReader(""), Package: tt.pkg}
		if code := w.Run(t.Context(), []string{"template"}); code != 0 || stdout.String() != tt.want {
			t.Errorf("Package %q: exit %d, helmfile saw %q, want %q: %s", tt.pkg, code, stdout.String(), tt.want, stderr.String())
		}
	}
}
