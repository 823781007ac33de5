package cli

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/spf13/cobra"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/cli"
	"helm.sh/helm/v4/pkg/kube"

	"github.com/helm-inject/helm-inject/inject"
	"github.com/helm-inject/helm-inject/release"
)

const apiChart = "../../fixtures/charts/api"

// parsed parses args with cmd (a real command of helm-inject) and loads
// the release's inputs (chart, values, injectors) as the command would; no
// cluster is contacted.
func parsed(t *testing.T, cmd *cobra.Command, in *releaseInputs, args ...string) *loaded {
	t.Helper()
	cmd.SetContext(context.Background())
	cmd.SetErr(io.Discard)
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatalf("parsing %v: %v", args, err)
	}
	// load connects lazily: a kubeconfig is needed, not a cluster.
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: \"https://127.0.0.1:1\"}\ncontexts:\n- name: c\n  context: {cluster: c}\ncurrent-context: c\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", kubeconfig)
	l, err := in.load(cmd, cli.New(), []string{"web", apiChart})
	if err != nil {
		t.Fatalf("loading with %v: %v", args, err)
	}
	return l
}

// releaseCommands are the commands that take a release's inputs, each
// with the flags it parses into.
func releaseCommands() map[string]func() (*cobra.Command, *releaseInputs) {
	return map[string]func() (*cobra.Command, *releaseInputs){
		"apply": func() (*cobra.Command, *releaseInputs) {
			c, a := applyCommand(cli.New())
			return c, &a.releaseInputs
		},
		"upgrade": func() (*cobra.Command, *releaseInputs) {
			c, a := upgradeCommand(cli.New())
			return c, &a.releaseInputs
		},
		"diff": func() (*cobra.Command, *releaseInputs) {
			c, d := diffCommand(cli.New(), "diff", "")
			return c, &d.releaseInputs
		},
		"diff upgrade": func() (*cobra.Command, *releaseInputs) {
			c, d := diffCommand(cli.New(), "upgrade", "")
			return c, &d.releaseInputs
		},
	}
}

// ignoreRuntime leaves out what is compared separately (the pipeline) or
// is not data (the post-renderer program, the cluster client).
var ignoreRuntime = cmp.Options{
	cmpopts.IgnoreUnexported(release.Apply{}, release.Diff{}),
	cmpopts.IgnoreFields(release.Inputs{}, "Injectors"),
	cmpopts.IgnoreFields(release.RenderFlags{}, "PostRenderer"),
}

// TestApplyFlags: every flag of apply (and upgrade) lands in the field of
// release.Apply that the Helm SDK reads, with helm's defaults when absent.
func TestApplyFlags(t *testing.T) {
	_, tests := applyFlagCases()
	for _, verb := range []string{"apply", "upgrade"} {
		for _, tt := range tests {
			if verb == "apply" {
				// apply always installs a missing release; -i changes nothing.
				tt.want.Install = true
			}
			t.Run(verb+" "+strings.Join(tt.args, " "), func(t *testing.T) {
				cmd, a := applyCommand(cli.New())
				if verb == "upgrade" {
					cmd, a = upgradeCommand(cli.New())
				}
				l := parsed(t, cmd, &a.releaseInputs, tt.args...)
				got, err := a.newApply(l)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tt.want, *got, ignoreRuntime); diff != "" {
					t.Errorf("release.Apply (-want +got):\n%s", diff)
				}
			})
		}
	}
}

type applyFlagCase struct {
	args []string
	want release.Apply
}

