package cli

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

var update = flag.Bool("update", false, "rewrite docs/compatibility.md")

// The flags helmfile v1.8.0 emits for each of the three commands it sends
// to its helm binary, read from its source (pkg/state/state.go:
// flagsForUpgrade, flagsForTemplate, flagsForDiff, commonDiffFlags,
// namespaceAndValuesFlags, appendValuesControlModeFlag; pkg/state/helmx.go;
// pkg/helmexec/exec.go: SyncRelease, TemplateRelease, DiffRelease), with a
// helm 3 binary or, for the helm-4-only ones (serverSide, forceConflicts,
// force as --force-replace, rollbackOnFailure), a helm 4 binary
// (e2e TestHelmfileWithHelm4). e2e/compat_test.go holds this list to that
// source: every "--flag" literal there is either here or in
// HelmfileOtherCommands.
var helmfileEmits = map[string][]string{
	"upgrade": {"install", "version", "devel", "enable-dns", "wait", "wait-for-jobs", "verify", "keyring", "timeout",
		"force", "recreate-pods", "atomic", "cleanup-on-fail", "create-namespace", "disable-openapi-validation",
		"kube-context", "kubeconfig", "plain-http", "insecure-skip-tls-verify", "adopt", "labels", "post-renderer",
		"post-renderer-args", "description", "skip-schema-validation", "hide-notes", "take-ownership", "namespace",
		"values", "set", "set-string", "set-file", "skip-crds", "reuse-values", "reset-values", "history-max",
		"server-side", "force-conflicts", "force-replace", "rollback-on-failure"},
	"template": {"version", "devel", "adopt", "enable-dns", "post-renderer", "post-renderer-args", "api-versions",
		"kube-version", "plain-http", "insecure-skip-tls-verify", "show-only", "skip-schema-validation", "kube-context",
		"kubeconfig", "namespace", "values", "set", "set-string", "set-file", "output-dir", "validate", "include-crds",
		"no-hooks", "skip-tests", "dry-run"},
	"diff": {"allow-unreleased", "version", "devel", "enable-dns", "disable-openapi-validation", "disable-validation",
		"api-versions", "kube-version", "kube-context", "kubeconfig", "insecure-skip-tls-verify", "adopt", "post-renderer",
		"post-renderer-args", "skip-schema-validation", "suppress-output-line-regex", "take-ownership", "namespace",
		"values", "set", "set-string", "set-file", "reuse-values", "reset-values", "detailed-exitcode",
		"strip-trailing-cr", "include-tests", "suppress", "suppress-secrets", "show-secrets", "no-hooks", "no-color",
		"color", "context", "output", "dry-run", "server-side"},
}

// HelmfileOtherCommands are "--flag" literals of helmfile's pkg/state that
// it passes to other helm commands (list, test, pull, delete, the OCI
// pull), never to upgrade, template or diff.
var HelmfileOtherCommands = []string{"cascade", "ca-file", "cert-file", "key-file", "registry-config",
	"debug", "deployed", "failed", "pending", "uninstalling", "logs", "failfast", "file", "untar", "untardir"}

// helmDiffUpgrade are the flags of helm-diff's `diff upgrade` (v3.11+,
// cmd/upgrade.go and cmd/options.go of databus23/helm-diff, plus its root
// command's --color/--no-color and the newer --suppress-output-line-regex
// and v3.15.10's --server-side).
var helmDiffUpgrade = []string{"server-side", "kubeconfig", "three-way-merge", "version", "repo", "detailed-exitcode", "api-versions",
	"kube-version", "values", "set", "set-string", "set-literal", "set-json", "set-file", "reuse-values", "reset-values",
	"reset-then-reuse-values", "allow-unreleased", "install", "no-hooks", "include-tests", "devel", "disable-validation",
	"disable-openapi-validation", "dry-run", "enable-dns", "skip-schema-validation", "post-renderer", "post-renderer-args",
	"insecure-skip-tls-verify", "normalize-manifests", "take-ownership", "suppress-secrets", "show-secrets",
	"suppress-annotation", "suppress-label", "suppress", "context", "output", "strip-trailing-cr", "find-renames",
	"suppress-output-line-regex", "color", "no-color"}

