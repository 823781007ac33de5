package release

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/postrender"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/client-go/rest"

	"github.com/helm-inject/helm-inject/chartify"
	"github.com/helm-inject/helm-inject/inject"
	"github.com/helm-inject/helm-inject/internal/redact"
	"github.com/helm-inject/helm-inject/manifest"
)

// Apply renders a chart, injects it, builds the temporary chart and installs
// or upgrades the release with it: `helm upgrade --install` with injection.
// Everything that can fail on user input (rendering, injectors, output
// checks, the temporary chart) happens before the first write to the
// cluster.
type Apply struct {
	cfg *action.Configuration
	Inputs

	CreateNamespace bool
	// Install allows installing a release that does not exist yet
	// (`upgrade --install`); apply always sets it.
	Install      bool
	Wait         bool
	WaitForJobs  bool
	Timeout      time.Duration
	Atomic       bool
	MaxHistory   int
	Description  string
	DryRun       bool
	DisableHooks bool
	SkipCRDs     bool
	// ForceUpgrade upgrades even when nothing changed.
	ForceUpgrade bool
	// Force, CleanupOnFail and DisableOpenAPIValidation are Helm's flags.
	Force                    bool
	CleanupOnFail            bool
	DisableOpenAPIValidation bool
	// TakeOwnership and Recreate are Helm's --take-ownership and
	// --recreate-pods.
	TakeOwnership bool
	Recreate      bool
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
	PostRenderer postrender.PostRenderer
	// APIVersions are added to .Capabilities.APIVersions (--api-versions).
	APIVersions []string
}

// NewApply returns an Apply bound to a Helm configuration.
func NewApply(cfg *action.Configuration) *Apply {
	return &Apply{cfg: cfg, Install: true, Timeout: 5 * time.Minute, Inputs: Inputs{Pipeline: &inject.Pipeline{}}}
}

// Source is the chart to apply: what the user named, and its loaded form.
type Source struct {
	Ref   string
	Chart *chart.Chart
}

// Result is what Apply did.
type Result struct {
	Release *release.Release
	// Installed is true for a first install, false for an upgrade.
	Installed bool
	// Unchanged is true when the release already had exactly these
	// manifests, hooks, notes, chart and values: no revision was made.
	Unchanged bool
}

// Run applies src as release name with the user's values vals.
func (a *Apply) Run(ctx context.Context, name string, src Source, vals map[string]any) (*Result, error) {
	p, err := makePlan(ctx, a.cfg, name, src, vals, a.Inputs)
	if err != nil {
		return nil, err
	}
	current := p.current
	if current == nil && !a.Install {
		return nil, fmt.Errorf("release %q has no deployed revision; use apply or upgrade --install", name)
	}
	if current != nil && !a.DryRun {
		d, err := decideRevision(p, revisionInputs{valuesMode: a.ValuesMode, vals: vals, labels: a.Labels, forceUpgrade: a.ForceUpgrade})
		if err != nil {
			return nil, fmt.Errorf("release %q: %w", name, err)
		}
		if !d.newRevision() {
			return &Result{Release: current, Unchanged: true}, nil
		}
	}

	if current == nil {
		return a.install(ctx, p, name, vals)
	}
	return a.upgrade(ctx, p, name, vals)
}