// applyFlagCases are TestApplyFlags' table: each flag's arguments and the
// release.Apply upgrade builds from them (TestFlagParity counts a flag
// whose want differs from the defaults as one whose effect is shown).
func applyFlagCases() (release.Apply, []applyFlagCase) {
	// WriteConcurrency 32: the default README.md and docs/performance.md
	// state (chosen by measurement), written out rather than read from
	// release.DefaultWriteConcurrency so that a changed default fails here.
	defaults := release.Apply{Inputs: release.Inputs{Namespace: "default", Reconcile: inject.ReconcileAlways}, Options: release.Options{Timeout: 5 * time.Minute, MaxHistory: 10, WriteConcurrency: 32}}
	with := func(f func(*release.Apply)) release.Apply { a := defaults; f(&a); return a }
	return defaults, []applyFlagCase{
		{nil, defaults},
		{[]string{"--create-namespace"}, with(func(a *release.Apply) { a.CreateNamespace = true })},
		{[]string{"--wait"}, with(func(a *release.Apply) { a.Wait = kube.StatusWatcherStrategy })},
		{[]string{"--wait=watcher"}, with(func(a *release.Apply) { a.Wait = kube.StatusWatcherStrategy })},
		{[]string{"--wait=true"}, with(func(a *release.Apply) { a.Wait = kube.StatusWatcherStrategy })},
		{[]string{"--wait=legacy"}, with(func(a *release.Apply) { a.Wait = kube.LegacyStrategy })},
		{[]string{"--wait=hookOnly"}, with(func(a *release.Apply) { a.Wait = kube.HookOnlyStrategy })},
		{[]string{"--wait=false"}, with(func(a *release.Apply) { a.Wait = kube.HookOnlyStrategy })},
		{[]string{"--wait-for-jobs"}, with(func(a *release.Apply) { a.WaitForJobs = true })},
		{[]string{"--timeout", "90s"}, with(func(a *release.Apply) { a.Timeout = 90 * time.Second })},
		{[]string{"--atomic"}, with(func(a *release.Apply) { a.RollbackOnFailure = true })},
		{[]string{"--rollback-on-failure"}, with(func(a *release.Apply) { a.RollbackOnFailure = true })},
		{[]string{"--history-max", "3"}, with(func(a *release.Apply) { a.MaxHistory = 3 })},
		{[]string{"--description", "rolled by CI"}, with(func(a *release.Apply) { a.Description = "rolled by CI" })},
		{[]string{"--dry-run"}, with(func(a *release.Apply) { a.DryRun = true })},
		{[]string{"--dry-run=client"}, with(func(a *release.Apply) { a.DryRun = true })},
		{[]string{"--dry-run=server"}, with(func(a *release.Apply) { a.DryRun = true })},
		{[]string{"--dry-run=true"}, with(func(a *release.Apply) { a.DryRun = true })},
		{[]string{"--dry-run=none"}, defaults},
		{[]string{"--dry-run=false"}, defaults},
		{[]string{"--no-hooks"}, with(func(a *release.Apply) { a.DisableHooks = true })},
		{[]string{"--skip-crds"}, with(func(a *release.Apply) { a.SkipCRDs = true })},
		{[]string{"--skip-schema-validation"}, with(func(a *release.Apply) { a.SkipSchemaValidation = true })},
		{[]string{"--reuse-values"}, with(func(a *release.Apply) { a.ValuesMode = release.ValuesReuse })},
		{[]string{"--reset-values"}, with(func(a *release.Apply) { a.ValuesMode = release.ValuesReset })},
		{[]string{"--reset-then-reuse-values"}, with(func(a *release.Apply) { a.ValuesMode = release.ValuesResetThenReuse })},
		{[]string{"--force-upgrade"}, with(func(a *release.Apply) { a.ForceUpgrade = true })},
		{[]string{"--skip-live-check"}, with(func(a *release.Apply) { a.SkipLiveCheck = true })},
		{[]string{"--force"}, with(func(a *release.Apply) { a.ForceReplace = true })},
		{[]string{"--force-replace"}, with(func(a *release.Apply) { a.ForceReplace = true })},
		{[]string{"--force-conflicts"}, with(func(a *release.Apply) { a.ForceConflicts = true })},
		{[]string{"--server-side"}, with(func(a *release.Apply) { a.ServerSide = "true" })},
		{[]string{"--server-side=false"}, with(func(a *release.Apply) { a.ServerSide = "false" })},
		{[]string{"--server-side=auto"}, with(func(a *release.Apply) { a.ServerSide = "auto" })},
		{[]string{"--write-concurrency", "4"}, with(func(a *release.Apply) { a.WriteConcurrency = 4 })},
		{[]string{"--write-concurrency", "1"}, with(func(a *release.Apply) { a.WriteConcurrency = 1 })},
		{[]string{"--cleanup-on-fail"}, with(func(a *release.Apply) { a.CleanupOnFail = true })},
		{[]string{"--disable-openapi-validation"}, with(func(a *release.Apply) { a.DisableOpenAPIValidation = true })},
		{[]string{"--reconcile", "never"}, with(func(a *release.Apply) { a.Reconcile = inject.ReconcileNever })},
		{[]string{"--update-injectors"}, with(func(a *release.Apply) { a.UpdateInjectors = true })},
		{[]string{"--reconcile=with-chart"}, with(func(a *release.Apply) { a.Reconcile = inject.ReconcileWithChart })},
		{[]string{"--injector-dir", "/srv/mesh"}, with(func(a *release.Apply) { a.InjectDir = "/srv/mesh" })},
		{[]string{"--keep-chart", "/tmp/kept"}, with(func(a *release.Apply) { a.KeepChart = "/tmp/kept" })},
		{[]string{"--take-ownership"}, with(func(a *release.Apply) { a.TakeOwnership = true })},
		{[]string{"--adopt", "Deployment/web"}, with(func(a *release.Apply) { a.TakeOwnership = true })},
		{[]string{"-l", "team=shop,tier=web"}, with(func(a *release.Apply) { a.Labels = map[string]string{"team": "shop", "tier": "web"} })},
		{[]string{"--labels", "team=shop"}, with(func(a *release.Apply) { a.Labels = map[string]string{"team": "shop"} })},
		{[]string{"--recreate-pods"}, with(func(a *release.Apply) { a.Recreate = true })},
		{[]string{"--enable-dns"}, with(func(a *release.Apply) { a.Render.EnableDNS = true })},
		{[]string{"--render-subchart-notes"}, with(func(a *release.Apply) { a.Render.SubNotes = true })},
		{[]string{"--install"}, with(func(a *release.Apply) { a.Install = true })},
		{[]string{"-i"}, with(func(a *release.Apply) { a.Install = true })},
	}
}

