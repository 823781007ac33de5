package release

import (
	"context"
	"fmt"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	"k8s.io/client-go/kubernetes"

	"github.com/helm-inject/helm-inject/inject"
	"github.com/helm-inject/helm-inject/internal/progress"
)

// Apply renders a chart, injects it, builds the temporary chart and installs
// or upgrades the release with it: `helm upgrade --install` with injection.
// Everything that can fail on user input (rendering, injectors, output
// checks, the temporary chart) happens before the first write to the
// cluster.
type Apply struct {
	cfg *action.Configuration
	Inputs
	Options
	// Progress, when set, shows what the install or upgrade waits for.
	Progress *progress.Reporter
}

// Options are Helm's install and upgrade options that apply passes on to
// the SDK, bound by the CLI to helm's flags of the same names.
type Options struct {
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

// NewApply returns an Apply bound to a Helm configuration.
func NewApply(cfg *action.Configuration) *Apply {
	return &Apply{cfg: cfg, Options: Options{Install: true, Timeout: 5 * time.Minute}, Inputs: Inputs{Injectors: &inject.Declared{}}}
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
		d, err := decideRevision(p, revisionInputs{labels: a.Labels, forceUpgrade: a.ForceUpgrade})
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
	stop := a.watch(ctx, p)
	rel, err := inst.RunWithContext(ctx, p.chart, vals)
	stop()
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
	stop := a.watch(ctx, p)
	rel, err := up.RunWithContext(ctx, name, p.chart, vals)
	stop()
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

// watch shows, while the SDK installs or upgrades, the resources it waits
// for: hook Jobs and Pods (Helm waits for hooks unless --no-hooks), and with
// --wait, --wait-for-jobs or --atomic the release's workloads. It returns
// the function that ends the watch.
func (a *Apply) watch(ctx context.Context, p *plan) (stop func()) {
	noop := func() {}
	// A nil Progress (--progress none) watches nothing: its Watch is a
	// no-op.
	if a.DryRun {
		return noop
	}
	waits := a.Wait || a.WaitForJobs || a.Atomic
	var resources []progress.Resource
	for _, d := range p.rendered.Documents {
		if d.Empty() || !progress.Watched(d.ID.Kind) {
			continue
		}
		hook := d.Hook != ""
		if hook && (a.DisableHooks || d.IsTestHook()) || !hook && !waits {
			continue
		}
		id := d.ID.InNamespace(p.namespace)
		resources = append(resources, progress.Resource{Kind: id.Kind, Namespace: id.Namespace, Name: id.Name, Hook: hook})
	}
	if len(resources) == 0 {
		return noop
	}
	rc, err := a.cfg.RESTClientGetter.ToRESTConfig()
	if err != nil {
		return noop
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return noop
	}
	return a.Progress.Watch(ctx, cs, resources)
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