// install installs the planned chart as the first revision of name.
func (a *Apply) install(ctx context.Context, p *plan, name string, vals map[string]any) (*Result, error) {
	inst := action.NewInstall(a.cfg)
	inst.ReleaseName = name
	inst.Namespace = a.Namespace
	inst.CreateNamespace = a.CreateNamespace
	inst.Wait, inst.WaitForJobs, inst.Timeout, inst.Atomic = a.Wait, a.WaitForJobs, a.Timeout, a.Atomic
	inst.Description = a.Description
	inst.DryRun = a.DryRun
	inst.DisableHooks = a.DisableHooks
	inst.SkipCRDs = a.SkipCRDs
	inst.SkipSchemaValidation = true // checked against the source chart
	inst.Force = a.Force
	inst.DisableOpenAPIValidation = a.DisableOpenAPIValidation
	inst.TakeOwnership = a.TakeOwnership
	inst.Labels = a.Labels
	inst.PostRenderer = p.postRenderer
	// A release whose history holds only uninstalled revisions (kept
	// with --keep-history) is replaced, as `helm upgrade --install` does.
	inst.Replace = p.last != nil
	a.cfg.Releases.MaxHistory = a.MaxHistory
	rel, err := inst.RunWithContext(ctx, p.chart, vals)
	if err != nil && ctx.Err() != nil && rel != nil && !a.DryRun {
		return &Result{Release: rel, Installed: true}, a.interruptedInstall(rel, err)
	}
	if err != nil {
		return &Result{Release: rel, Installed: true}, fmt.Errorf("release %q: install: %w", name, err)
	}
	return &Result{Release: rel, Installed: true}, nil
}

// upgrade makes the planned chart the next revision of name.
func (a *Apply) upgrade(ctx context.Context, p *plan, name string, vals map[string]any) (*Result, error) {
	up := action.NewUpgrade(a.cfg)
	up.Namespace = a.Namespace
	up.Wait, up.WaitForJobs, up.Timeout, up.Atomic = a.Wait, a.WaitForJobs, a.Timeout, a.Atomic
	up.MaxHistory = a.MaxHistory
	up.Description = a.Description
	up.DryRun = a.DryRun
	up.DisableHooks = a.DisableHooks
	up.SkipCRDs = a.SkipCRDs
	up.SkipSchemaValidation = true
	up.Force = a.Force
	up.CleanupOnFail = a.CleanupOnFail
	up.DisableOpenAPIValidation = a.DisableOpenAPIValidation
	up.TakeOwnership = a.TakeOwnership
	up.Labels = a.Labels
	up.Recreate = a.Recreate
	up.PostRenderer = p.postRenderer
	switch a.ValuesMode {
	case ValuesReset:
		up.ResetValues = true
	case ValuesReuse:
		up.ReuseValues = true
	case ValuesResetThenReuse:
		up.ResetThenReuseValues = true
	}
	rel, err := up.RunWithContext(ctx, name, p.chart, vals)
	if err != nil && ctx.Err() != nil && rel != nil && !a.DryRun {
		// Helm's upgrade marks the revision failed itself (and rolls back
		// with --atomic).
		if a.Atomic {
			// Helm's error says that it rolled back.
			return &Result{Release: rel}, fmt.Errorf("release %q: upgrade interrupted: %w", name, err)
		}
		return &Result{Release: rel}, fmt.Errorf("release %q: upgrade interrupted (%w): revision %d is %s; `helm rollback %s` returns to the deployed revision (--atomic does this by itself)", name, err, rel.Version, rel.Info.Status, name)
	}
	if err != nil {
		return &Result{Release: rel}, fmt.Errorf("release %q: upgrade: %w", name, err)
	}
	return &Result{Release: rel}, nil
}

// interruptedInstall settles an install that Ctrl-C or SIGTERM cut short.
// Helm's install returns at once and leaves the revision pending-install,
// which would block every later apply ("another operation is in
// progress"). As Helm's upgrade does for an interrupted upgrade, the
// revision is marked failed, so the next apply upgrades from it; with
// --atomic the release is uninstalled instead, as after any failed install.
func (a *Apply) interruptedInstall(rel *release.Release, cause error) error {
	if a.Atomic {
		un := action.NewUninstall(a.cfg)
		un.Wait, un.Timeout = true, a.Timeout
		if _, err := un.Run(rel.Name); err != nil {
			return fmt.Errorf("release %q: install interrupted (%w); --atomic could not uninstall it: %w", rel.Name, cause, err)
		}
		return fmt.Errorf("release %q: install interrupted (%w); uninstalled it (--atomic)", rel.Name, cause)
	}
	rel.SetStatus(release.StatusFailed, fmt.Sprintf("Install interrupted: %v", cause))
	if err := a.cfg.Releases.Update(rel); err != nil {
		return fmt.Errorf("release %q: install interrupted (%w); marking revision %d failed: %w", rel.Name, cause, rel.Version, err)
	}
	return fmt.Errorf("release %q: install interrupted (%w): revision %d is failed; run apply again to finish it, or helm uninstall %s", rel.Name, cause, rel.Version, rel.Name)
}