// TestDiffFlags: every flag of diff lands in release.Diff or in the print
// options.
func TestDiffFlags(t *testing.T) {
	_, tests := diffFlagCases()
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			cmd, d := diffCommand(cli.New(), "diff", "")
			l := parsed(t, cmd, &d.releaseInputs, tt.args...)
			got, err := d.newDiff(l)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, *got, ignoreRuntime); diff != "" {
				t.Errorf("release.Diff (-want +got):\n%s", diff)
			}
			want := release.DiffPrintOptions{Context: 3, Output: release.DiffOutputDiff}
			if tt.print != nil {
				tt.print(&want)
			}
			// Not a terminal: color only with --color.
			got2, err := d.printOptions(io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			sameRegexp := cmp.Comparer(func(a, b *regexp.Regexp) bool { return a.String() == b.String() })
			if diff := cmp.Diff(want, got2, cmpopts.IgnoreUnexported(release.DiffPrintOptions{}), sameRegexp); diff != "" {
				t.Errorf("print options (-want +got):\n%s", diff)
			}
		})
	}
}

type diffFlagCase struct {
	args  []string
	want  release.Diff
	print func(*release.DiffPrintOptions)
}

// diffFlagCases are TestDiffFlags' table: each flag's arguments, the
// release.Diff built from them and the change of the print options (a row
// with a want other than the defaults, or a print change, shows the
// flag's effect for TestFlagParity).
func diffFlagCases() (release.Diff, []diffFlagCase) {
	defaults := release.Diff{Inputs: release.Inputs{Namespace: "default", Reconcile: inject.ReconcileAlways}}
	with := func(f func(*release.Diff)) release.Diff { d := defaults; f(&d); return d }
	return defaults, []diffFlagCase{
		{nil, defaults, nil},
		{[]string{"--allow-unreleased"}, with(func(d *release.Diff) { d.AllowUnreleased = true }), nil},
		{[]string{"--install"}, with(func(d *release.Diff) { d.AllowUnreleased = true }), nil},
		{[]string{"--reuse-values"}, with(func(d *release.Diff) { d.ValuesMode = release.ValuesReuse }), nil},
		{[]string{"--reset-values"}, with(func(d *release.Diff) { d.ValuesMode = release.ValuesReset }), nil},
		{[]string{"--reset-then-reuse-values"}, with(func(d *release.Diff) { d.ValuesMode = release.ValuesResetThenReuse }), nil},
		{[]string{"--skip-schema-validation"}, with(func(d *release.Diff) { d.SkipSchemaValidation = true }), nil},
		{[]string{"--kube-version", "1.31.0"}, with(func(d *release.Diff) { d.KubeVersion = "1.31.0" }), nil},
		{[]string{"--api-versions", "example.com/v1,other/v2", "-a", "third/v1"}, with(func(d *release.Diff) {
			d.Render.APIVersions = []string{"example.com/v1", "other/v2", "third/v1"}
		}), nil},
		{[]string{"--enable-dns"}, with(func(d *release.Diff) { d.Render.EnableDNS = true }), nil},
		{[]string{"-l", "team=shop"}, with(func(d *release.Diff) { d.Labels = map[string]string{"team": "shop"} }), nil},
		{[]string{"--reconcile", "never", "--update-injectors"}, with(func(d *release.Diff) { d.Reconcile, d.UpdateInjectors = inject.ReconcileNever, true }), nil},
		{[]string{"--injector-dir", "/srv/mesh"}, with(func(d *release.Diff) { d.InjectDir = "/srv/mesh" }), nil},
		{[]string{"--context", "7"}, defaults, func(p *release.DiffPrintOptions) { p.Context = 7 }},
		{[]string{"-C", "0"}, defaults, func(p *release.DiffPrintOptions) { p.Context = 0 }},
		{[]string{"--show-secrets"}, defaults, func(p *release.DiffPrintOptions) { p.ShowSecrets = true }},
		{[]string{"-q"}, defaults, func(p *release.DiffPrintOptions) { p.SuppressSecrets = true }},
		{[]string{"--no-hooks"}, with(func(d *release.Diff) { d.DisableHooks = true }), func(p *release.DiffPrintOptions) { p.NoHooks = true }},
		{[]string{"--skip-live-check"}, with(func(d *release.Diff) { d.SkipLiveCheck = true }), nil},
		{[]string{"--include-tests"}, defaults, func(p *release.DiffPrintOptions) { p.IncludeTests = true }},
		{[]string{"--strip-trailing-cr"}, defaults, func(p *release.DiffPrintOptions) { p.StripTrailingCR = true }},
		{[]string{"--suppress", "Secret", "--suppress", "ConfigMap"}, defaults, func(p *release.DiffPrintOptions) { p.Suppress = []string{"Secret", "ConfigMap"} }},
		{[]string{"--color"}, defaults, func(p *release.DiffPrintOptions) { p.Color = true }},
		{[]string{"--color", "--no-color"}, defaults, nil},
		{[]string{"--output", "json"}, defaults, func(p *release.DiffPrintOptions) { p.Output = release.DiffOutputJSON }},
		{[]string{"--output", "simple"}, defaults, func(p *release.DiffPrintOptions) { p.Output = release.DiffOutputSimple }},
		{[]string{"--suppress-output-line-regex", "^.*image:", "--suppress-output-line-regex", "replicas"}, defaults, func(p *release.DiffPrintOptions) {
			p.SuppressLines = []*regexp.Regexp{regexp.MustCompile("^.*image:"), regexp.MustCompile("replicas")}
		}},
		{[]string{"--server-side=false"}, with(func(d *release.Diff) { d.ServerSide = "false" }), nil},
		{[]string{"--server-side"}, with(func(d *release.Diff) { d.ServerSide = "true" }), nil},
		// No-ops (helm-diff's): diff never validates against the server.
		{[]string{"--disable-validation"}, defaults, nil},
		{[]string{"--disable-openapi-validation"}, defaults, nil},
	}
}

