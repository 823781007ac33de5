package release

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	"slices"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"

	release "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"
	"k8s.io/client-go/rest"

	"github.com/helm-inject/helm-inject/chartify"
	"github.com/helm-inject/helm-inject/inject"
	"github.com/helm-inject/helm-inject/internal/redact"
	"github.com/helm-inject/helm-inject/manifest"
)

// history returns the revision an upgrade builds on (nil when the release
// must be installed) and the latest revision of any status.
func history(cfg *action.Configuration, name string) (current, last *release.Release, err error) {
	found, err := cfg.Releases.Last(name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, nil, nil
	}
	if err == nil {
		last, err = V1Release(found)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("release %q: reading its history: %w", name, err)
	}
	if last.Info.Status == rcommon.StatusUninstalled {
		return nil, last, nil
	}
	if last.Info.Status.IsPending() {
		undo := "helm rollback " + name
		if last.Info.Status == rcommon.StatusPendingInstall {
			undo = "helm uninstall " + name
		}
		return nil, nil, fmt.Errorf("release %q: another operation (install/upgrade/rollback) is in progress (revision %d is %s); "+
			"if none is (the one that started it was killed or lost the API server), `%s` ends it", name, last.Version, last.Info.Status, undo)
	}
	current = last
	if last.Info.Status != rcommon.StatusDeployed {
		if found, err := cfg.Releases.Deployed(name); err == nil {
			if dep, err := V1Release(found); err == nil && dep != nil {
				current = dep
			}
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
	// recordsBefore are the injectors current records (none for an
	// install); records are the ones the new revision records.
	recordsBefore, records []inject.Record
	// values are what the chart is rendered with and the new revision
	// stores as its config (see upgradeValues).
	values map[string]any
}

// makePlan reads the release history, renders, injects and builds the
// temporary chart: every step that can reject user input, and none that
// writes to the cluster. createsCRDs says that a first install creates
// the chart's crds/ (no --skip-crds), before it renders as Helm's does.
func makePlan(ctx context.Context, cfg *action.Configuration, name string, src Source, vals map[string]any, o Inputs, createsCRDs bool) (*plan, error) {
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
	if current == nil && createsCRDs {
		// A first install creates crds/ before it renders, as Helm's.
		caps = chartify.WithChartCRDs(caps, src.Chart)
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
	var recordsBefore []inject.Record
	if current != nil {
		if recordsBefore, err = revisionRecords(current); err != nil {
			return nil, fmt.Errorf("release %q: %w", name, err)
		}
		opts.IsUpgrade = true
		opts.Namespace = current.Namespace
		var defaults map[string]any
		if renderVals, defaults, err = upgradeValues(o.ValuesMode, current, vals); err != nil {
			return nil, fmt.Errorf("release %q: %w", name, err)
		}
		if defaults != nil {
			// As Helm's upgrade, on a copy: the caller's chart stays as it is.
			ch := *src.Chart
			ch.Values = defaults
			src.Chart = &ch
		}
	}
	if o.Reconcile == "" {
		o.Reconcile = inject.ReconcileAlways
	}
	b, err := cachedBuild(ctx, name, src, renderVals, opts, o, current, recordsBefore)
	if err != nil {
		return nil, err
	}
	tc, rendered, records, err := assemble(name, src, b, o.Render.PostRenderer)
	if err != nil {
		return nil, err
	}
	// helm's install and upgrade refuse a document that is no object
	// before they write; template prints it.
	if err := CheckObjects(name, opts.Namespace, rendered.Documents, current != nil); err != nil {
		return nil, err
	}
	if current != nil && !o.AllowEmpty {
		if err := refuseEmptying(name, src.Ref, current, rendered.Documents); err != nil {
			return nil, err
		}
	}
	// What is installed is exactly what was planned, rendered and
	// compared; --keep-chart also writes it to a folder.
	if err := keepChart(name, tc, o.KeepChart); err != nil {
		return nil, err
	}
	return &plan{current: current, last: last, chart: tc, rendered: rendered, namespace: opts.Namespace, recordsBefore: recordsBefore, records: records, values: renderVals}, nil
}

// cachedBuild renders and injects the release, or takes what this run's
// plan cache (a helmfile run's) already built from exactly these inputs.
func cachedBuild(ctx context.Context, name string, src Source, vals map[string]any, opts chartify.RenderOptions, o Inputs, current *release.Release, recordsBefore []inject.Record) (*built, error) {
	currentVersion := 0
	if current != nil {
		currentVersion = current.Version
	}
	key := o.Cache.key(name, src, vals, opts, o, currentVersion, recordsBefore)
	b, hit, err := o.Cache.load(key, src.Chart, vals, opts.Capabilities)
	if err != nil {
		return nil, fmt.Errorf("release %q: %w", name, err)
	}
	if hit {
		return b, nil
	}
	if b, err = renderAndInject(ctx, name, src, vals, opts, o.Injectors, recordedChoice(current, recordsBefore, o.Reconcile, o.UpdateInjectors), o.InjectDir); err != nil {
		return nil, err
	}
	if err := o.Cache.store(key, b); err != nil {
		return nil, fmt.Errorf("release %q: %w", name, err)
	}
	return b, nil
}

// clusterFacts asks the cluster for its capabilities, with a
// --kube-version override and extra --api-versions applied, and returns the
// REST config that lets lookup reach it.
func clusterFacts(cfg *action.Configuration, name, kubeVersion string, apiVersions []string) (*common.Capabilities, *rest.Config, error) {
	dc, err := cfg.RESTClientGetter.ToDiscoveryClient()
	if err != nil {
		return nil, nil, fmt.Errorf("connecting to Kubernetes: %w", err)
	}
	caps, err := chartify.ClusterCapabilities(dc)
	if err != nil {
		return nil, nil, fmt.Errorf("release %q: %w", name, err)
	}
	if kubeVersion != "" {
		kv, err := common.ParseKubeVersion(kubeVersion)
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
type Chooser func(renderedDigest string) (inject.Choice, error)

// BuildChart is the pipeline shared by apply, template and diff: render the
// source chart, choose the built-in injectors' versions, run the injectors,
// and build the temporary chart in memory. It also returns what Helm's
// render of the temporary chart gives (exactly what the release will hold)
// and the injector records written into its annotations. Nothing is
// written.
func BuildChart(ctx context.Context, name string, src Source, vals map[string]any, opts chartify.RenderOptions, declared *inject.Declared, choose Chooser, injectDir string, pr PostRenderer) (*chart.Chart, *chartify.Rendered, []inject.Record, error) {
	b, err := renderAndInject(ctx, name, src, vals, opts, declared, choose, injectDir)
	if err != nil {
		return nil, nil, nil, err
	}
	return assemble(name, src, b, pr)
}

// built is what rendering and injecting a release produced: everything the
// temporary chart is made of besides the source chart itself, and what the
// plan cache keeps.
type built struct {
	// chart is the source chart as rendering left it (not cached: the
	// caller has it, and chartify.Prepare puts it in the same state).
	chart *chart.Chart
	// Notes are the rendered notes.
	Notes string
	// Docs are the injected documents.
	Docs []manifest.Document
	// Records are the injector records of the new revision.
	Records []inject.Record
	// Digest identifies the documents before injection.
	Digest string
}

// renderAndInject renders the source chart and runs the injectors over it.
func renderAndInject(ctx context.Context, name string, src Source, vals map[string]any, opts chartify.RenderOptions, declared *inject.Declared, choose Chooser, injectDir string) (*built, error) {
	if declared != nil && declared.BuiltIn() {
		// The injector reads the workloads the render has just parsed.
		opts.KeepTree = inject.HasPodTemplate
	}
	rendered, err := chartify.Render(src.Chart, vals, opts)
	if err != nil {
		return nil, fmt.Errorf("release %q: rendering %s: %w", name, src.Ref, err)
	}
	if declared == nil {
		declared = &inject.Declared{}
	}
	digest := documentsDigest(rendered.Documents)
	choice := inject.Choice{Strategy: inject.ReconcileAlways}
	if choose != nil {
		if choice, err = choose(digest); err != nil {
			return nil, fmt.Errorf("release %q: %w", name, err)
		}
	}
	run, err := declared.Resolve(choice)
	if err != nil {
		return nil, fmt.Errorf("release %q: %w", name, err)
	}
	docs, steps, err := run.Run(ctx, rendered.Documents, inject.Env{
		Release: name, Namespace: opts.Namespace, Chart: src.Chart.Name(), Dir: injectDir,
	})
	if err != nil {
		return nil, err
	}
	for _, d := range docs {
		if len(d.Content) > MaxResourceBytes {
			return nil, fmt.Errorf("release %q: %s in %s is %d bytes after injection; the API server stores at most %d bytes per object (etcd's default request limit)",
				name, d.ID, d.Source, len(d.Content), MaxResourceBytes)
		}
	}
	records := make([]inject.Record, 0, len(steps))
	for _, st := range steps {
		records = append(records, st.Record())
	}
	return &built{chart: rendered.Chart, Notes: rendered.Notes, Docs: docs, Records: records, Digest: digest}, nil
}

// assemble builds the temporary chart from what was rendered and injected,
// and what Helm's render of it gives.
func assemble(name string, src Source, b *built, pr PostRenderer) (*chart.Chart, *chartify.Rendered, []inject.Record, error) {
	ann := map[string]string{}
	if len(b.Records) > 0 {
		var err error
		if ann[inject.RecordsAnnotation], err = inject.EncodeRecords(b.Records); err != nil {
			return nil, nil, nil, fmt.Errorf("release %q: %w", name, err)
		}
	}
	docs := b.Docs
	if pr != nil {
		var err error
		if docs, err = postRender(b.chart.Name(), docs, pr); err != nil {
			return nil, nil, nil, fmt.Errorf("release %q: %w", name, err)
		}
	}
	rendered := &chartify.Rendered{Chart: b.chart, Notes: b.Notes}
	tc, err := chartify.BuildTempChart(rendered, docs, chartify.TempChartOptions{Source: redact.String(src.Ref), Annotations: ann, RenderedDigest: b.Digest})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("release %q: %w", name, err)
	}
	r, err := chartify.RenderTempChart(tc, rendered, docs)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("release %q: %w", name, err)
	}
	return tc, r, b.Records, nil
}

// refuseEmptying refuses an upgrade of current to a render with no
// object (hooks aside) while current's manifest has some: helm would
// delete every object of the release, which a chart whose conditions or
// values went wrong does silently. It is the one guard helm-inject keeps
// that helm lacks; --allow-empty lifts it.
func refuseEmptying(name, ref string, current *release.Release, docs []manifest.Document) error {
	if slices.ContainsFunc(docs, ownedObject) {
		return nil
	}
	deployed := 0
	for _, doc := range manifest.Split(current.Manifest) {
		if d, err := manifest.Parse("", doc); err == nil && ownedObject(d) {
			deployed++
		}
	}
	if deployed == 0 {
		return nil
	}
	return fmt.Errorf("release %q: %s rendered no object, so this upgrade would delete all %d objects of revision %d; check the chart's conditions and your values, or pass --allow-empty to delete them",
		name, ref, deployed, current.Version)
}

// ownedObject says whether d is an object the release owns: an object,
// not a hook.
func ownedObject(d manifest.Document) bool { return d.IsObject() && d.Hook == "" }

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

// recordedChoice builds the injector choice for an upgrade of current,
// whose injector records are recorded.
func recordedChoice(current *release.Release, recorded []inject.Record, strategy inject.ReconcileStrategy, update bool) Chooser {
	return func(renderedDigest string) (inject.Choice, error) {
		c := inject.Choice{Strategy: strategy, Update: update, Recorded: map[string]inject.Record{}, ChartChanged: true}
		if current == nil || current.Chart == nil || current.Chart.Metadata == nil {
			return c, nil
		}
		for _, r := range recorded {
			if r.Version != "" {
				c.Recorded[r.Name] = r
			}
		}
		c.ChartChanged = current.Chart.Metadata.Annotations[chartify.AnnotationRendered] != renderedDigest
		return c, nil
	}
}

// revisionRecords reads the injector records of a stored revision.
func revisionRecords(rel *release.Release) ([]inject.Record, error) {
	if rel.Chart == nil || rel.Chart.Metadata == nil {
		return nil, nil
	}
	recs, err := inject.DecodeRecords(rel.Chart.Metadata.Annotations)
	if err != nil {
		return nil, fmt.Errorf("revision %d: %w", rel.Version, err)
	}
	return recs, nil
}
