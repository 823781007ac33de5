package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/helm-inject/helm-inject/internal/testfs"
)

// factsChart writes a chart that prints what the template flags change.
func factsChart(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "facts")
	testfs.Write(t, dir, map[string]string{
		"Chart.yaml":         "apiVersion: v2\nname: facts\nversion: 0.1.0\n",
		"values.yaml":        "replicas: 1\nlimits: {}\nraw: \"\"\n",
		"env/raw.yaml":       "raw: from-a-values-file\n",
		"values.schema.json": `{"type": "object", "properties": {"replicas": {"type": "integer"}}}`,
		"crds/widget.yaml":   "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\n",
		"templates/facts.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-facts
data:
  isUpgrade: {{ .Release.IsUpgrade | quote }}
  hasWidget: {{ .Capabilities.APIVersions.Has "example.com/v1" | quote }}
  kube: {{ .Capabilities.KubeVersion.Version | quote }}
  limits: {{ toJson .Values.limits | quote }}
  raw: {{ .Values.raw | quote }}
`,
		"templates/web.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-web
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: app, image: "app:1"}]
`,
		"templates/hook.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: migrate\n  annotations:\n    helm.sh/hook: pre-install\nspec:\n  containers: [{name: m, image: \"m:1\"}]\n",
		"templates/test.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: smoke\n  annotations:\n    helm.sh/hook: test\nspec:\n  containers: [{name: s, image: \"s:1\"}]\n",
	})
	return dir
}

// runCLI runs helm-inject's command line in-process.
func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Run(context.Background(), args, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), code
}

// renderVerbs are the commands that render a release offline: template
// prints it, package writes it as a chart (see rendered).
func renderVerbs() []string { return []string{"template", "package"} }

// printOnly reports template's flags that choose what is printed, which
// package (which writes the whole chart) does not have.
func printOnly(flag string) bool {
	switch flag {
	case "--include-crds", "--no-hooks", "--skip-tests", "--show-only", "-s", "--is-upgrade":
		return true
	}
	return false
}

// rendered runs verb (template or package) with args (NAME CHART FLAGS...)
// and returns what the release renders to: template's output; for
// package, what template prints of the archive it wrote, rendered as the
// same release (so a flag of package shows its effect as template's does).
func rendered(t *testing.T, verb string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	if verb == "template" {
		return runCLI(t, append([]string{"template"}, args...)...)
	}
	dir := t.TempDir()
	out, errOut, code := runCLI(t, append(append([]string{"package"}, args...), "-d", dir)...)
	if code != 0 {
		return out, errOut, code
	}
	archives, err := filepath.Glob(filepath.Join(dir, "*.tgz"))
	if err != nil || len(archives) != 1 {
		t.Fatalf("package wrote %v (%v):\n%s%s", archives, err, out, errOut)
	}
	again := []string{"template", args[0], archives[0]}
	for i, a := range args {
		if (a == "-n" || a == "--namespace") && i+1 < len(args) {
			again = append(again, "-n", args[i+1])
		}
	}
	printed, errAgain, code := runCLI(t, again...)
	return printed, errOut + errAgain, code
}

