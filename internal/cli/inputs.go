package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/cli"

	"github.com/helm-inject/helm-inject/helmfile"
	"github.com/helm-inject/helm-inject/inject"
	"github.com/helm-inject/helm-inject/release"
)

// releaseInputs are the flags that say what a release is made of, shared by
// apply, upgrade and diff: the chart and its values, the injectors and how
// their versions are chosen, and how the previous values are treated.
type releaseInputs struct {
	chart     chartFlags
	injectors injectFlags
	// inputs are bound to the flags that set them directly; load fills
	// in the rest (namespace, values mode, strategy, pipeline).
	inputs      release.Inputs
	resetValues bool
	reuseValues bool
	resetThen   bool
	reconcile   string
}

func (in *releaseInputs) add(f *pflag.FlagSet) {
	in.chart.add(f)
	in.injectors.add(f)
	// Only where a revision records the program: template and post-render
	// record nothing.
	in.injectors.recordsPrograms = true
	f.StringArrayVar(&in.injectors.versions, "injector-version", nil, "how to ask an external injector's program its version, recorded with each revision: PROGRAM=COMMAND, e.g. \"istioctl=istioctl version --remote=false\" (repeatable)")
	f.StringVar(&in.inputs.InjectDir, "injector-dir", "", "working directory of injector commands (default: the current directory)")
	f.BoolVar(&in.resetValues, "reset-values", false, "when upgrading, reset the values to the ones built into the chart")
	f.BoolVar(&in.reuseValues, "reuse-values", false, "when upgrading, reuse the last release's values and merge in any overrides")
	f.BoolVar(&in.resetThen, "reset-then-reuse-values", false, "when upgrading, reset the values to the chart's, then apply the last release's values and the overrides")
	f.BoolVar(&in.inputs.SkipSchemaValidation, "skip-schema-validation", false, "disable JSON schema validation")
	f.StringVar(&in.reconcile, "reconcile", string(inject.ReconcileAlways), "when a release moves to a newer version of a built-in injector: always, never (keep the recorded version), with-chart (move only when the release changes anyway)")
	f.BoolVar(&in.inputs.AllowEmpty, "allow-empty", false, "let an upgrade whose chart renders no object delete every object of the release (refused otherwise)")
	f.BoolVar(&in.inputs.UpdateInjectors, "update-injectors", false, "move built-in injectors to the version their constraint resolves to now, whatever --reconcile says")
}

// loaded is everything a release verb needs, read and checked before any
// cluster write.
type loaded struct {
	name   string
	src    release.Source
	vals   map[string]any
	inputs release.Inputs
	cfg    *action.Configuration
	// ctx and settings are the command's, for what runs later (a
	// post-renderer, helm 4's plugins).
	ctx      context.Context
	settings *cli.EnvSettings
}

// load parses the injectors, loads the chart and values and connects to the
// cluster. Every error names the release.
func (in *releaseInputs) load(cmd *cobra.Command, settings *cli.EnvSettings, args []string) (*loaded, error) {
	l := &loaded{name: args[0], inputs: in.inputs, ctx: cmd.Context(), settings: settings}
	l.inputs.Namespace = settings.Namespace()
	var err error
	// Set by `helm-inject helmfile` for the shims of one run only.
	if os.Getenv(helmfile.EnvAsHelm) != "" {
		if l.inputs.Cache, err = release.OpenPlanCache(os.Getenv(release.EnvPlanCache), os.Getenv(release.EnvPlanKey)); err != nil {
			return nil, fmt.Errorf("release %q: %w", l.name, err)
		}
	}
	if l.inputs.ValuesMode, err = valuesMode(in.resetValues, in.reuseValues, in.resetThen); err != nil {
		return nil, err
	}
	if l.inputs.Reconcile, err = inject.ParseReconcileStrategy(in.reconcile); err != nil {
		return nil, err
	}
	if l.inputs.Injectors, err = in.injectors.declared(); err != nil {
		return nil, fmt.Errorf("release %q: %w", l.name, err)
	}
	if l.src, l.vals, err = in.chart.load(cmd.Context(), settings, args[1], cmd.ErrOrStderr()); err != nil {
		return nil, fmt.Errorf("release %q: %w", l.name, err)
	}
	if l.cfg, err = release.NewConfiguration(settings, settings.Namespace(), debugLog(settings, cmd.ErrOrStderr())); err != nil {
		return nil, fmt.Errorf("release %q: %w", l.name, err)
	}
	return l, nil
}
