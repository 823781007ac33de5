package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"helm.sh/helm/v4/pkg/cli"

	"github.com/helm-inject/helm-inject/release"
)

const diffLong = `Show what apply would change, without changing anything: render, inject and
build the temporary chart exactly as apply does, then compare the result with
the deployed revision's manifest and hooks, resource by resource.

Secret values are masked unless --show-secrets. With --detailed-exitcode the
exit code is 2 when there are changes, 0 when there are none and 1 on error.

With --three-way-merge (helm-diff's flag) each object is compared with its
live object instead of the release record: the fields the new manifest sets
as the cluster has them now (defaults the API server adds left out) against
the new manifest, so drift shows before an apply. A container, init
container or volume the cluster added shows too, with a "drift:" line: an
apply does not remove it (see docs/live.md). Hooks are compared with the
release record. --detailed-exitcode then exits 2 when the cluster differs
from what apply would send.

"diff upgrade [--allow-unreleased] NAME CHART" is the same command in
helm-diff's spelling.`

type diffFlags struct {
	releaseInputs
	unreleased    bool
	install       bool
	detailedExit  bool
	threeWay      bool
	print         release.DiffPrintOptions
	output        string
	color         bool
	noColor       bool
	suppressLines []string
	apiVersions   []string
	dryRunMode    string
	progress      string
	render        renderFlags
	// serverSide is helm-diff's --server-side (helmfile passes it with
	// helm 4): the apply method the apply would be given.
	serverSide string
}

func (d *diffFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	d.releaseInputs.add(f)
	f.BoolVar(&d.unreleased, "allow-unreleased", false, "a release that does not exist yet shows every resource as added, instead of an error")
	f.BoolVar(&d.detailedExit, "detailed-exitcode", false, "exit 2 when there are changes, 0 when there are none")
	f.IntVarP(&d.print.Context, "context", "C", 3, "lines of unchanged context around each change")
	f.StringVar(&d.output, "output", "diff", "output format: diff, simple (names only) or json")
	f.StringVar(&d.progress, "progress", "auto", "show on stderr injectors that run long: "+progressModes)
	f.BoolVar(&d.print.ShowSecrets, "show-secrets", false, "show Secret values instead of masking them")
	f.BoolVar(&d.color, "color", false, "color the output even when it is not a terminal")
	f.BoolVar(&d.noColor, "no-color", false, "never color the output")
	f.StringVar(&d.inputs.KubeVersion, "kube-version", "", "Kubernetes version for .Capabilities.KubeVersion (default: the server's)")
	f.BoolVar(&d.install, "install", false, "same as --allow-unreleased (helm-diff's spelling for helm upgrade --install)")
	f.BoolVarP(&d.print.SuppressSecrets, "suppress-secrets", "q", false, "leave Secrets out of the output")
	f.BoolVar(&d.print.NoHooks, "no-hooks", false, "leave hooks out of the output (their changes still count for --detailed-exitcode); as with apply --no-hooks, the chart's upgrade hooks alone make no new revision")
	f.BoolVar(&d.print.IncludeTests, "include-tests", false, "show changes of helm test hooks too (hidden by default, as in helm-diff; they always count for --detailed-exitcode)")
	f.StringArrayVar(&d.print.Suppress, "suppress", nil, "leave resources of this kind out of the output (repeatable)")
	f.StringArrayVar(&d.suppressLines, "suppress-output-line-regex", nil, "leave changed lines matching this regular expression out of the output (repeatable)")
	f.BoolVar(&d.print.StripTrailingCR, "strip-trailing-cr", false, "ignore carriage returns at the ends of lines")
	f.StringSliceVarP(&d.apiVersions, "api-versions", "a", nil, "Kubernetes api versions added to Capabilities.APIVersions")
	d.render.add(f, false)
	f.StringToStringVarP(&d.inputs.Labels, "labels", "l", nil, "the --labels apply would be given: a change of the release's labels counts as a change")
	addServerSide(f, &d.serverSide, "the apply method apply would be given (helm-diff's flag): true or false on a release the other method deployed counts as a change; auto (the default) follows the release")
	addDryRun(f, &d.dryRunMode, "--dry-run=server is how diff always works (lookups reach the cluster); client (no cluster) is refused: use helm-inject template")
	// helm-diff validates the new manifests against the cluster's OpenAPI
	// schema unless told not to; diff renders and compares, and never sends
	// them to the server, so there is no validation to turn off.
	noop(f, "disable-validation", "", noopBool(), "diff never validates the rendered manifests against the server (apply does, unless --disable-openapi-validation)")
	noop(f, "disable-openapi-validation", "", noopBool(), "diff never validates the rendered manifests against the server's OpenAPI schema (apply does)")
	noop(f, "normalize-manifests", "", noopBool(), "both sides are compared as documents after Helm's own rendering, not as raw text")
	noop(f, "find-renames", "D", noopString(), "resources are paired by kind, namespace and name; a renamed one shows as removed and added")
	noop(f, "take-ownership", "", noopBool(), "the diff is against the release record; resources an apply would take over show as added")
	noop(f, "adopt", "", noopString(), "the diff is against the release record; resources an apply would adopt show as added")
	f.BoolVar(&d.threeWay, "three-way-merge", false, "compare with the live objects instead of the release record: drift shows (see docs/live.md)")
	f.BoolVar(&d.inputs.SkipLiveCheck, "skip-live-check", false, skipLiveCheckUsage)
	refuse(f, "suppress-annotation", "", false, "use --suppress-output-line-regex")
	refuse(f, "suppress-label", "", false, "use --suppress-output-line-regex")
}