// TestInjectorFlags: --injector, --inject and --with build the pipeline in
// the order given, with --with-set parameters, the library, the timeout
// and the hook and test switches.
func TestInjectorFlags(t *testing.T) {
	for _, verb := range []string{"apply", "upgrade", "diff", "diff upgrade"} {
		t.Run(verb, func(t *testing.T) { injectorFlags(t, verb) })
	}
}

func injectorFlags(t *testing.T, verb string) {
	cmd, in := releaseCommands()[verb]()
	l := parsed(t, cmd, in,
		"--injector", "sidecar-injector f=FILE,image=proxy:1",
		"--with", "log-shipper@^1", "--with-set", "log-shipper.destination=logs:24224",
		"--inject", "my-injector --label 'a b' FILE",
		"--injector-library", "../../examples/injectors",
		"--injector-timeout", "45s", "--skip-inject-hooks", "--skip-inject-tests")
	p := l.inputs.Injectors
	if p.Timeout != 45*time.Second || !p.SkipHooks || !p.SkipTests || len(p.Specs) != 3 {
		t.Fatalf("pipeline = %+v", p)
	}
	if c, ok := p.Specs[0].(*inject.Command); !ok || !cmp.Equal(c.Argv, []string{"sidecar-injector", "-f", "FILE", "--image", "proxy:1"}) {
		t.Errorf("first injector = %#v", p.Specs[0])
	}
	if r, ok := p.Specs[1].(*inject.TemplateRef); !ok || r.Injector != "log-shipper" || r.Constraint != "^1" || r.Params["destination"] != "logs:24224" || r.Library.Dir != "../../examples/injectors" {
		t.Errorf("second injector = %#v", p.Specs[1])
	}
	if c, ok := p.Specs[2].(*inject.Command); !ok || !cmp.Equal(c.Argv, []string{"my-injector", "--label", "a b", "FILE"}) {
		t.Errorf("third injector = %#v", p.Specs[2])
	}
}