// helmSource is the folder of a helm module's source in the module cache
// (downloaded through the module proxy when missing): the version's own
// flag definitions, so the table cannot drift from the helm it imitates.
func helmSource(t *testing.T, module string) string {
	t.Helper()
	out, err := exec.Command("go", "mod", "download", "-json", module).Output()
	if err != nil {
		t.Fatalf("downloading %s's source: %v", module, err)
	}
	var m struct{ Dir string }
	if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
		t.Fatalf("downloading %s's source: %v %s", module, err, out)
	}
	return m.Dir
}

// helmFlags reads the flags that helm v3.21.4's and helm v4.3.2's
// `upgrade` and `template` register (the helm 3 and helm 4 CLIs this
// project tests with, hack/versions.env).
func helmFlags(t *testing.T) map[string][]string {
	t.Helper()
	readIn := func(dir string) func(name, from string) []string {
		return func(name, from string) []string {
			data, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			text := string(data)
			if from != "" {
				text = text[strings.Index(text, from):]
				text = text[:strings.Index(text[1:], "\nfunc ")+1]
			}
			var names []string
			for _, m := range regexp.MustCompile(`(?m)^\s*f\.[A-Za-z]+\([^"\n]*"([a-z][a-z0-9-]*)"`).FindAllStringSubmatch(text, -1) {
				names = append(names, m[1])
			}
			return names
		}
	}
	postRender := []string{"post-renderer", "post-renderer-args"}
	out := map[string][]string{}
	for _, v := range []struct {
		module, cmdDir string
		// extra are flags registered outside f.XxxVar lines (helm 4's
		// AddWaitFlag, addDryRunFlag and bindOutputFlag).
		extraUpgrade, extraTemplate []string
	}{
		{"helm.sh/helm/v3@v3.21.4", "cmd/helm", []string{"output"}, nil},
		{"helm.sh/helm/v4@v4.3.2", "pkg/cmd", []string{"output", "wait", "dry-run"}, []string{"wait", "dry-run"}},
	} {
		read := readIn(filepath.Join(helmSource(t, v.module), v.cmdDir))
		common := append(read("flags.go", "func addValueOptionsFlags"), read("flags.go", "func addChartPathOptionsFlags")...)
		upgrade := append(append(read("upgrade.go", "func newUpgradeCmd"), common...), append(postRender, v.extraUpgrade...)...)
		template := append(append(read("install.go", "func addInstallFlags"), read("template.go", "func newTemplateCmd")...), append(common, append(postRender, v.extraTemplate...)...)...)
		if len(upgrade) < 40 || len(template) < 40 || !slices.Contains(upgrade, "take-ownership") || !slices.Contains(template, "validate") {
			t.Fatalf("reading %s's flags went wrong: upgrade %v, template %v", v.module, upgrade, template)
		}
		out["upgrade"] = append(out["upgrade"], upgrade...)
		out["template"] = append(out["template"], template...)
	}
	for k, names := range out {
		slices.Sort(names)
		out[k] = slices.Compact(names)
	}
	return out
}

// compatSources is, per helm-inject command, which outside flag sets it
// must accept.
func compatSources(t *testing.T) map[string]map[string][]string {
	helm := helmFlags(t)
	return map[string]map[string][]string{
		"upgrade":      {"helm upgrade": helm["upgrade"], "helmfile": helmfileEmits["upgrade"]},
		"apply":        {"helm upgrade": helm["upgrade"], "helmfile": helmfileEmits["upgrade"]},
		"template":     {"helm template": helm["template"], "helmfile": helmfileEmits["template"]},
		"diff upgrade": {"helm-diff": helmDiffUpgrade, "helmfile": helmfileEmits["diff"]},
	}
}

