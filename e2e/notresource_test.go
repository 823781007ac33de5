package e2e

import (
	"strings"
	"testing"
)

// helmTestChart is one of the test charts of the Helm module go.mod
// requires (pkg/cmd/testdata/testcharts), in the module cache.
func helmTestChart(t *testing.T, name string) string {
	t.Helper()
	return helmModuleDir(t, "pkg", "cmd", "testdata", "testcharts", name)
}

// TestNotResourceDocuments: helm's issue-9027 chart renders its values as
// YAML, two documents that are no Kubernetes objects. template prints
// them as helm 4's template does, byte for byte, with or without an
// injector (which never gets them); apply refuses them as helm 4's
// install does, with its words and the template named, exit 1 and no
// release written; diff refuses them too.
func TestNotResourceDocuments(t *testing.T) {
	ns := namespace(t)
	chart := helmTestChart(t, "issue-9027")
	helm4 := helm4Bin(t)
	var run command

	want := run.mustRun(t, helm4, "template", "x", chart)
	for _, flags := range [][]string{nil, {"--injector", "sidecar-injector f=FILE"}} {
		got := mustHelmInject(t, append([]string{"template", "x", chart}, flags...)...)
		if got.stdout != want.stdout {
			t.Errorf("template %v differs from helm 4's:\n%s\nwant\n%s", flags, got.stdout, want.stdout)
		}
	}

	// helm 4's own install refuses it before writing a revision.
	const helmWords = "unable to build kubernetes objects from release manifest: error validating \"\": error validating data: [apiVersion not set, kind not set]"
	h4 := run.run(t, helm4, "install", "by-helm", chart, "-n", ns)
	if h4.code != 1 || !strings.Contains(h4.stderr, helmWords) {
		t.Errorf("helm 4 install: %s\nwant exit 1 and %q", h4, helmWords)
	}

	const words = "unable to build kubernetes objects from release manifest: error validating data: [apiVersion not set, kind not set]"
	refused := [][]string{
		{"apply", "nr", chart, "-n", ns, "--injector", "sidecar-injector f=FILE"},
		{"diff", "upgrade", "--allow-unreleased", "nr", chart, "-n", ns},
	}
	for _, args := range refused {
		r := helmInject(t, args...)
		if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, `release "nr": issue-9027/`) || !strings.Contains(r.stderr, words) {
			t.Errorf("%s: %s\nwant exit 1, nothing on stdout, the release and a template of issue-9027 named, and %q", args[0], r, words)
		}
	}
	for _, rel := range []string{"nr", "by-helm"} {
		if h := run.run(t, helm4, "history", rel, "-n", ns); h.code == 0 || !strings.Contains(h.stderr, "release: not found") {
			t.Errorf("release %s has a history after the refused install:\n%s", rel, h)
		}
	}
	if list := run.mustRun(t, helm4, "list", "-n", ns, "-q", "--deployed", "--failed", "--pending"); strings.TrimSpace(list.stdout) != "" {
		t.Errorf("releases in %s after refused installs: %s", ns, list.stdout)
	}
}