// TestTemplateFlags: template's own flags change what it prints as helm
// template's do; install-only flags are accepted and change nothing. The
// flags package shares with template change what it packages alike.
func TestTemplateFlags(t *testing.T) {
	chart := factsChart(t)
	lib := "../../examples/injectors"
	base := []string{"template", "r", chart, "--injector-library", lib, "--with", "log-shipper@1.0.0", "--with-set", "log-shipper.destination=logs:24224"}
	plain, _, code := runCLI(t, base...)
	if code != 0 {
		t.Fatalf("template exited %d", code)
	}
	tests := templateFlagCases(chart)
	for _, verb := range renderVerbs() {
		for _, tt := range tests {
			if verb == "package" && len(tt.args) > 0 && printOnly(tt.args[0]) {
				continue
			}
			t.Run(verb+" "+strings.Join(tt.args, " "), func(t *testing.T) {
				out, errOut, code := rendered(t, verb, append(slicesClone(base[1:]), tt.args...)...)
				if code != 0 {
					t.Fatalf("exit %d: %s", code, errOut)
				}
				for _, w := range tt.want {
					if !strings.Contains(out, w) {
						t.Errorf("output lacks %q:\n%s", w, out)
					}
				}
				for _, l := range tt.lack {
					if strings.Contains(out, l) {
						t.Errorf("output has %q:\n%s", l, out)
					}
				}
			})
		}
	}

	// The schema is checked unless --skip-schema-validation.
	if _, errOut, code := runCLI(t, append(slicesClone(base), "--set", "replicas=many")...); code == 0 || !strings.Contains(errOut, "replicas") {
		t.Errorf("a value against values.schema.json: exit %d: %s", code, errOut)
	}
	// Hooks and tests are injected unless skipped: an external injector
	// marks every document it is given.
	marker := filepath.Join(t.TempDir(), "mark.sh")
	if err := os.WriteFile(marker, []byte("#!/bin/sh\nsed 's/^kind: \\(.*\\)/kind: \\1\\n# injected/'\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, verb := range renderVerbs() {
		count := func(args ...string) int {
			out, errOut, code := rendered(t, verb, append([]string{"r", chart, "--inject", marker}, args...)...)
			if code != 0 {
				t.Errorf("%s %v: %s", verb, args, errOut)
			}
			return strings.Count(out, "# injected")
		}
		if all, noHooks, noTests := count(), count("--skip-inject-hooks"), count("--skip-inject-tests"); all != 4 || noHooks != 2 || noTests != 3 {
			t.Errorf("%s: injected documents: %d of all, %d with --skip-inject-hooks, %d with --skip-inject-tests; want 4, 2, 3", verb, all, noHooks, noTests)
		}
	}
	// diff's --injector-version must name a program that an injector
	// runs, as PROGRAM=COMMAND; both are checked before the cluster is
	// asked anything (the kubeconfig here does not exist).
	for _, tt := range []struct{ version, want string }{
		{"istioctl=istioctl version", "--injector-version istioctl=...: no --injector or --inject runs istioctl"},
		{"mark.sh", `--injector-version "mark.sh": want PROGRAM=COMMAND`},
		{"mark.sh=", `--injector-version "mark.sh=": want PROGRAM=COMMAND`},
	} {
		_, errOut, code := runCLI(t, "diff", "r", chart, "--kubeconfig", "/nonexistent", "--inject", marker, "--injector-version", tt.version)
		if code == 0 || !strings.Contains(errOut, tt.want) {
			t.Errorf("--injector-version %s: exit %d, stderr %q; want %q", tt.version, code, errOut, tt.want)
		}
	}
	// --set-file reads a value from a file.
	motd := filepath.Join(t.TempDir(), "raw.txt")
	if err := os.WriteFile(motd, []byte("from a file"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, verb := range renderVerbs() {
		if out, errOut, code := rendered(t, verb, append(slicesClone(base[1:]), "--set-file", "raw="+motd)...); code != 0 || !strings.Contains(out, `raw: "from a file"`) {
			t.Errorf("%s --set-file: exit %d: %s", verb, code, errOut)
		}
	}
	// --injector-timeout kills a slow injector; --injector-dir is where it runs.
	slow := filepath.Join(t.TempDir(), "slow.sh")
	if err := os.WriteFile(slow, []byte("#!/bin/sh\nsleep 5\ncat\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, verb := range renderVerbs() {
		if _, errOut, code := rendered(t, verb, "r", chart, "--inject", slow, "--injector-timeout", "200ms"); code == 0 || !strings.Contains(errOut, "did not finish within 200ms (--injector-timeout)") {
			t.Errorf("%s --injector-timeout: exit %d: %s", verb, code, errOut)
		}
	}
	workDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(workDir, "label"), []byte("here"), 0o600); err != nil {
		t.Fatal(err)
	}
	reader := filepath.Join(t.TempDir(), "label.sh")
	if err := os.WriteFile(reader, []byte("#!/bin/sh\nsed \"s/^kind: \\(.*\\)/kind: \\1\\n# $(cat label)/\"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, verb := range renderVerbs() {
		if out, errOut, code := rendered(t, verb, "r", chart, "--inject", reader, "--injector-dir", workDir); code != 0 || !strings.Contains(out, "# here") {
			t.Errorf("%s --injector-dir: exit %d: %s", verb, code, errOut)
		}
	}
	// Install-only flags are accepted and change nothing.
	for _, f := range [][]string{{"--create-namespace"}, {"--wait"}, {"--wait-for-jobs"}, {"--atomic"}, {"--force"}, {"--replace"},
		{"--disable-openapi-validation"}, {"--take-ownership"}, {"--hide-notes"}, {"--skip-crds"}, {"--render-subchart-notes"},
		{"--rollback-on-failure"}, {"--force-replace"}, {"--force-conflicts"}, {"--server-side"}, {"--server-side=false"},
		{"--server-side", "false"}, {"--server-side", "auto"},
		{"--wait=legacy"}, {"--timeout", "1m"}, {"--description", "x"}, {"--labels", "a=b"}, {"--adopt", "Deployment/x"}} {
		if out, errOut, code := runCLI(t, append(slicesClone(base), f...)...); code != 0 || out != plain {
			t.Errorf("template %v: exit %d, output differs: %v\n%s", f, code, out != plain, errOut)
		}
	}
	// --output-dir and --release-name write files instead of printing.
	dir := t.TempDir()
	if out, errOut, code := runCLI(t, append(slicesClone(base), "--output-dir", dir, "--release-name")...); code != 0 || out != "" {
		t.Fatalf("--output-dir: exit %d, printed %q: %s", code, out, errOut)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "r", "facts", "templates", "facts.yaml")); err != nil || !strings.Contains(string(b), "r-facts") {
		t.Errorf("--output-dir --release-name: %v %s", err, b)
	}
	// --keep-chart writes the temporary chart.
	kept := filepath.Join(t.TempDir(), "kept")
	if _, errOut, code := runCLI(t, append(slicesClone(base), "--keep-chart", kept)...); code != 0 {
		t.Fatalf("--keep-chart: %s", errOut)
	}
	if _, err := os.Stat(filepath.Join(kept, "Chart.yaml")); err != nil {
		t.Errorf("--keep-chart: %v", err)
	}
}

func slicesClone(s []string) []string { return append([]string(nil), s...) }

type templateFlagCase struct {
	args       []string
	want, lack []string
}

// templateFlagCases are TestTemplateFlags' table for the chart factsChart
// wrote: each flag's arguments and what template's output then has and
// lacks (TestFlagParity counts the flags of a row as ones whose effect is
// shown).
func templateFlagCases(chart string) []templateFlagCase {
	return []templateFlagCase{
		{[]string{"--values", filepath.Join(chart, "env", "raw.yaml")}, []string{`raw: "from-a-values-file"`}, nil},
		{[]string{"-f", filepath.Join(chart, "env", "raw.yaml"), "--set", "raw=set-wins"}, []string{`raw: "set-wins"`}, nil},
		{nil, []string{`isUpgrade: "false"`, `hasWidget: "false"`, "name: log-shipper", "name: migrate", "name: smoke"}, []string{"CustomResourceDefinition"}},
		{[]string{"--is-upgrade"}, []string{`isUpgrade: "true"`}, nil},
		{[]string{"--api-versions", "example.com/v1"}, []string{`hasWidget: "true"`}, nil},
		{[]string{"-a", "example.com/v1"}, []string{`hasWidget: "true"`}, nil},
		{[]string{"--kube-version", "1.29.3"}, []string{`kube: "v1.29.3"`}, nil},
		{[]string{"--include-crds"}, []string{"kind: CustomResourceDefinition"}, nil},
		{[]string{"--no-hooks"}, nil, []string{"name: migrate", "name: smoke"}},
		{[]string{"--skip-tests"}, []string{"name: migrate"}, []string{"name: smoke"}},
		{[]string{"--show-only", "templates/facts.yaml"}, []string{"r-facts"}, []string{"r-web"}},
		{[]string{"-s", "templates/web.yaml"}, []string{"r-web", "name: log-shipper"}, []string{"r-facts"}},
		{[]string{"--set-json", `limits={"cpu":"2"}`}, []string{`limits: "{\"cpu\":\"2\"}"`}, nil},
		{[]string{"--set-literal", "raw=a,b=c"}, []string{`raw: "a,b=c"`}, nil},
		{[]string{"--set", "replicas=many", "--skip-schema-validation"}, []string{"r-facts"}, nil},
		{[]string{"--set-string", "raw=007"}, []string{`raw: "007"`}, nil},
	}
}

// TestTemplateLikeHelmTemplate: template takes helm template's arguments
// and prints what it prints where helm-inject's own pipeline could differ:
// subcharts' documents under helm's paths (and --show-only with them), a
// chart that renders no object (printed as it is, exit 0, one line on
// stderr), and the release name from [NAME], --name-template or helm's
// default.
func TestTemplateLikeHelmTemplate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "parent")
	cm := func(name string) string {
		return "{{- if .Values.show }}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n{{- end }}\n# " + name + " ends\n"
	}
	testfs.Write(t, dir, map[string]string{
		"Chart.yaml":                                       "apiVersion: v2\nname: parent\nversion: 0.1.0\ndependencies:\n  - name: child\n    version: 0.1.0\n    condition: child.enabled\n",
		"values.yaml":                                      "show: true\nchild:\n  enabled: true\n  show: true\n",
		"templates/cm.yaml":                                cm("{{ .Release.Name }}-parent"),
		"charts/child/Chart.yaml":                          "apiVersion: v2\nname: child\nversion: 0.1.0\n",
		"charts/child/templates/cm.yaml":                   cm("{{ .Release.Name }}-child"),
		"charts/child/charts/grandchild/Chart.yaml":        "apiVersion: v2\nname: grandchild\nversion: 0.1.0\n",
		"charts/child/charts/grandchild/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: grandchild\n",
	})
	// The outputs are helm 4.3.2's `helm template` of the same chart,
	// byte for byte.
	doc := func(source, name, after string) string {
		return "---\n# Source: " + source + "\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n# " + name + " ends\n" + after
	}
	grandchild := "---\n# Source: parent/charts/child/charts/grandchild/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: grandchild\n\n"
	for _, tt := range []struct {
		name           string
		args           []string
		stdout, stderr string
	}{
		{"subcharts under helm's paths", []string{"r", dir},
			grandchild + doc("parent/charts/child/templates/cm.yaml", "r-child", "\n") + doc("parent/templates/cm.yaml", "r-parent", ""), ""},
		{"--show-only a subchart's template", []string{"r", dir, "--show-only", "charts/child/templates/cm.yaml"},
			doc("parent/charts/child/templates/cm.yaml", "r-child", "\n\n"), ""},
		{"--show-only a glob over subcharts", []string{"r", dir, "-s", "charts/child/charts/*/templates/*"}, grandchild + "\n", ""},
		{"a disabled subchart", []string{"r", dir, "--set", "child.enabled=false"}, doc("parent/templates/cm.yaml", "r-parent", ""), ""},
		{"no object rendered", []string{"r", dir, "--set", "show=false,child.enabled=false"},
			"---\n# Source: parent/templates/cm.yaml\n# r-parent ends\n", `release "r": ` + dir + " rendered no Kubernetes object\n"},
		{"helm's default name", []string{dir, "--set", "child.enabled=false"}, doc("parent/templates/cm.yaml", "release-name-parent", ""), ""},
		{"--name-template", []string{dir, "--set", "child.enabled=false", "--name-template", `foo-{{ "abc" | b64enc | lower }}`}, doc("parent/templates/cm.yaml", "foo-ywjj-parent", ""), ""},
		// helm template names the release release-name before -g would.
		{"--generate-name", []string{dir, "--set", "child.enabled=false", "--generate-name"}, doc("parent/templates/cm.yaml", "release-name-parent", ""), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runCLI(t, append([]string{"template"}, tt.args...)...)
			if code != 0 || stdout != tt.stdout || stderr != tt.stderr {
				t.Errorf("exit %d\nstdout:\n%s\nwant:\n%s\nstderr:\n%s\nwant:\n%s", code, stdout, tt.stdout, stderr, tt.stderr)
			}
		})
	}
	for _, args := range [][]string{{"r", dir, "--name-template", "x"}, {"r", dir, "-g"}, {"a", "b", "c"}, {dir, "--name-template", "X"}, {"R", dir}} {
		if _, _, code := runCLI(t, append([]string{"template"}, args...)...); code == 0 {
			t.Errorf("template %v succeeded; helm template refuses it", args)
		}
	}
}