func findCommand(t *testing.T, path string) *cobra.Command {
	t.Helper()
	root := newRootCommand(nil, io.Discard, io.Discard)
	cmd, _, err := root.Find(strings.Fields(path))
	if err != nil || cmd == root {
		t.Fatalf("no command %q: %v", path, err)
	}
	return cmd
}

// support says how a command takes a flag: "implemented", "no-op: ..." or
// "refused: ...", or "" when it does not know it.
func support(cmd *cobra.Command, name string) string {
	f := cmd.Flag(name)
	if f == nil {
		return ""
	}
	if a := f.Annotations[compatAnnotation]; len(a) > 0 {
		return a[0]
	}
	return "implemented"
}

// TestFlagParity: every flag helm, helm-diff and helmfile pass to these
// commands is known, none that helmfile can emit is refused, and each one
// called implemented has a test that shows its effect; a flag that changes
// nothing must say so (a no-op, with the reason).
func TestFlagParity(t *testing.T) {
	shown := flagEffectsShown(t)
	for path, sources := range compatSources(t) {
		cmd := findCommand(t, path)
		verb := strings.Fields(path)[0]
		if verb == "upgrade" {
			verb = "apply"
		}
		reported := map[string]bool{}
		for source, flags := range sources {
			for _, name := range flags {
				s := support(cmd, name)
				switch {
				case s == "":
					t.Errorf("%s: --%s (from %s) is unknown", path, name, source)
				case source == "helmfile" && strings.HasPrefix(s, "refused"):
					t.Errorf("%s: --%s is emitted by helmfile but refused (%s)", path, name, s)
				case s == "implemented" && !shown[verb][cmd.Flag(name).Name] && !reported[name]:
					reported[name] = true
					t.Errorf("%s: --%s is called implemented but no test shows its effect: add a row that changes the result to Test%sFlags, name the test in flagEffectsElsewhere, or make it a no-op that says why", path, name, strings.ToUpper(verb[:1])+verb[1:])
				}
			}
		}
	}
}

