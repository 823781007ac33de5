package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"helm.sh/helm/v3/pkg/cli"

	"github.com/helm-inject/helm-inject/release"
)

const templateLong = `Render a chart, run it through the injectors and print the result, like
helm template. No cluster is contacted: lookup returns nothing and the
capabilities are Helm's defaults (override with --kube-version and
--api-versions).

What is printed is exactly what apply would install: the documents of the
temporary chart, in the order and with the "# Source:" paths Helm gives
them when it renders that chart.`

func newTemplateCommand(settings *cli.EnvSettings) *cobra.Command {
	var (
		chart       chartFlags
		injectors   injectFlags
		t           release.Template
		print       release.PrintOptions
		apiVersions []string
		showOnly    []string
		outputDir   string
		injectDir   string
	)
	cmd := &cobra.Command{
		Use:   "template NAME CHART",
		Short: "Print a chart's manifests with sidecars injected",
		Long:  templateLong,
		Args:  exactArgs(2, "a release NAME and a CHART"),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := injectors.pipeline()
			if err != nil {
				return fmt.Errorf("release %q: %w", args[0], err)
			}
			src, vals, err := chart.load(cmd.Context(), settings, args[1], cmd.ErrOrStderr())
			if err != nil {
				return fmt.Errorf("release %q: %w", args[0], err)
			}
			t.Namespace = settings.Namespace()
			t.APIVersions = splitComma(apiVersions)
			t.Pipeline = p
			t.InjectDir = injectDir
			r, err := t.Run(cmd.Context(), args[0], src, vals)
			if err != nil {
				return err
			}
			print.ShowOnly = splitComma(showOnly)
			if outputDir != "" {
				return release.WriteManifestsToDir(outputDir, r, print)
			}
			return release.WriteManifests(cmd.OutOrStdout(), r, print)
		},
	}
	f := cmd.Flags()
	chart.add(f)
	injectors.add(f)
	f.StringVar(&injectDir, "injector-dir", "", "working directory of injector commands (default: the current directory)")
	f.StringVar(&t.KubeVersion, "kube-version", "", "Kubernetes version used for Capabilities.KubeVersion")
	f.StringSliceVarP(&apiVersions, "api-versions", "a", nil, "Kubernetes api versions used for Capabilities.APIVersions")
	f.BoolVar(&t.IsUpgrade, "is-upgrade", false, "set .Release.IsUpgrade instead of .Release.IsInstall")
	f.BoolVar(&print.IncludeCRDs, "include-crds", false, "include CRDs in the templated output")
	f.BoolVar(&print.DisableHooks, "no-hooks", false, "prevent hooks from being printed")
	f.BoolVar(&print.SkipTests, "skip-tests", false, "skip tests from templated output")
	f.StringArrayVarP(&showOnly, "show-only", "s", nil, "only show manifests rendered from the given templates")
	f.StringVar(&outputDir, "output-dir", "", "write the manifests to files in this folder instead of stdout")
	f.BoolVar(&t.SkipSchemaValidation, "skip-schema-validation", false, "disable JSON schema validation")
	f.StringVar(&t.KeepChart, "keep-chart", "", "also write the temporary chart to this folder, to inspect it")
	return cmd
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
