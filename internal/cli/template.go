package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"helm.sh/helm/v4/pkg/action"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/cli"

	"github.com/helm-inject/helm-inject/inject"
	"github.com/helm-inject/helm-inject/internal/confine"
	"github.com/helm-inject/helm-inject/manifest"
	"github.com/helm-inject/helm-inject/release"
)

const templateLong = `Render a chart, run it through the injectors and print the result, like
helm template. No cluster is contacted: lookup returns nothing and the
capabilities are Helm's defaults (override with --kube-version and
--api-versions).

What is printed is exactly what apply would install: the documents of the
temporary chart, in the order and with the "# Source:" paths Helm gives
them when it renders that chart.`

// templateFlags are the flags of template.
type templateFlags struct {
	chart       chartFlags
	injectors   injectFlags
	render      renderFlags
	t           release.Template
	print       release.PrintOptions
	apiVersions []string
	showOnly    []string
	outputDir   string
	useName     bool
	dryRunMode  string
	pinsFile    string
	progress    string
	confine     bool
	// generateName and nameTemplate name the release when no NAME is
	// given, as helm template's -g and --name-template.
	generateName bool
	nameTemplate string
}

func newTemplateCommand(settings *cli.EnvSettings, kernel confine.Kernel) *cobra.Command {
	tf := &templateFlags{}
	cmd := &cobra.Command{
		Use:   "template [NAME] CHART",
		Short: "Print a chart's manifests with sidecars injected",
		Long:  templateLong,
		Args:  rangeArgs(1, 2, "a CHART, after an optional release NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, ref, err := tf.nameAndChart(args)
			if err != nil {
				return err
			}
			return tf.run(cmd, settings, kernel, []string{name, ref})
		},
	}
	tf.add(cmd.Flags())
	return cmd
}

