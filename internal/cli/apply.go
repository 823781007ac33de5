package cli

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"
	"helm.sh/helm/v4/pkg/cli"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"

	"golang.org/x/term"

	"github.com/helm-inject/helm-inject/helmfile"
	"github.com/helm-inject/helm-inject/internal/progress"
	"github.com/helm-inject/helm-inject/internal/redact"
	"github.com/helm-inject/helm-inject/release"
)

const applyLong = `Render a chart, run every manifest (hooks and tests included) through the
injectors, write a temporary chart from the result and install or upgrade
the release with it (helm upgrade --install).

The release is an ordinary Helm release: helm list, status, get, history,
rollback, test and uninstall work on it. Everything that can reject your
input (rendering, injectors, their output) runs before anything is written
to the cluster.

When the chart, values, injectors and metadata are what the deployed
revision holds, apply reads the release's objects from the cluster before
it skips the upgrade. An object deleted, or a field the release sets
changed, outside helm makes a new revision that puts them back, as helm's
upgrade would; with server-side apply, fields another field manager now
owns are refused before anything is written, unless --force-conflicts.
What controllers and webhooks add is not drift. --skip-live-check trusts
the release record instead. With nothing to change, --wait still waits
and --recreate-pods still restarts; upgrade hooks and a new --description
make a new revision, as helm runs and stores them on every upgrade.

Ctrl-C or SIGTERM during the install leaves the new revision failed (with
--atomic: rolled back, or uninstalled on a first install), never pending;
the next apply continues from there. See docs/reliability.md.`

// applyFlags are the flags of apply and upgrade.
type applyFlags struct {
	releaseInputs
	// opts are bound to helm's flags of the same names.
	opts       release.Options
	dryRunMode string
	hideNotes  bool
	hideSecret bool
	output     string
	progress   string
	adopt      []string
	render     renderFlags
}

func (a *applyFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	a.releaseInputs.add(f)
	f.StringVar(&a.inputs.KeepChart, "keep-chart", "", "also write the temporary chart to this folder, to inspect it (a new or empty folder, or one --keep-chart wrote before and that holds only its files, which is replaced whole; written privately and renamed into place)")
	f.BoolVar(&a.opts.CreateNamespace, "create-namespace", false, "create the release namespace if not present")
	addWait(f, &a.opts.Wait)
	f.BoolVar(&a.opts.WaitForJobs, "wait-for-jobs", false, "with --wait, also wait until all Jobs have completed")
	f.DurationVar(&a.opts.Timeout, "timeout", 5*time.Minute, "time to wait for any individual Kubernetes operation (like Jobs for hooks)")
	f.BoolVar(&a.opts.RollbackOnFailure, "rollback-on-failure", false, "roll back (or uninstall, on a first install) if the operation fails; waits with the watcher unless --wait names another strategy")
	f.BoolVar(&a.opts.RollbackOnFailure, "atomic", false, "helm 3's name for --rollback-on-failure")
	f.IntVar(&a.opts.MaxHistory, "history-max", 10, "limit the maximum number of revisions saved per release; 0 for no limit")
	f.StringVar(&a.opts.Description, "description", "", "add a custom description")
	addDryRun(f, &a.dryRunMode, "simulate: render, inject and validate, then print what would be installed; --dry-run or =client, =server (lookups reach the cluster either way), =none for a real apply")
	f.BoolVar(&a.opts.DisableHooks, "no-hooks", false, "do not run hooks")
	f.BoolVar(&a.opts.SkipCRDs, "skip-crds", false, "do not install CRDs on a first install")
	f.BoolVar(&a.opts.ForceUpgrade, "force-upgrade", false, "upgrade even when the rendered release equals the deployed revision and the cluster matches it")
	f.BoolVar(&a.inputs.SkipLiveCheck, "skip-live-check", false, skipLiveCheckUsage)
	f.BoolVar(&a.opts.ForceReplace, "force-replace", false, "force resource updates by replacement, as helm 4")
	f.BoolVar(&a.opts.ForceReplace, "force", false, "helm 3's name for --force-replace")
	f.BoolVar(&a.opts.ForceConflicts, "force-conflicts", false, "with server-side apply, take over fields that other field managers own, as helm 4")
	addServerSide(f, &a.opts.ServerSide, serverSideUsage)
	f.BoolVar(&a.opts.CleanupOnFail, "cleanup-on-fail", false, "allow deletion of new resources created in this upgrade when it fails")
	f.BoolVar(&a.opts.DisableOpenAPIValidation, "disable-openapi-validation", false, "do not validate rendered templates against the Kubernetes OpenAPI schema")
	f.BoolVar(&a.opts.TakeOwnership, "take-ownership", false, "take ownership of existing resources that carry no (or other) Helm annotations, as helm's --take-ownership")
	f.IntVar(&a.opts.WriteConcurrency, "write-concurrency", release.DefaultWriteConcurrency, "how many objects an upgrade writes at once within each group of helm's install order, and an install or upgrade reads at once for helm's check of the objects it adds (1: one after the other, as helm); at most HELM_BURST_LIMIT")
	f.StringToStringVarP(&a.inputs.Labels, "labels", "l", nil, "labels added to the release metadata, merged with the last revision's (a label set to null is removed)")
	f.BoolVar(&a.hideNotes, "hide-notes", false, "do not print the notes (they are still stored in the release)")
	f.BoolVar(&a.hideSecret, "hide-secret", false, "with --dry-run, print Secrets of the manifest as a comment")
	f.BoolVar(&a.opts.Recreate, "recreate-pods", false, "restart the pods of the release's workloads after an upgrade (helm's deprecated --recreate-pods)")
	f.StringVarP(&a.output, "output", "o", "table", "print the result as table, json or yaml (the release object, as helm does)")
	f.StringVar(&a.progress, "progress", "auto", "show on stderr what the apply waits for (workloads with --wait, hook Jobs) and injectors that run long: "+progressModes)
	a.render.add(f, true)
	f.StringArrayVar(&a.adopt, "adopt", nil, "helm-x's --adopt KIND/NAME (helmfile's adopt:): take ownership of existing resources, as --take-ownership does for every resource")
}