// flagEffectsElsewhere names, per command, the flags whose effect a test
// other than the flag tables shows (output printed, a cluster reached, a
// chart fetched); TestFlagParity checks that each named test exists and
// passes the flag.
var flagEffectsElsewhere = map[string]map[string]string{
	"apply": {
		"ca-file":                  "TestChartFlags",
		"cert-file":                "TestChartFlags",
		"dependency-update":        "TestChartFlags",
		"devel":                    "TestChartFlags",
		"hide-notes":               "TestHelmFlagsOnApply",
		"hide-secret":              "TestHelmRenderFlags",
		"insecure-skip-tls-verify": "TestChartFlags",
		"key-file":                 "TestChartFlags",
		"keyring":                  "TestChartFlags",
		"kube-context":             "TestGlobalFlagsParse",
		"kubeconfig":               "TestGlobalFlagsReachTheAPIServer",
		"namespace":                "TestNamespacesLikeHelm",
		"output":                   "TestApplyHelmFlags",
		"pass-credentials":         "TestChartFlags",
		"password":                 "TestChartFlags",
		"plain-http":               "TestChartFlags",
		"post-renderer":            "TestHelmPostRenderer",
		"post-renderer-args":       "TestHelmPostRenderer",
		"repo":                     "TestChartFlags",
		"set":                      "TestChartFlags",
		"set-file":                 "TestChartFlags",
		"set-json":                 "TestChartFlags",
		"set-literal":              "TestChartFlags",
		"set-string":               "TestChartFlags",
		"username":                 "TestChartFlags",
		"values":                   "TestChartFlags",
		"verify":                   "TestChartFlags",
		"version":                  "TestChartFlags",
	},
	"template": {
		"ca-file":                  "TestTemplateChartDownloadFlags",
		"cert-file":                "TestTemplateChartDownloadFlags",
		"dependency-update":        "TestHelmRenderFlags",
		"devel":                    "TestTemplateChartDownloadFlags",
		"dry-run":                  "TestHelmRenderFlags",
		"enable-dns":               "TestHelmRenderFlags",
		"hide-secret":              "TestHelmRenderFlags",
		"insecure-skip-tls-verify": "TestTemplateChartDownloadFlags",
		"key-file":                 "TestTemplateChartDownloadFlags",
		"keyring":                  "TestTemplateVerifiesWithTheKeyring",
		"kube-context":             "TestGlobalFlagsParse",
		"kubeconfig":               "TestGlobalFlagsReachTheAPIServer",
		"namespace":                "TestNamespacesLikeHelm",
		"output-dir":               "TestTemplateOutputDir",
		"pass-credentials":         "TestTemplateChartDownloadFlags",
		"password":                 "TestTemplateChartDownloadFlags",
		"plain-http":               "TestOCIChart",
		"post-renderer":            "TestHelmPostRenderer",
		"post-renderer-args":       "TestHelmPostRenderer",
		"release-name":             "TestHelmRenderFlags",
		"generate-name":            "TestTemplateLikeHelmTemplate",
		"name-template":            "TestTemplateLikeHelmTemplate",
		"repo":                     "TestTemplateChartDownloadFlags",
		"set-file":                 "TestTemplateFlags",
		"username":                 "TestTemplateChartDownloadFlags",
		"validate":                 "TestHelmRenderFlags",
		"verify":                   "TestTemplateChartDownloadFlags",
		"version":                  "TestTemplateChartDownloadFlags",
	},
	"diff": {
		"detailed-exitcode":        "TestDiff",
		"devel":                    "TestChartFlags",
		"dry-run":                  "TestDiffRefusesBeforeRendering",
		"insecure-skip-tls-verify": "TestChartFlags",
		"kube-context":             "TestGlobalFlagsParse",
		"kubeconfig":               "TestGlobalFlagsReachTheAPIServer",
		"namespace":                "TestNamespacesLikeHelm",
		"no-color":                 "TestDiff",
		"post-renderer":            "TestHelmFlagsOnApply",
		"post-renderer-args":       "TestParseCall",
		"repo":                     "TestChartFlags",
		"set":                      "TestChartFlags",
		"set-file":                 "TestChartFlags",
		"set-json":                 "TestChartFlags",
		"set-literal":              "TestChartFlags",
		"set-string":               "TestChartFlags",
		"three-way-merge":          "TestLiveDrift",
		"values":                   "TestChartFlags",
		"version":                  "TestChartFlags",
	},
}