func newDiffCommand(settings *cli.EnvSettings) *cobra.Command {
	cmd, _ := diffCommand(settings, "diff NAME CHART", "Show what apply would change")
	upgrade, _ := diffCommand(settings, "upgrade NAME CHART", "diff in helm-diff's spelling (helm diff upgrade)")
	cmd.AddCommand(upgrade)
	return cmd
}

// diffCommand builds one diff command with its own flags; "diff" and
// "diff upgrade" are the same command under two spellings.
func diffCommand(settings *cli.EnvSettings, use, short string) (*cobra.Command, *diffFlags) {
	d := &diffFlags{}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long:  diffLong,
		Args:  exactArgs(2, "a release NAME and a CHART"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return d.run(cmd, settings, args)
		},
	}
	d.add(cmd)
	return cmd, d
}

func (d *diffFlags) run(cmd *cobra.Command, settings *cli.EnvSettings, args []string) error {
	if d.dryRunMode == "client" {
		return errors.New("diff --dry-run=client (no cluster) is not supported: use helm-inject template to render without a cluster")
	}
	// The display flags are checked before anything is rendered.
	print, err := d.printOptions(cmd.OutOrStdout())
	if err != nil {
		return err
	}
	rep, err := progressReporter(d.progress, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	l, err := d.load(cmd, settings, args)
	if err != nil {
		return err
	}
	l.inputs.Injectors.Slow = rep.Slow
	df, err := d.newDiff(l)
	if err != nil {
		return err
	}
	res, err := df.Run(cmd.Context(), l.name, l.src, l.vals)
	if err != nil {
		return err
	}
	if err := release.WriteDiff(cmd.OutOrStdout(), res, print); err != nil {
		return err
	}
	if d.detailedExit && res.HasChanges() {
		return exitError{code: 2}
	}
	return nil
}

// printOptions are the display flags; color follows --color and
// --no-color, else whether out is a terminal. An unknown --output or a
// --suppress-output-line-regex that does not compile is an error.
func (d *diffFlags) printOptions(out io.Writer) (release.DiffPrintOptions, error) {
	p := d.print
	p.Output = release.DiffOutput(d.output)
	switch p.Output {
	case release.DiffOutputDiff, release.DiffOutputSimple, release.DiffOutputJSON:
	default:
		return p, fmt.Errorf("unknown --output %q (want diff, simple or json; helm-diff's template and dyff are not supported)", d.output)
	}
	p.SuppressLines = nil
	for _, expr := range d.suppressLines {
		re, err := regexp.Compile(expr)
		if err != nil {
			return p, fmt.Errorf("--suppress-output-line-regex %q: %w", expr, err)
		}
		p.SuppressLines = append(p.SuppressLines, re)
	}
	p.Color = !d.noColor && (d.color || isTerminal(out))
	return p, nil
}

// newDiff builds the release.Diff the flags describe.
func (d *diffFlags) newDiff(l *loaded) (*release.Diff, error) {
	rf, err := d.render.flags(l.ctx, l.settings, d.apiVersions)
	if err != nil {
		return nil, fmt.Errorf("release %q: %w", l.name, err)
	}
	df := release.NewDiff(l.cfg)
	df.Inputs = l.inputs
	df.Render = rf
	df.AllowUnreleased = d.unreleased || d.install
	df.ServerSide = d.serverSide
	df.ThreeWayMerge = d.threeWay
	df.DisableHooks = d.print.NoHooks
	return df, nil
}

func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// valuesMode maps Helm's three mutually exclusive values flags.
func valuesMode(reset, reuse, resetThen bool) (release.ValuesMode, error) {
	n := 0
	for _, b := range []bool{reset, reuse, resetThen} {
		if b {
			n++
		}
	}
	switch {
	case n > 1:
		return 0, errors.New("--reset-values, --reuse-values and --reset-then-reuse-values exclude each other")
	case reset:
		return release.ValuesReset, nil
	case reuse:
		return release.ValuesReuse, nil
	case resetThen:
		return release.ValuesResetThenReuse, nil
	}
	return release.ValuesDefault, nil
}