func newApplyCommand(settings *cli.EnvSettings) *cobra.Command {
	cmd, _ := applyCommand(settings)
	return cmd
}

func newUpgradeCommand(settings *cli.EnvSettings) *cobra.Command {
	cmd, _ := upgradeCommand(settings)
	return cmd
}

// applyCommand builds apply and returns the flags it parses into. apply
// always installs a missing release; its -i/--install is accepted and does
// nothing.
func applyCommand(settings *cli.EnvSettings) (*cobra.Command, *applyFlags) {
	cmd, a := applyOrUpgrade(settings, "apply", "Install or upgrade a release with sidecars injected", applyLong)
	a.opts.Install = true
	noop(cmd.Flags(), "install", "i", noopBool(), "apply always installs a release that does not exist yet")
	return cmd, a
}

// upgradeCommand builds upgrade, apply under helm's name, and returns the
// flags it parses into.
func upgradeCommand(settings *cli.EnvSettings) (*cobra.Command, *applyFlags) {
	cmd, a := applyOrUpgrade(settings, "upgrade", "Same as apply, under helm's name (with -i/--install to install a missing release)",
		applyLong+"\n\nWithout --install, upgrade refuses a release that does not exist yet, as helm does.")
	cmd.Flags().BoolVarP(&a.opts.Install, "install", "i", false, "install the release if it does not exist")
	return cmd, a
}

func applyOrUpgrade(settings *cli.EnvSettings, name, short, long string) (*cobra.Command, *applyFlags) {
	a := &applyFlags{}
	cmd := &cobra.Command{
		Use:   name + " NAME CHART",
		Short: short,
		Long:  long,
		Args:  exactArgs(2, "a release NAME and a CHART"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.run(cmd, settings, args)
		},
	}
	a.add(cmd)
	return cmd, a
}