// history returns the revision an upgrade builds on (nil when the release
// must be installed) and the latest revision of any status.
func history(cfg *action.Configuration, name string) (current, last *release.Release, err error) {
	last, err = cfg.Releases.Last(name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("release %q: reading its history: %w", name, err)
	}
	if last.Info.Status == release.StatusUninstalled {
		return nil, last, nil
	}
	if last.Info.Status.IsPending() {
		undo := "helm rollback " + name
		if last.Info.Status == release.StatusPendingInstall {
			undo = "helm uninstall " + name
		}
		return nil, nil, fmt.Errorf("release %q: another operation (install/upgrade/rollback) is in progress (revision %d is %s); "+
			"if none is (the one that started it was killed or lost the API server), `%s` ends it", name, last.Version, last.Info.Status, undo)
	}
	current = last
	if last.Info.Status != release.StatusDeployed {
		if dep, err := cfg.Releases.Deployed(name); err == nil {
			current = dep
		}
	}
	return current, last, nil
}

// plan is what an apply would install, computed without writing anything.
type plan struct {
	// current is the revision an upgrade builds on; nil for an install.
	current *release.Release
	// last is the newest revision of any status; nil if there is none.
	last *release.Release
	// chart is the temporary chart.
	chart *chart.Chart
	// rendered is chart rendered with the release's facts: exactly the
	// documents and notes the new revision will hold.
	rendered *chartify.Rendered
	// namespace is the release's namespace.
	namespace string
	// postRenderer, when the user gave one, replays its output for the
	// install or upgrade (see postRender).
	postRenderer postrender.PostRenderer
}

// makePlan reads the release history, renders, injects and builds the
// temporary chart: every step that can reject user input, and none that
// writes to the cluster.
func makePlan(ctx context.Context, cfg *action.Configuration, name string, src Source, vals map[string]any, o Inputs) (*plan, error) {
	if err := chartutil.ValidateReleaseName(name); err != nil {
		return nil, fmt.Errorf("release name %q: %w", name, err)
	}
	current, last, err := history(cfg, name)
	if err != nil {
		return nil, err
	}
	// diff's --api-versions (apply has no such flag: the SDK's install
	// would discover the server's own).
	caps, restConfig, err := clusterFacts(cfg, name, o.KubeVersion, o.Render.APIVersions)
	if err != nil {
		return nil, err
	}
	if o.KubeVersion == "" {
		// The SDK's install and upgrade ask the API server the same
		// questions again unless told the answers.
		cfg.Capabilities = caps
	}
	opts := chartify.RenderOptions{
		ReleaseName:          name,
		Namespace:            o.Namespace,
		Revision:             1,
		Capabilities:         caps,
		RESTConfig:           restConfig,
		SkipSchemaValidation: o.SkipSchemaValidation,
		EnableDNS:            o.Render.EnableDNS,
		SubNotes:             o.Render.SubNotes,
	}
	renderVals := vals
	if last != nil {
		opts.Revision = last.Version + 1
	}
	if current != nil {
		opts.IsUpgrade = true
		opts.Namespace = current.Namespace
		if renderVals, err = upgradeValues(o.ValuesMode, src.Chart, current, vals); err != nil {
			return nil, fmt.Errorf("release %q: %w", name, err)
		}
	}
	if o.Reconcile == "" {
		o.Reconcile = inject.ReconcileAlways
	}
	tc, rendered, err := BuildChart(ctx, name, src, renderVals, opts, o.Pipeline, recordedChoice(current, o.Reconcile, o.UpdateInjectors), o.InjectDir)
	if err != nil {
		return nil, err
	}
	loaded, err := loadTempChart(name, tc, o.KeepChart)
	if err != nil {
		return nil, err
	}
	rendered.Chart = loaded
	pl := &plan{current: current, last: last, chart: loaded, rendered: rendered, namespace: opts.Namespace}
	if o.Render.PostRenderer != nil {
		if pl.postRenderer, err = postRender(rendered, o.Render.PostRenderer); err != nil {
			return nil, fmt.Errorf("release %q: %w", name, err)
		}
	}
	return pl, nil
}