// flagEffectsShown is, per command (apply, template, diff; upgrade is
// apply's), the flags a test shows the effect of: a row of the flag
// tables whose result differs from the defaults, a flag of the chart and
// injector tests, or an entry of flagEffectsElsewhere.
func flagEffectsShown(t *testing.T) map[string]map[string]bool {
	t.Helper()
	shown := map[string]map[string]bool{"apply": {}, "template": {}, "diff": {}}
	names := func(cmd *cobra.Command, args []string) []string {
		var out []string
		for _, a := range args {
			if !strings.HasPrefix(a, "-") {
				continue
			}
			name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
			f := cmd.Flag(name)
			if strings.Count(a, "-") >= 1 && !strings.HasPrefix(a, "--") {
				f = cmd.Flags().ShorthandLookup(name)
			}
			if f != nil {
				out = append(out, f.Name)
			}
		}
		return out
	}
	applyCmd, diffCmd, templateCmd := findCommand(t, "upgrade"), findCommand(t, "diff"), findCommand(t, "template")
	applyDefaults, applyCases := applyFlagCases()
	for _, c := range applyCases {
		if !cmp.Equal(c.want, applyDefaults, ignoreRuntime) {
			for _, n := range names(applyCmd, c.args) {
				shown["apply"][n] = true
			}
		}
	}
	diffDefaults, diffCases := diffFlagCases()
	for _, c := range diffCases {
		if c.print != nil || !cmp.Equal(c.want, diffDefaults, ignoreRuntime) {
			for _, n := range names(diffCmd, c.args) {
				shown["diff"][n] = true
			}
		}
	}
	for _, c := range templateFlagCases("CHART") {
		if len(c.want)+len(c.lack) > 0 {
			for _, n := range names(templateCmd, c.args) {
				shown["template"][n] = true
			}
		}
	}
	// passes: the test's source has the flag as an argument, by its
	// name or its shorthand.
	passes := func(body, name string) bool {
		if strings.Contains(body, `"--`+name) || strings.Contains(body, " --"+name) {
			return true
		}
		f := findCommand(t, "upgrade").Flag(name)
		return f != nil && f.Shorthand != "" && strings.Contains(body, `"-`+f.Shorthand+`"`)
	}
	tests := map[string]string{}
	for _, tf := range repoTests(t) {
		tests[tf.name] = tf.body
	}
	for verb, flags := range flagEffectsElsewhere {
		for name, test := range flags {
			body, ok := tests[test]
			switch {
			case !ok:
				t.Errorf("flagEffectsElsewhere: %s --%s names %s, which is no test", verb, name, test)
			case !passes(body, name):
				t.Errorf("flagEffectsElsewhere: %s --%s names %s, which never passes --%s", verb, name, test, name)
			default:
				shown[verb][name] = true
			}
		}
	}
	return shown
}

// TestCompatibilityDoc generates docs/compatibility.md's tables from the
// commands themselves; run with -update after changing a flag.
func TestCompatibilityDoc(t *testing.T) {
	var b bytes.Buffer
	for _, path := range []string{"apply", "template", "diff upgrade"} {
		cmd := findCommand(t, path)
		sources := compatSources(t)[path]
		origin := map[string][]string{}
		for source, flags := range sources {
			for _, f := range flags {
				origin[f] = append(origin[f], source)
			}
		}
		fmt.Fprintf(&b, "\n### helm-inject %s\n\n| flag | passed by | helm-inject |\n|---|---|---|\n", path)
		for _, name := range slices.Sorted(func(yield func(string) bool) {
			for f := range origin {
				if !yield(f) {
					return
				}
			}
		}) {
			srcs := origin[name]
			slices.Sort(srcs)
			srcs = slices.Compact(srcs)
			fmt.Fprintf(&b, "| `--%s` | %s | %s |\n", name, strings.Join(srcs, ", "), support(cmd, name))
		}
	}
	other := slices.Clone(HelmfileOtherCommands)
	slices.Sort(other)
	fmt.Fprintf(&b, "\nPassed by helmfile only to other helm commands (list, test, pull, uninstall): `--%s`\n", strings.Join(other, "`, `--"))
	checkGenerated(t, "compatibility.md", "TestCompatibilityDoc",
		"<!-- flag tables: generated by go test ./internal/cli -run TestCompatibilityDoc -update -->\n", "<!-- end of flag tables -->\n", b.String()+"\n")
}

