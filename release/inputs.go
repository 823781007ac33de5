package release

import (
	"github.com/helm-inject/helm-inject/inject"
)

// Inputs are what a release is made of besides its chart and values, and
// how its injectors run and are chosen. Apply, Diff and Template embed
// them (as Helm's actions embed ChartPathOptions), so each input is
// declared once and the CLI binds its flags to it once. Template has no
// release history: it ignores ValuesMode, Reconcile, UpdateInjectors,
// AllowEmpty and Labels.
type Inputs struct {
	// Namespace is the release's namespace.
	Namespace string
	// ValuesMode says how an upgrade treats the values of the deployed
	// revision (--reset-values, --reuse-values, --reset-then-reuse-values).
	ValuesMode ValuesMode
	// SkipSchemaValidation skips values.schema.json, as Helm's flag does.
	SkipSchemaValidation bool
	// KubeVersion overrides the Kubernetes version in .Capabilities.
	KubeVersion string

	// Injectors are the release's injectors as declared; each run
	// resolves them (built-in versions) into the pipeline that runs.
	Injectors *inject.Declared
	// InjectDir is the working directory of injector commands.
	InjectDir string
	// Reconcile and UpdateInjectors choose built-in injector versions.
	Reconcile       inject.ReconcileStrategy
	UpdateInjectors bool

	// AllowEmpty lets an upgrade go ahead whose render has no object while
	// the deployed revision has some: it deletes them all (--allow-empty).
	AllowEmpty bool

	// KeepChart, when set, also writes the temporary chart to this folder.
	KeepChart string
	// Labels are the release's --labels, merged with the last revision's.
	Labels map[string]string
	// Render holds Helm's flags that change how a chart renders.
	Render RenderFlags
	// SkipLiveCheck trusts the release record: with nothing changed in
	// the chart, apply and diff do not read the release's objects from the
	// cluster to find drift (--skip-live-check).
	SkipLiveCheck bool
	// Cache, when set (a helmfile run's, see EnvPlanCache), lets apply and
	// diff reuse a plan the run already rendered and injected with exactly
	// the same inputs.
	Cache *PlanCache
}

// RenderFlags are Helm's flags that change how a chart renders, shared by
// Apply, Diff and Template.
type RenderFlags struct {
	// EnableDNS lets templates resolve host names (--enable-dns).
	EnableDNS bool
	// SubNotes adds subcharts' NOTES.txt to the notes
	// (--render-subchart-notes).
	SubNotes bool
	// PostRenderer runs after injection on the manifests (not hooks), as
	// Helm's --post-renderer does.
	PostRenderer PostRenderer
	// APIVersions are added to .Capabilities.APIVersions (--api-versions).
	APIVersions []string
	// SchemaLoadsNothing validates values against values.schema.json with
	// no "$ref" loaded from a file or URL (Argo CD's generate).
	SchemaLoadsNothing bool
}
