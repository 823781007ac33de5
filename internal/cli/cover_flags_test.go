package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/cli"

	"github.com/helm-inject/helm-inject/internal/confine"
	"github.com/helm-inject/helm-inject/internal/testfs"
)

// TestHelpShowsFlagValues: --help shows what each kind of flag takes, as
// helm's does: nothing for a switch (accepted no-op or refused alike),
// "string", "duration" or "stringArray" for a value, and the value a
// flag given alone takes (--dry-run, --wait, --server-side).
func TestHelpShowsFlagValues(t *testing.T) {
	for _, tt := range []struct {
		command []string
		flags   map[string]string // flag → what help shows after it
	}{
		{[]string{"template"}, map[string]string{
			"atomic": "", "generate-name": "", "name-template": "string", "description": "string", "timeout": "duration",
			"injector": "stringArray", "inject": "stringArray", "with": "stringArray",
			"dry-run": `string[="client"]`, "wait": `string[="watcher"]`, "server-side": `string[="true"]`,
		}},
		{[]string{"apply"}, map[string]string{
			"install": "", "timeout": "duration", "wait": `string[="watcher"]`, "server-side": `string[="true"]`, "dry-run": `string[="client"]`,
		}},
		{[]string{"diff", "upgrade"}, map[string]string{
			"suppress-annotation": "string", "suppress-label": "string", "disable-validation": "", "find-renames": "string",
			"server-side": `string[="true"]`, "dry-run": `string[="client"]`,
		}},
	} {
		out, errOut, code := runCLI(t, append(tt.command, "--help")...)
		if code != 0 {
			t.Fatalf("%v --help: exit %d: %s", tt.command, code, errOut)
		}
		for flag, want := range tt.flags {
			m := regexp.MustCompile(`(?m)^ +(?:-[a-zA-Z], )?--` + regexp.QuoteMeta(flag) + `(?: (\S+))?  `).FindStringSubmatch(out)
			if m == nil {
				t.Errorf("%v --help has no --%s", tt.command, flag)
			} else if m[1] != want {
				t.Errorf("%v --help: --%s %q, want %q", tt.command, flag, m[1], want)
			}
		}
	}
}