// clusterFacts asks the cluster for its capabilities, with a
// --kube-version override and extra --api-versions applied, and returns the
// REST config that lets lookup reach it.
func clusterFacts(cfg *action.Configuration, name, kubeVersion string, apiVersions []string) (*chartutil.Capabilities, *rest.Config, error) {
	dc, err := cfg.RESTClientGetter.ToDiscoveryClient()
	if err != nil {
		return nil, nil, fmt.Errorf("connecting to Kubernetes: %w", err)
	}
	caps, err := chartify.ClusterCapabilities(dc)
	if err != nil {
		return nil, nil, fmt.Errorf("release %q: %w", name, err)
	}
	if kubeVersion != "" {
		kv, err := chartutil.ParseKubeVersion(kubeVersion)
		if err != nil {
			return nil, nil, fmt.Errorf("--kube-version %q: %w", kubeVersion, err)
		}
		caps.KubeVersion = *kv
	}
	caps.APIVersions = append(caps.APIVersions, apiVersions...)
	restConfig, err := cfg.RESTClientGetter.ToRESTConfig()
	if err != nil {
		return nil, nil, fmt.Errorf("connecting to Kubernetes: %w", err)
	}
	return caps, restConfig, nil
}

// Chooser decides, once the chart is rendered, which version of each
// built-in injector to use; renderedDigest identifies the manifests before
// injection.
type Chooser func(renderedDigest string) inject.Choice

// BuildChart is the pipeline shared by apply, template and diff: render the
// source chart, choose the built-in injectors' versions, run the injectors,
// and build the temporary chart in memory. It also returns what Helm's
// render of the temporary chart gives: exactly what the release will hold.
// Nothing is written; loadTempChart puts the chart on disk.
func BuildChart(ctx context.Context, name string, src Source, vals map[string]any, opts chartify.RenderOptions, p *inject.Pipeline, choose Chooser, injectDir string) (*chart.Chart, *chartify.Rendered, error) {
	rendered, err := chartify.Render(src.Chart, vals, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("release %q: rendering %s: %w", name, src.Ref, err)
	}
	if !slices.ContainsFunc(rendered.Documents, func(d manifest.Document) bool { return !d.Empty() }) && len(src.Chart.CRDObjects()) == 0 {
		return nil, nil, fmt.Errorf("release %q: %s rendered no manifests, hooks or CRDs: nothing to install (check the chart's conditions and your values)", name, src.Ref)
	}
	if p == nil {
		p = &inject.Pipeline{}
	}
	digest := documentsDigest(rendered.Documents)
	choice := inject.Choice{Strategy: inject.ReconcileAlways}
	if choose != nil {
		choice = choose(digest)
	}
	resolved, err := inject.Resolve(p.Injectors, choice)
	if err != nil {
		return nil, nil, fmt.Errorf("release %q: %w", name, err)
	}
	run := *p
	run.Injectors = resolved
	docs, steps, err := run.Run(ctx, rendered.Documents, inject.Env{
		Release: name, Namespace: opts.Namespace, Chart: src.Chart.Name(), Dir: injectDir,
	})
	if err != nil {
		return nil, nil, err
	}
	for _, d := range docs {
		if len(d.Content) > MaxResourceBytes {
			return nil, nil, fmt.Errorf("release %q: %s in %s is %d bytes after injection; the API server stores at most %d bytes per object (etcd's default request limit)",
				name, d.ID, d.Source, len(d.Content), MaxResourceBytes)
		}
	}
	// A built-in injector is recorded by version and the digest of its
	// definition and parameters; an external one by its spec (credentials
	// redacted: the record is stored in every revision) and a digest of
	// what it produced.
	records := make([]chartify.InjectorRecord, 0, len(steps))
	for _, st := range steps {
		rec := chartify.InjectorRecord{Name: redact.String(st.Injector.Name()), Digest: st.OutputDigest}
		if ti, ok := st.Injector.(*inject.TemplateInjector); ok {
			rec = chartify.InjectorRecord{Name: ti.Def.Name, Version: ti.Def.Version, Digest: ti.Digest()}
		}
		records = append(records, rec)
	}
	tc, err := chartify.BuildTempChart(rendered, docs, chartify.TempChartOptions{Source: redact.String(src.Ref), Injectors: records, RenderedDigest: digest})
	if err != nil {
		return nil, nil, fmt.Errorf("release %q: %w", name, err)
	}
	r, err := chartify.RenderTempChart(tc, rendered, docs)
	if err != nil {
		return nil, nil, fmt.Errorf("release %q: %w", name, err)
	}
	return tc, r, nil
}