// checkGenerated compares the section of docs/NAME between the begin and
// end markers with content, or with -update rewrites it; test names the
// test that generates it.
func checkGenerated(t *testing.T, name, test, begin, end, content string) {
	t.Helper()
	doc := filepath.Join("..", "..", "docs", name)
	data, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	i, j := strings.Index(text, begin), strings.Index(text, end)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the generated section markers", doc)
	}
	want := text[:i+len(begin)] + content + text[j:]
	if *update {
		if err := os.WriteFile(doc, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if diff := cmp.Diff(want, text); diff != "" {
		t.Errorf("%s is out of date (-want +got); run go test ./internal/cli -run %s -update:\n%s", doc, test, diff)
	}
}

// TestCompatFlagsParse: no-op flags take what helm's take (a bare bool,
// a duration, a value), refused flags fail with the replacement named, and
// --dry-run takes helm's modes.
func TestCompatFlagsParse(t *testing.T) {
	tests := []struct {
		path    string
		args    []string
		wantErr string
	}{
		{"template", []string{"--wait", "--timeout", "5m", "--labels", "a=b", "--atomic", "--skip-crds", "--adopt", "Deployment/x"}, ""},
		{"template", []string{"--timeout", "soon"}, "invalid argument"},
		{"template", []string{"--generate-name", "--name-template", "x-{{ randAlpha 3 }}"}, ""},
		{"diff upgrade", []string{"--three-way-merge"}, ""},
		{"diff upgrade", []string{"--suppress-label", "app"}, "use --suppress-output-line-regex"},
		{"diff", []string{"--suppress-annotation", "a"}, "use --suppress-output-line-regex"},
		{"diff upgrade", []string{"--normalize-manifests", "-D", "0.5", "--take-ownership", "-q"}, ""},
		{"apply", []string{"--dry-run=server", "-i"}, ""},
		{"apply", []string{"--dry-run=sometimes"}, "want none, client or server"},
	}
	for _, tt := range tests {
		t.Run(tt.path+" "+strings.Join(tt.args, " "), func(t *testing.T) {
			err := findCommand(t, tt.path).ParseFlags(tt.args)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("error %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("error %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// TestDryRunValue: helm's --dry-run spellings land in the mode each
// command reads: client (no cluster), server (lookups and capabilities
// from the cluster), or none (a real run).
func TestDryRunValue(t *testing.T) {
	for _, tt := range []struct{ args, want string }{
		{"--dry-run", "client"},
		{"--dry-run=client", "client"},
		{"--dry-run=true", "client"},
		{"--dry-run=server", "server"},
		{"--dry-run=none", ""},
		{"--dry-run=false", ""},
		{"", ""},
	} {
		var mode string
		f := pflag.NewFlagSet("t", pflag.ContinueOnError)
		addDryRun(f, &mode, "")
		var args []string
		if tt.args != "" {
			args = []string{tt.args}
		}
		if err := f.Parse(args); err != nil {
			t.Fatal(err)
		}
		if mode != tt.want {
			t.Errorf("%q: mode %q, want %q", tt.args, mode, tt.want)
		}
	}
	f := pflag.NewFlagSet("t", pflag.ContinueOnError)
	var mode string
	addDryRun(f, &mode, "")
	if err := f.Parse([]string{"--dry-run=maybe"}); err == nil || !strings.Contains(err.Error(), `invalid dry-run "maybe": want none, client or server`) {
		t.Errorf("--dry-run=maybe: %v", err)
	}
}

// TestJoinServerSide: "--server-side VALUE" (helm 4's upgrade, and
// helmfile) is read as one flag when VALUE is true, false or auto;
// "--server-side" alone stays alone (helm 4's install: true), and nothing
// after "--" changes.
func TestJoinServerSide(t *testing.T) {
	for _, tt := range []struct{ in, want []string }{
		{[]string{"apply", "r", "c", "--server-side", "true"}, []string{"apply", "r", "c", "--server-side=true"}},
		{[]string{"--server-side", "false", "apply"}, []string{"--server-side=false", "apply"}},
		{[]string{"--server-side", "auto"}, []string{"--server-side=auto"}},
		{[]string{"apply", "--server-side", "r", "c"}, []string{"apply", "--server-side", "r", "c"}},
		{[]string{"apply", "r", "c", "--server-side"}, []string{"apply", "r", "c", "--server-side"}},
		{[]string{"apply", "r", "c", "--", "--server-side", "true"}, []string{"apply", "r", "c", "--", "--server-side", "true"}},
		{[]string{"--server-side=false", "true"}, []string{"--server-side=false", "true"}},
	} {
		if diff := cmp.Diff(tt.want, joinServerSide(tt.in)); diff != "" {
			t.Errorf("joinServerSide(%q) (-want +got)\n%s", tt.in, diff)
		}
	}
}