func (tf *templateFlags) run(cmd *cobra.Command, settings *cli.EnvSettings, kernel confine.Kernel, args []string) error {
	t := &tf.t
	rep, err := progressReporter(tf.progress, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	p, err := tf.injectors.declared()
	if err != nil {
		return fmt.Errorf("release %q: %w", args[0], err)
	}
	p.Slow = rep.Slow
	if tf.confine {
		// The injectors are parsed (and the library loaded); the chart
		// and its values are the untrusted part, read confined.
		cleanup, err := tf.confineRender(kernel, args[1], p, cmd.ErrOrStderr())
		if err != nil {
			return fmt.Errorf("release %q: %w", args[0], err)
		}
		defer cleanup()
	}
	if t.Render, err = tf.render.flags(cmd.Context(), settings, tf.apiVersions); err != nil {
		return fmt.Errorf("release %q: %w", args[0], err)
	}
	src, vals, err := tf.chart.load(cmd.Context(), settings, args[1], cmd.ErrOrStderr())
	if err != nil {
		return fmt.Errorf("release %q: %w", args[0], err)
	}
	if t.Validate || tf.dryRunMode == "server" {
		// As helm template: --validate and --dry-run=server talk to the
		// cluster, for its capabilities and live lookups.
		if t.Cluster, err = release.NewConfiguration(settings, settings.Namespace(), debugLog(settings, cmd.ErrOrStderr())); err != nil {
			return err
		}
	}
	t.Namespace = settings.Namespace()
	t.Injectors = p
	if tf.pinsFile != "" {
		if t.Pins, err = inject.ReadPins(tf.pinsFile); err != nil {
			return fmt.Errorf("release %q: %w", args[0], err)
		}
	}
	r, err := t.Run(cmd.Context(), args[0], src, vals)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(r.Documents, manifest.Document.IsObject) {
		// As helm template, nothing (or comments only) is printed and the
		// command succeeds; the line tells why the output is empty.
		fmt.Fprintf(cmd.ErrOrStderr(), "release %q: %s rendered no Kubernetes object\n", args[0], args[1])
	}
	tf.print.ShowOnly = splitComma(tf.showOnly)
	if tf.outputDir != "" {
		dir := tf.outputDir
		if tf.useName {
			dir = filepath.Join(dir, args[0])
		}
		return release.WriteManifestsToDir(dir, r, tf.print)
	}
	return release.WriteManifests(cmd.OutOrStdout(), r, tf.print)
}

func (tf *templateFlags) add(f *pflag.FlagSet) {
	t := &tf.t
	tf.chart.add(f)
	tf.injectors.add(f)
	tf.render.add(f, false)
	f.StringVar(&tf.progress, "progress", "auto", "show on stderr injectors that run long: "+progressModes)
	f.BoolVar(&tf.confine, "confine", false, templateConfineUsage)
	f.StringVar(&t.InjectDir, "injector-dir", "", "working directory of injector commands (default: the current directory)")
	f.StringVar(&t.KubeVersion, "kube-version", "", "Kubernetes version used for Capabilities.KubeVersion")
	f.StringSliceVarP(&tf.apiVersions, "api-versions", "a", nil, "Kubernetes api versions used for Capabilities.APIVersions")
	f.BoolVar(&t.IsUpgrade, "is-upgrade", false, "set .Release.IsUpgrade instead of .Release.IsInstall")
	f.BoolVar(&tf.print.IncludeCRDs, "include-crds", false, "include CRDs in the templated output")
	f.BoolVar(&tf.print.DisableHooks, "no-hooks", false, "prevent hooks from being printed")
	f.BoolVar(&tf.print.SkipTests, "skip-tests", false, "skip tests from templated output")
	f.BoolVar(&tf.print.HideSecret, "hide-secret", false, "print Secrets of the manifest as a comment")
	f.StringArrayVarP(&tf.showOnly, "show-only", "s", nil, "only show manifests rendered from the given templates")
	f.StringVar(&tf.outputDir, "output-dir", "", "write the manifests to files in this folder instead of stdout")
	f.BoolVar(&tf.useName, "release-name", false, "with --output-dir, write into a folder named after the release")
	f.BoolVar(&t.SkipSchemaValidation, "skip-schema-validation", false, "disable JSON schema validation")
	f.StringVar(&tf.pinsFile, "injector-pins", "", "inject exactly the built-in injector versions this pins file names (helm-inject-pins.yaml, written by \"helm-inject argocd pin\"); a built-in injector without a pin is an error")
	f.StringVar(&t.KeepChart, "keep-chart", "", "also write the temporary chart to this folder, to inspect it (a new or empty folder, or one --keep-chart wrote before and that holds only its files, which is replaced whole; written privately and renamed into place)")
	f.BoolVar(&t.Validate, "validate", false, "render with the cluster's capabilities and live lookups, and validate the result against the cluster's API, as an install would")
	addDryRun(f, &tf.dryRunMode, "--dry-run=server renders with the cluster's capabilities and live lookups, as helm template does; client and none render offline")
	// helm template accepts every install flag; these change what an
	// install does, not what it renders.
	notInstalled := "template installs nothing"
	for _, name := range []string{"create-namespace", "wait-for-jobs", "atomic", "rollback-on-failure", "force", "force-replace", "force-conflicts", "replace", "disable-openapi-validation", "take-ownership", "hide-notes", "skip-crds", "render-subchart-notes"} {
		noop(f, name, "", noopBool(), notInstalled)
	}
	// helm 4's --wait and --server-side take a value, or none.
	for name, alone := range map[string]string{"wait": "watcher", "server-side": "true"} {
		noop(f, name, "", noopString(), notInstalled)
		f.Lookup(name).NoOptDefVal = alone
	}
	noop(f, "timeout", "", noopDuration(), notInstalled)
	noop(f, "description", "", noopString(), notInstalled)
	noop(f, "labels", "l", noopString(), notInstalled)
	noop(f, "adopt", "", noopString(), notInstalled)
	f.BoolVarP(&tf.generateName, "generate-name", "g", false, "generate the name (and omit the NAME parameter)")
	f.StringVar(&tf.nameTemplate, "name-template", "", "specify template used to name the release")
}

// nameAndChart reads the release name and chart from the arguments as
// helm template does, with Helm's own rules: NAME CHART, or CHART alone
// with --name-template, or "release-name".
func (tf *templateFlags) nameAndChart(args []string) (string, string, error) {
	install := action.Install{GenerateName: tf.generateName, NameTemplate: tf.nameTemplate, ReleaseName: "release-name"}
	name, ref, err := install.NameAndChart(args)
	if err != nil {
		return "", "", err
	}
	if err := chartutil.ValidateReleaseName(name); err != nil {
		return "", "", fmt.Errorf("release name check failed: %w", err)
	}
	return name, ref, nil
}

// confineRender confines template for --confine: it refuses what would
// reach the network, a cluster or a file it was not given, then reads
// only the chart, the values and set-file files, the library, the pins
// file and --injector-dir, and writes only --output-dir.
func (tf *templateFlags) confineRender(kernel confine.Kernel, ref string, d *inject.Declared, stderr io.Writer) (func(), error) {
	for flag, set := range map[string]bool{
		"--repo": tf.chart.path.RepoURL != "", "--dependency-update": tf.chart.depUpdate, "--verify": tf.chart.path.Verify,
		"--validate": tf.t.Validate, "--dry-run=server": tf.dryRunMode == "server", "--enable-dns": tf.render.enableDNS,
		"--post-renderer": tf.render.postRenderer != "", "--keep-chart": tf.t.KeepChart != "",
	} {
		if set {
			return nil, fmt.Errorf("--confine renders from the files it is given, with no network: it cannot be used with %s", flag)
		}
	}
	if _, err := os.Stat(ref); err != nil {
		return nil, fmt.Errorf("--confine renders a local chart (a folder or an archive): %s: %w", ref, err)
	}
	p := confine.Policy{
		Read: existing(slices.Concat([]string{ref, tf.pinsFile, tf.t.InjectDir, tf.injectors.libraryUsed()},
			tf.chart.values.ValueFiles, setFilePaths(tf.chart.values.FileValues))...),
		Exec: injectorPrograms(d, tf.t.InjectDir),
	}
	if tf.outputDir != "" {
		if err := os.MkdirAll(tf.outputDir, 0o755); err != nil {
			return nil, err
		}
		p.Write = existing(tf.outputDir)
	}
	tf.chart.offline = true
	return confineRender(kernel, confine.Required, p, stderr)
}

// rangeArgs is cobra.RangeArgs with a message that says what is expected.
func rangeArgs(least, most int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < least || len(args) > most {
			return fmt.Errorf("%q needs %s (got %d arguments)\n\nUsage:  %s", cmd.CommandPath(), what, len(args), cmd.UseLine())
		}
		return nil
	}
}

// exactArgs is cobra.ExactArgs with a message that says what is expected.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return fmt.Errorf("%q needs %s (got %d arguments)\n\nUsage:  %s", cmd.CommandPath(), what, len(args), cmd.UseLine())
		}
		return nil
	}
}