// loadTempChart writes the temporary chart into a private temporary folder
// (removed before it returns), and into keepDir when set, and loads it back:
// what is installed is what is on disk, and loading it again drops what
// rendering did to the source chart's values in memory.
func loadTempChart(name string, tc *chart.Chart, keepDir string) (*chart.Chart, error) {
	dir, err := os.MkdirTemp("", "helm-inject-chart-")
	if err != nil {
		return nil, fmt.Errorf("release %q: %w", name, err)
	}
	defer os.RemoveAll(dir)
	if err := chartify.WriteChart(tc, dir); err != nil {
		return nil, fmt.Errorf("release %q: writing the temporary chart: %w", name, err)
	}
	if err := keepChart(name, tc, keepDir); err != nil {
		return nil, err
	}
	loaded, err := chartify.LoadWritten(dir)
	if err != nil {
		return nil, fmt.Errorf("release %q: %w", name, err)
	}
	return loaded, nil
}

// keepChart writes a copy of the temporary chart into dir (--keep-chart),
// when dir is set.
func keepChart(name string, tc *chart.Chart, dir string) error {
	if dir == "" {
		return nil
	}
	if err := chartify.WriteKeptChart(tc, dir); err != nil {
		return fmt.Errorf("release %q: %w", name, err)
	}
	return nil
}

// MaxResourceBytes is the largest single resource helm-inject will hand to
// the API server: etcd's default --max-request-bytes (1.5 MiB). A larger
// object fails at the API server after the release record was written, so
// it is refused before anything is written.
const MaxResourceBytes = 3 << 19

// documentsDigest identifies rendered documents (sources and contents).
func documentsDigest(docs []manifest.Document) string {
	h := sha256.New()
	for _, d := range docs {
		fmt.Fprintf(h, "%s\n%d\n%s\n", d.Source, len(d.Content), d.Content)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// recordedChoice builds the injector choice for an upgrade of current.
func recordedChoice(current *release.Release, strategy inject.ReconcileStrategy, update bool) Chooser {
	return func(renderedDigest string) inject.Choice {
		c := inject.Choice{Strategy: strategy, Update: update, Recorded: map[string]inject.Recorded{}, ChartChanged: true}
		if current == nil || current.Chart == nil || current.Chart.Metadata == nil {
			return c
		}
		ann := current.Chart.Metadata.Annotations
		for _, r := range injectorRecords(ann) {
			if r.Version != "" {
				c.Recorded[r.Name] = inject.Recorded{Version: r.Version}
			}
		}
		c.ChartChanged = ann[chartify.AnnotationRendered] != renderedDigest
		return c
	}
}