// TestChartFlags: the chart flags land in Helm's ChartPathOptions and
// values.Options, and the values flags merge as helm merges them.
func TestChartFlags(t *testing.T) {
	dir := t.TempDir()
	valuesFile := filepath.Join(dir, "v.yaml")
	if err := os.WriteFile(valuesFile, []byte("fromFile: yes\nreplicas: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	text := filepath.Join(dir, "motd.txt")
	if err := os.WriteFile(text, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, verb := range []string{"apply", "upgrade", "diff", "diff upgrade"} {
		t.Run(verb, func(t *testing.T) { chartFlagsOf(t, verb, valuesFile, text) })
	}
}

func chartFlagsOf(t *testing.T, verb, valuesFile, text string) {
	cmd, in := releaseCommands()[verb]()
	l := parsed(t, cmd, in,
		"--values", valuesFile, "--set", "replicas=3", "--set-string", "port=8080",
		"--set-json", `limits={"cpu":"2"}`, "--set-literal", "raw=a,b=c", "--set-file", "motd="+text)
	// The repository flags are only parsed: no repository is asked here.
	cmd, p := releaseCommands()[verb]()
	err := cmd.ParseFlags([]string{"--version", "^1", "--devel", "--repo", "https://charts.example", "--username", "robot", "--password", "pw",
		"--cert-file", "c.pem", "--key-file", "k.pem", "--ca-file", "ca.pem", "--insecure-skip-tls-verify",
		"--plain-http", "--pass-credentials", "--verify", "--keyring", "ring.gpg", "--dependency-update"})
	if err != nil {
		t.Fatal(err)
	}
	want := action.ChartPathOptions{Version: "^1", RepoURL: "https://charts.example", Username: "robot", Password: "pw",
		CertFile: "c.pem", KeyFile: "k.pem", CaFile: "ca.pem", InsecureSkipTLSVerify: true, PlainHTTP: true,
		PassCredentialsAll: true, Verify: true, Keyring: "ring.gpg"}
	if diff := cmp.Diff(want, p.chart.path, cmpopts.IgnoreUnexported(action.ChartPathOptions{})); diff != "" {
		t.Errorf("ChartPathOptions (-want +got):\n%s", diff)
	}
	if !p.chart.devel || !p.chart.depUpdate {
		t.Errorf("--devel %v, --dependency-update %v", p.chart.devel, p.chart.depUpdate)
	}
	wantVals := map[string]any{"fromFile": true, "replicas": int64(3), "port": "8080",
		"limits": map[string]any{"cpu": "2"}, "raw": "a,b=c", "motd": "hello"}
	if diff := cmp.Diff(wantVals, l.vals); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
}

// TestDiffRefusesBeforeRendering: diff's flags that cannot work are
// refused by name before a chart is loaded or a cluster asked (the chart
// here does not exist, and no cluster is reachable).
func TestDiffRefusesBeforeRendering(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--dry-run=client"}, "diff --dry-run=client (no cluster) is not supported: use helm-inject template"},
		// helm-diff's bare --dry-run is client.
		{[]string{"--dry-run"}, "diff --dry-run=client (no cluster) is not supported"},
		{[]string{"--output", "dyff"}, `unknown --output "dyff"`},
		{[]string{"--suppress-output-line-regex", "(unclosed"}, `--suppress-output-line-regex "(unclosed"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
			_, errOut, code := runCLI(t, append([]string{"diff", "upgrade", "web", "./no-such-chart"}, tt.args...)...)
			if code != 1 || !strings.Contains(errOut, tt.want) || strings.Contains(errOut, "no-such-chart") {
				t.Errorf("exit %d, stderr %q; want 1 and %q (before the chart is read)", code, errOut, tt.want)
			}
		})
	}
	// --dry-run=server is how diff always works: accepted.
	cmd, d := diffCommand(cli.New(), "upgrade", "")
	if err := cmd.ParseFlags([]string{"--dry-run=server"}); err != nil || d.dryRunMode != "server" {
		t.Errorf("--dry-run=server: mode %q, error %v", d.dryRunMode, err)
	}
}

// TestValuesMode: helm's three values flags, each alone, none, and any
// two together refused.
func TestValuesMode(t *testing.T) {
	for _, tt := range []struct {
		reset, reuse, resetThen bool
		want                    release.ValuesMode
		wantErr                 bool
	}{
		{want: release.ValuesDefault},
		{reset: true, want: release.ValuesReset},
		{reuse: true, want: release.ValuesReuse},
		{resetThen: true, want: release.ValuesResetThenReuse},
		{reset: true, reuse: true, wantErr: true},
		{reuse: true, resetThen: true, wantErr: true},
		{reset: true, resetThen: true, wantErr: true},
	} {
		got, err := valuesMode(tt.reset, tt.reuse, tt.resetThen)
		if (err != nil) != tt.wantErr || !tt.wantErr && got != tt.want {
			t.Errorf("valuesMode(%v, %v, %v) = %v, %v", tt.reset, tt.reuse, tt.resetThen, got, err)
		}
	}
}

// TestFlagValueDefaults: --wait and --server-side print helm 4's default
// when unset (hookOnly, auto) and the value set otherwise.
func TestFlagValueDefaults(t *testing.T) {
	var strategy kube.WaitStrategy
	w := waitValue{&strategy}
	if w.String() != "hookOnly" {
		t.Errorf("--wait unset: %s", w.String())
	}
	if err := w.Set("legacy"); err != nil || w.String() != "legacy" {
		t.Errorf("--wait=legacy: %s, %v", w.String(), err)
	}
	var mode string
	s := serverSideValue{&mode}
	if s.String() != "auto" {
		t.Errorf("--server-side unset: %s", s.String())
	}
	if err := s.Set("false"); err != nil || s.String() != "false" {
		t.Errorf("--server-side=false: %s, %v", s.String(), err)
	}
}

// TestWriteConcurrencyBounds: --write-concurrency below 1 is refused naming
// the release; above the client's burst (HELM_BURST_LIMIT) it is that burst;
// a burst of 0 (client-go's default) leaves it as given.
func TestWriteConcurrencyBounds(t *testing.T) {
	cmd, a := applyCommand(cli.New())
	l := parsed(t, cmd, &a.releaseInputs, "--write-concurrency", "0")
	if _, err := a.newApply(l); err == nil || err.Error() != `release "web": --write-concurrency 0: must be 1 or more` {
		t.Errorf("--write-concurrency 0: %v", err)
	}
	for _, tc := range []struct {
		burst, flag string
		want        int
	}{
		{"8", "50", 8},
		{"8", "4", 4},
		// 0 is client-go's own default burst, not a limit of zero: the
		// flag is kept.
		{"0", "4", 4},
	} {
		t.Setenv("HELM_BURST_LIMIT", tc.burst)
		cmd, a = applyCommand(cli.New())
		l = parsed(t, cmd, &a.releaseInputs, "--write-concurrency", tc.flag)
		ap, err := a.newApply(l)
		if err != nil {
			t.Fatal(err)
		}
		if ap.WriteConcurrency != tc.want {
			t.Errorf("--write-concurrency %s with HELM_BURST_LIMIT=%s: %d, want %d", tc.flag, tc.burst, ap.WriteConcurrency, tc.want)
		}
	}
}