func (a *applyFlags) run(cmd *cobra.Command, settings *cli.EnvSettings, args []string) error {
	if a.hideSecret && !a.dryRun() {
		return fmt.Errorf("--hide-secret needs --dry-run (as in helm)")
	}
	if err := checkOutput(a.output); err != nil {
		return err
	}
	rep, err := progressReporter(a.progress, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	l, err := a.load(cmd, settings, args)
	if err != nil {
		return err
	}
	ap, err := a.newApply(l)
	if err != nil {
		return err
	}
	ap.Progress, ap.Injectors.Slow = rep, rep.Slow
	res, err := ap.Run(cmd.Context(), l.name, l.src, l.vals)
	if err != nil {
		return err
	}
	return printRelease(cmd.OutOrStdout(), res, printReleaseOptions{dryRun: ap.DryRun, hideNotes: a.hideNotes, hideSecret: a.hideSecret, output: a.output})
}

// skipLiveCheckUsage is --skip-live-check's help on apply and diff.
const skipLiveCheckUsage = "when nothing changed in the chart, trust the release record instead of reading the release's objects from the cluster: faster, but an object deleted or edited outside helm stays so (helm's upgrade would put it back)"

// progressModes is the end of every --progress usage.
const progressModes = "auto (redrawn in place on a terminal, a line per change otherwise; none when helmfile runs helm-inject as helm), plain or none"

// progressReporter reads --progress; a nil Reporter (none) shows nothing,
// and its Slow is a no-op for the injector pipeline.
func progressReporter(flag string, stderr io.Writer) (*progress.Reporter, error) {
	mode, err := progressMode(flag, stderr)
	if err != nil {
		return nil, err
	}
	return progress.New(stderr, mode), nil
}

// progressMode reads --progress: auto is live on a terminal, plain
// otherwise, and none when helmfile runs helm-inject as its helm (helm
// prints no progress, and helmfile's output stays what it was).
func progressMode(flag string, stderr io.Writer) (progress.Mode, error) {
	if flag == string(progress.Auto) && os.Getenv(helmfile.EnvAsHelm) != "" {
		return progress.None, nil
	}
	f, ok := stderr.(*os.File)
	return progress.ParseMode(flag, ok && term.IsTerminal(int(f.Fd())))
}

// newApply builds the release.Apply the flags describe.
// dryRun reports whether --dry-run asked for a simulation: any mode but
// none (client and server alike: apply's lookups reach the cluster either
// way).
func (a *applyFlags) dryRun() bool { return a.dryRunMode != "" }

func (a *applyFlags) newApply(l *loaded) (*release.Apply, error) {
	rf, err := a.render.flags(l.ctx, l.settings, nil)
	if err != nil {
		return nil, fmt.Errorf("release %q: %w", l.name, err)
	}
	if a.opts.WriteConcurrency < 1 {
		return nil, fmt.Errorf("release %q: --write-concurrency %d: must be 1 or more", l.name, a.opts.WriteConcurrency)
	}
	ap := release.NewApply(l.cfg)
	ap.Inputs = l.inputs
	ap.Render = rf
	ap.Options = a.opts
	// The client's burst (HELM_BURST_LIMIT, helm's --burst-limit) bounds
	// the requests in flight too.
	if b := l.settings.BurstLimit; b > 0 && ap.WriteConcurrency > b {
		ap.WriteConcurrency = b
	}
	ap.DryRun = a.dryRun()
	// helm-x's --adopt takes ownership as --take-ownership does.
	ap.TakeOwnership = a.opts.TakeOwnership || len(a.adopt) > 0
	return ap, nil
}

type printReleaseOptions struct {
	dryRun, hideNotes, hideSecret bool
	output                        string
}

// printRelease reports the outcome like helm install/upgrade do; -o json
// and -o yaml print the release object instead, as helm does.
func printRelease(w io.Writer, res *release.Result, o printReleaseOptions) error {
	rel := res.Release
	if done, err := writeStructured(w, o.output, rel); done {
		return err
	}
	if res.Unchanged {
		switch {
		case !res.LiveChecked:
			fmt.Fprintf(w, "Release %q has no changes; it stays at revision %d (the cluster was not read: --skip-live-check).\n", rel.Name, rel.Version)
		case res.Waited:
			fmt.Fprintf(w, "Release %q has no changes; the cluster matches revision %d, and its resources are ready.\n", rel.Name, rel.Version)
		default:
			fmt.Fprintf(w, "Release %q has no changes; the cluster matches revision %d.\n", rel.Name, rel.Version)
		}
		return nil
	}
	if len(res.Drift) > 0 {
		fmt.Fprintf(w, "The chart has not changed, but the cluster differed from revision %d:\n", rel.Version-1)
		for _, line := range release.DriftLines(res.Drift) {
			fmt.Fprintf(w, "  %s\n", line)
		}
	}
	verb := "upgraded"
	if res.Installed {
		verb = "installed"
	}
	if o.dryRun {
		m := rel.Manifest
		if o.hideSecret {
			var err error
			if m, err = release.HideSecrets(m); err != nil {
				return fmt.Errorf("release %q: %w", rel.Name, err)
			}
		}
		fmt.Fprintf(w, "Release %q would be %s (dry run). Manifest:\n%s", rel.Name, verb, m)
		return nil
	}
	fmt.Fprintf(w, "Release %q has been %s.\n", rel.Name, verb)
	printStatus(w, rel, o.hideNotes)
	return nil
}

func printStatus(w io.Writer, rel *helmrelease.Release, hideNotes bool) {
	fmt.Fprintf(w, "NAME: %s\n", rel.Name)
	if !rel.Info.LastDeployed.IsZero() {
		fmt.Fprintf(w, "LAST DEPLOYED: %s\n", rel.Info.LastDeployed.Format(time.ANSIC))
	}
	fmt.Fprintf(w, "NAMESPACE: %s\nSTATUS: %s\nREVISION: %d\n", rel.Namespace, rel.Info.Status, rel.Version)
	if rel.Chart != nil && rel.Chart.Metadata != nil {
		fmt.Fprintf(w, "CHART: %s-%s\n", rel.Chart.Metadata.Name, rel.Chart.Metadata.Version)
	}
	if rel.Info.Notes != "" && !hideNotes {
		fmt.Fprintf(w, "NOTES:\n%s\n", rel.Info.Notes)
	}
}

// debugLog returns Helm's log handler when --debug is set (nil, which
// discards the log, otherwise): every record on one line led by "[debug]",
// with credentials in URLs hidden.
func debugLog(settings *cli.EnvSettings, w io.Writer) slog.Handler {
	if !settings.Debug {
		return nil
	}
	return slog.NewTextHandler(redactedLines{w}, &slog.HandlerOptions{
		Level: slog.LevelDebug,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{} // the time adds nothing to a command's log
			}
			return a
		},
	})
}

// redactedLines writes each record the handler gives it (one Write per
// record) led by "[debug]", with URL credentials hidden.
type redactedLines struct{ w io.Writer }

func (r redactedLines) Write(p []byte) (int, error) {
	if _, err := fmt.Fprint(r.w, "[debug] ", redact.URLs(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
