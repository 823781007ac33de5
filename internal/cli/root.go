// Package cli parses helm-inject's command line into the option structs of
// the chartify, inject and release packages and runs them. It holds no logic
// of its own beyond flag parsing and output formatting.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"helm.sh/helm/v4/pkg/cli"

	"github.com/helm-inject/helm-inject/internal/confine"
	"github.com/helm-inject/helm-inject/internal/redact"
	"github.com/helm-inject/helm-inject/release"
)

const rootLong = `helm-inject renders a Helm chart, injects sidecars into every rendered
manifest with the injectors you declare, and installs the result as an
ordinary Helm release, so helm list, status, get, history, rollback, test
and uninstall keep working.

No mutating webhook is involved: the injectors used, and the version of
each built-in one, are recorded in the release itself.`

// exitError carries a specific exit code (for example diff's
// --detailed-exitcode) up to Run without printing anything more.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// Run executes helm-inject with args and returns the process exit code.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	settings := cli.New()
	root := newRootCommandWith(settings, stdin, stdout, stderr)
	root.SetArgs(joinServerSide(args))
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var ee exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	err = release.ExplainClusterError(err, settings)
	// Errors often quote a chart URL (an injector spec is redacted where
	// the error names it), and names a release record holds (its objects'),
	// whose control characters are escaped.
	fmt.Fprintf(stderr, "Error: %s\n", printableText(redact.URLs(err.Error())))
	return 1
}

func newRootCommand(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	return newRootCommandWith(cli.New(), stdin, stdout, stderr)
}

// newRootCommandWith builds the command tree around settings, which the
// global flags (helm's own) parse into.
func newRootCommandWith(settings *cli.EnvSettings, stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	return newRootCommandOn(settings, confine.Kernel{}, stdin, stdout, stderr)
}

// newRootCommandOn is newRootCommandWith on a kernel whose Landlock tests
// may stand for another.
func newRootCommandOn(settings *cli.EnvSettings, kernel confine.Kernel, stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "helm-inject",
		Short:         "Declarative, version-pinned sidecar injection for Helm releases",
		Long:          rootLong,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	settings.AddFlags(root.PersistentFlags())
	root.AddCommand(
		newTemplateCommand(settings, kernel),
		newPackageCommand(settings),
		newPushCommand(settings),
		newApplyCommand(settings),
		newUpgradeCommand(settings),
		newDiffCommand(settings),
		newStatusCommand(settings),
		newListCommand(settings),
		newInjectorsCommand(),
		newHelmfileCommand(),
		newPostRenderCommand(kernel),
		newArgocdCommand(kernel),
		newVersionCommand(),
	)
	addCompletions(root, settings)
	return root
}