// TestTemplatePostRenderer: --post-renderer runs the program on the
// rendered manifests with each --post-renderer-args, and what it prints
// is the output; --post-renderer-args alone, and a post-renderer that
// does not exist, are refused naming the flag, printing nothing.
func TestTemplatePostRenderer(t *testing.T) {
	dir := t.TempDir()
	renderer := filepath.Join(dir, "rename")
	if err := os.WriteFile(renderer, []byte("#!/bin/sh\nsed \"s/owner: $1/owner: $2/\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, verb := range renderVerbs() {
		out, errOut, code := rendered(t, verb, "web", apiChart, "--post-renderer", renderer, "--post-renderer-args", "platform", "--post-renderer-args", "post-rendered")
		if code != 0 || !strings.Contains(out, "owner: post-rendered") || strings.Contains(out, "owner: platform") {
			t.Errorf("%s --post-renderer: exit %d:\n%s%s", verb, code, out, errOut)
		}
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--post-renderer-args", "platform"}, `Error: release "web": --post-renderer-args needs --post-renderer` + "\n"},
		{[]string{"--post-renderer", filepath.Join(dir, "missing")}, `Error: release "web": --post-renderer ` + filepath.Join(dir, "missing") + ": "},
	} {
		for _, verb := range renderVerbs() {
			out, errOut, code := runCLI(t, append([]string{verb, "web", apiChart}, tt.args...)...)
			if code != 1 || out != "" || !strings.HasPrefix(errOut, tt.want) {
				t.Errorf("%s %v: exit %d, stdout %q, stderr %q; want 1 and %q", verb, tt.args, code, out, errOut, tt.want)
			}
		}
	}
}

// TestTemplateDependencyUpdate: a chart folder whose dependency is missing
// from charts/ fails to render; with --dependency-update helm's
// dependency update fetches it (a file:// repository here) into charts/
// first, and the dependency's objects are rendered.
func TestTemplateDependencyUpdate(t *testing.T) {
	for _, verb := range renderVerbs() {
		t.Run(verb, func(t *testing.T) { dependencyUpdate(t, verb) })
	}
}

func dependencyUpdate(t *testing.T, verb string) {
	dir := t.TempDir()
	t.Setenv("HELM_REPOSITORY_CONFIG", filepath.Join(dir, "helm", "repositories.yaml"))
	t.Setenv("HELM_REPOSITORY_CACHE", filepath.Join(dir, "helm", "cache"))
	t.Setenv("HELM_CACHE_HOME", filepath.Join(dir, "helm", "cachehome"))
	t.Setenv("HELM_CONFIG_HOME", filepath.Join(dir, "helm", "config"))
	testfs.Write(t, filepath.Join(dir, "child"), map[string]string{
		"Chart.yaml":          "apiVersion: v2\nname: child\nversion: 0.2.0\n",
		"templates/cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-child\n",
		"templates/notes.txt": "",
	})
	parent := filepath.Join(dir, "parent")
	testfs.Write(t, parent, map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: parent\nversion: 1.0.0\ndependencies:\n  - name: child\n    version: 0.2.0\n    repository: file://../child\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-parent\n",
	})
	out, errOut, code := rendered(t, verb, "web", parent)
	if code != 1 || out != "" || !strings.Contains(errOut, "child") {
		t.Errorf("without --dependency-update: exit %d, stdout %q, stderr %q; want 1 naming the missing child", code, out, errOut)
	}
	out, errOut, code = rendered(t, verb, "web", parent, "--dependency-update")
	if code != 0 || !strings.Contains(out, "name: web-parent") || !strings.Contains(out, "name: web-child") {
		t.Fatalf("--dependency-update: exit %d:\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(parent, "charts", "child-0.2.0.tgz")); err != nil {
		t.Errorf("--dependency-update did not write charts/child-0.2.0.tgz: %v", err)
	}
}

// TestTemplateConfineRefusals: template --confine refuses, naming the
// flag, what would reach the network or write outside --output-dir, and
// a chart that is not a local file; on a kernel without Landlock it
// renders nothing and says what is missing (Required), with or without
// built-in injectors and --set-file files in its policy.
func TestTemplateConfineRefusals(t *testing.T) {
	noLandlock := confine.Kernel{ABI: func() int { return 0 }}
	template := func(args ...string) (stdout, stderr string, err error) {
		t.Helper()
		var out, errb bytes.Buffer
		root := newRootCommandOn(cli.New(), noLandlock, strings.NewReader(""), &out, &errb)
		root.SetArgs(append([]string{"template", "web"}, args...))
		err = root.ExecuteContext(t.Context())
		return out.String(), errb.String(), err
	}
	lib, err := filepath.Abs(filepath.Join("..", "..", "fixtures", "injectors", "library"))
	if err != nil {
		t.Fatal(err)
	}
	setFile := filepath.Join(t.TempDir(), "level.txt")
	if err := os.WriteFile(setFile, []byte("debug"), 0o644); err != nil {
		t.Fatal(err)
	}
	const noNetwork = `release "web": --confine renders from the files it is given, with no network: it cannot be used with `
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{apiChart, "--confine", "--repo", "https://charts.example"}, noNetwork + "--repo"},
		{[]string{apiChart, "--confine", "--dependency-update"}, noNetwork + "--dependency-update"},
		{[]string{apiChart, "--confine", "--verify"}, noNetwork + "--verify"},
		{[]string{apiChart, "--confine", "--validate"}, noNetwork + "--validate"},
		{[]string{apiChart, "--confine", "--dry-run=server"}, noNetwork + "--dry-run=server"},
		{[]string{apiChart, "--confine", "--enable-dns"}, noNetwork + "--enable-dns"},
		{[]string{apiChart, "--confine", "--post-renderer", "cat"}, noNetwork + "--post-renderer"},
		{[]string{apiChart, "--confine", "--keep-chart", t.TempDir()}, noNetwork + "--keep-chart"},
		{[]string{"oci://registry.example/api", "--confine"}, `release "web": --confine renders a local chart (a folder or an archive): oci://registry.example/api: `},
		{[]string{apiChart, "--confine"}, `release "web": --confine=required, but this kernel (Landlock not available) cannot confine files (Landlock ABI 1, Linux 5.13)`},
		{[]string{apiChart, "--confine", "--output-dir", filepath.Join(t.TempDir(), "out")},
			`release "web": --confine=required, but this kernel (Landlock not available) cannot confine files (Landlock ABI 1, Linux 5.13)`},
		{[]string{apiChart, "--confine", "--injector-library", lib, "--with", "sidecar", "--set-file", "logLevel=" + setFile, "-f", setFile + ".missing"},
			`release "web": --confine=required, but this kernel (Landlock not available) cannot confine files (Landlock ABI 1, Linux 5.13)`},
	} {
		t.Run(strings.Join(tt.args[1:], " "), func(t *testing.T) {
			out, errOut, err := template(tt.args...)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) || out != "" {
				t.Errorf("error %v, stdout %q, stderr %q; want %q and nothing printed", err, out, errOut, tt.want)
			}
		})
	}
}

// TestLibraryUsedOnlyWithABuiltIn: the library folder is among the files a
// confined render may read only when a built-in injector (--with) is
// given; external injectors alone do not open it.
func TestLibraryUsedOnlyWithABuiltIn(t *testing.T) {
	for _, tt := range []struct {
		items []injectorFlag
		want  string
	}{
		{nil, ""},
		{[]injectorFlag{{kind: "inject", text: "istioctl kube-inject -f FILE"}, {kind: "injector", text: "linkerd"}}, ""},
		{[]injectorFlag{{kind: "inject", text: "istioctl kube-inject -f FILE"}, {kind: "with", text: "log-shipper"}}, "/lib"},
	} {
		f := &injectFlags{items: tt.items, library: "/lib"}
		if got := f.libraryUsed(); got != tt.want {
			t.Errorf("libraryUsed with %v = %q, want %q", tt.items, got, tt.want)
		}
	}
}
