package release

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"helm.sh/helm/v4/pkg/action"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/kube"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	release "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
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
	// clients builds the live check's clients; nil is newLiveClients
	// (tests give in-memory ones).
	clients func(*action.Configuration) (liveClients, error)
}

// Options are Helm's install and upgrade options that apply passes on to
// the SDK, bound by the CLI to helm's flags of the same names (helm 4's,
// and helm 3's older names for the same thing).
type Options struct {
	CreateNamespace bool
	// Install allows installing a release that does not exist yet
	// (`upgrade --install`); apply always sets it.
	Install bool
	// Wait is helm 4's --wait strategy: kube.StatusWatcherStrategy
	// (kstatus, `--wait` alone), kube.LegacyStrategy (helm 3's polling),
	// or kube.HookOnlyStrategy (only hooks; "" means this).
	Wait        kube.WaitStrategy
	WaitForJobs bool
	Timeout     time.Duration
	// RollbackOnFailure is --rollback-on-failure (helm 3's --atomic): a
	// failed install is uninstalled, a failed upgrade rolled back; it
	// waits with the watcher unless told another strategy.
	RollbackOnFailure bool
	MaxHistory        int
	Description       string
	DryRun            bool
	DisableHooks      bool
	SkipCRDs          bool
	// ForceUpgrade upgrades even when nothing changed.
	ForceUpgrade bool
	// ServerSide is --server-side: "true", "false" or "auto" (""): an
	// install applies server-side, an upgrade the way the release's last
	// revision did, as helm 4 does.
	ServerSide string
	// ForceConflicts takes fields other managers own (server-side only);
	// ForceReplace (--force-replace, helm 3's --force) replaces objects.
	ForceConflicts bool
	ForceReplace   bool
	// CleanupOnFail and DisableOpenAPIValidation are Helm's flags.
	CleanupOnFail            bool
	DisableOpenAPIValidation bool
	// TakeOwnership is Helm's --take-ownership; Recreate is helm 3's
	// --recreate-pods, which helm 4 dropped (see recreatePods).
	TakeOwnership bool
	Recreate      bool
	// WriteConcurrency is how many objects an upgrade writes at once
	// within one group of helm's order (see parallelWrites); 1 writes one
	// after the other, as helm does; 0 means DefaultWriteConcurrency.
	WriteConcurrency int
}

// waitStrategy is the strategy the SDK is given: always set (helm 4's SDK
// refuses none), and the watcher when --rollback-on-failure needs a wait.
func (o Options) waitStrategy() kube.WaitStrategy {
	switch {
	case o.Wait != "" && o.Wait != kube.HookOnlyStrategy:
		return o.Wait
	case o.RollbackOnFailure:
		return kube.StatusWatcherStrategy
	}
	return kube.HookOnlyStrategy
}

// waitsForResources says whether the install or upgrade waits for the
// release's workloads, not only its hooks (--wait-for-jobs counts only
// with a strategy that waits, as in helm).
func (o Options) waitsForResources() bool {
	return o.waitStrategy() != kube.HookOnlyStrategy
}

// check refuses options helm 4 refuses together, before anything is done.
func (o Options) check() error {
	switch o.ServerSide {
	case "", "auto", "true", "false":
	default:
		return fmt.Errorf("--server-side %q: must be true, false or auto", o.ServerSide)
	}
	if o.ForceConflicts && o.ForceReplace {
		return errors.New("--force-conflicts and --force-replace (--force) cannot be used together: one takes fields over in server-side apply, the other replaces whole objects")
	}
	if o.ForceConflicts && o.ServerSide == "false" {
		return errors.New("--force-conflicts needs server-side apply; it cannot be used with --server-side=false")
	}
	if o.WriteConcurrency < 0 {
		return fmt.Errorf("--write-concurrency %d: must be 1 or more", o.WriteConcurrency)
	}
	return nil
}

// writingWith puts the parallel writes of o.WriteConcurrency in front of
// cfg's kube client for one install or upgrade, reading ahead the objects
// named in added for Helm's existence check when cfg's client getter is a
// cluster view (see readAhead); the returned function puts Helm's client
// back.
func (o Options) writingWith(ctx context.Context, cfg *action.Configuration, added map[objectName]bool) (restore func()) {
	kc := cfg.KubeClient
	w := withParallelWrites(kc, cmp.Or(o.WriteConcurrency, DefaultWriteConcurrency))
	view, _ := cfg.RESTClientGetter.(*clusterView)
	if pw, ok := w.(*parallelWrites); ok && view != nil && !o.DryRun {
		pw.ahead, pw.added, pw.ctx = view.ahead, added, ctx
	}
	cfg.KubeClient = w
	return func() {
		cfg.KubeClient = kc
		if view != nil {
			view.ahead.drop()
		}
	}
}

// addedObjects names the resources (not hooks) of changes that are added:
// those Helm's existence check reads.
func addedObjects(changes []Change) map[objectName]bool {
	added := map[objectName]bool{}
	for _, c := range changes {
		if c.Type == Added && !c.Hook {
			added[objectName{schema.FromAPIVersionAndKind(c.ID.APIVersion, c.ID.Kind).GroupKind(), c.ID.Name}] = true
		}
	}
	return added
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
	// manifests, hooks, notes, chart and values, and the cluster held its
	// objects as the revision applied them: no revision was made.
	Unchanged bool
	// LiveChecked is true when an unchanged release's objects were read
	// from the cluster and matched (false with --skip-live-check).
	LiveChecked bool
	// Waited is true when an unchanged release's resources were waited
	// for (--wait), as helm's upgrade waits for them.
	Waited bool
	// Drift are the objects the cluster held otherwise than the deployed
	// revision, which made an apply of an unchanged chart upgrade to take
	// them back.
	Drift []ObjectDrift
}

// Run applies src as release name with the user's values vals.
func (a *Apply) Run(ctx context.Context, name string, src Source, vals map[string]any) (*Result, error) {
	if err := a.check(); err != nil {
		return nil, fmt.Errorf("release %q: %w", name, err)
	}
	p, err := makePlan(ctx, a.cfg, name, src, vals, a.Inputs, !a.SkipCRDs)
	if err != nil {
		return nil, err
	}
	current := p.current
	if current == nil && !a.Install {
		return nil, fmt.Errorf("release %q has no deployed revision; use apply or upgrade --install", name)
	}
	// changes are what the upgrade adds, changes and removes.
	var changes []Change
	var drifted []ObjectDrift
	if current != nil && !a.DryRun {
		d, err := decideRevision(p, a.revisionInputs())
		if err != nil {
			return nil, fmt.Errorf("release %q: %w", name, err)
		}
		if !d.newRevision() {
			if !a.SkipLiveCheck {
				if drifted, err = liveDrift(ctx, a.cfg, a.clients, p, a.ServerSide, !a.ForceConflicts, a.concurrency()); err != nil {
					return nil, fmt.Errorf("release %q: %w", name, err)
				}
			}
			if len(drifted) == 0 {
				return a.unchanged(ctx, p)
			}
		}
		changes = d.Changes
	}

	if current == nil {
		return a.install(ctx, p, name, vals)
	}
	res, err := a.upgrade(ctx, p, name, vals, changes)
	if res != nil {
		res.Drift = drifted
	}
	return res, err
}

// revisionInputs are apply's options that decide whether it stores a
// new revision.
func (a *Apply) revisionInputs() revisionInputs {
	return revisionInputs{labels: a.Labels, forceUpgrade: a.ForceUpgrade, serverSide: a.ServerSide, description: a.Description, hooks: !a.DisableHooks}
}

// concurrency is how many objects are read or written at once.
func (a *Apply) concurrency() int { return cmp.Or(a.WriteConcurrency, DefaultWriteConcurrency) }

// unchanged finishes an apply that makes no revision, doing what helm's
// upgrade would do with the same flags on a release it would not change:
// wait for the resources (--wait, --wait-for-jobs), restart the pods
// (--recreate-pods) and prune the history to --history-max.
func (a *Apply) unchanged(ctx context.Context, p *plan) (*Result, error) {
	res := &Result{Release: p.current, Unchanged: true, LiveChecked: !a.SkipLiveCheck}
	name := p.current.Name
	if a.waitsForResources() {
		stop := a.watch(ctx, p)
		err := waitForRelease(a.cfg, p.current, a.waitStrategy(), a.WaitForJobs, a.Timeout)
		stop()
		if err != nil {
			return nil, fmt.Errorf("release %q: nothing changed, and waiting for revision %d's resources failed: %w", name, p.current.Version, err)
		}
		res.Waited = true
	}
	if a.Recreate {
		if err := recreatePods(ctx, a.cfg, p); err != nil {
			return nil, fmt.Errorf("release %q: --recreate-pods: %w", name, err)
		}
	}
	if err := pruneHistory(a.cfg, name, a.MaxHistory); err != nil {
		return nil, fmt.Errorf("release %q: --history-max %d: %w", name, a.MaxHistory, err)
	}
	return res, nil
}

// install installs the planned chart as the first revision of name.
func (a *Apply) install(ctx context.Context, p *plan, name string, vals map[string]any) (*Result, error) {
	inst := action.NewInstall(a.cfg)
	inst.ReleaseName = name
	inst.Namespace = a.Namespace
	inst.CreateNamespace = a.CreateNamespace
	inst.WaitStrategy, inst.WaitForJobs, inst.Timeout, inst.RollbackOnFailure = a.waitStrategy(), a.WaitForJobs, a.Timeout, a.RollbackOnFailure
	inst.Description = a.Description
	inst.DryRunStrategy = dryRunStrategy(a.DryRun)
	inst.ServerSideApply = a.ServerSide != "false"
	inst.ForceConflicts = a.ForceConflicts
	inst.DisableHooks = a.DisableHooks
	inst.SkipCRDs = a.SkipCRDs
	inst.SkipSchemaValidation = true // checked against the source chart
	inst.ForceReplace = a.ForceReplace
	inst.DisableOpenAPIValidation = a.DisableOpenAPIValidation
	inst.TakeOwnership = a.TakeOwnership
	inst.Labels = a.Labels
	// A release whose history holds only uninstalled revisions (kept
	// with --keep-history) is replaced, as `helm upgrade --install` does.
	inst.Replace = p.last != nil
	a.cfg.Releases.MaxHistory = a.MaxHistory
	stop, restore := a.watch(ctx, p), a.writingWith(ctx, a.cfg, addedObjects(compare(nil, p.rendered.Documents, p.namespace)))
	out, err := inst.RunWithContext(ctx, p.chart, vals)
	stop()
	restore()
	rel, relErr := V1Release(out)
	if relErr != nil {
		return nil, fmt.Errorf("release %q: install: %w", name, relErr)
	}
	if err != nil && ctx.Err() != nil && rel != nil && !a.DryRun {
		return &Result{Release: rel, Installed: true}, a.interruptedInstall(ctx, rel, err)
	}
	if err != nil {
		return &Result{Release: rel, Installed: true}, fmt.Errorf("release %q: install: %w", name, err)
	}
	return &Result{Release: rel, Installed: true}, nil
}

// upgrade makes the planned chart the next revision of name.
// changes are the resources it adds, changes and removes (none known in a
// dry run).
func (a *Apply) upgrade(ctx context.Context, p *plan, name string, vals map[string]any, changes []Change) (*Result, error) {
	up := action.NewUpgrade(a.cfg)
	up.Namespace = a.Namespace
	up.WaitStrategy, up.WaitForJobs, up.Timeout, up.RollbackOnFailure = a.waitStrategy(), a.WaitForJobs, a.Timeout, a.RollbackOnFailure
	up.MaxHistory = a.MaxHistory
	up.Description = a.Description
	up.DryRunStrategy = dryRunStrategy(a.DryRun)
	up.ServerSideApply = cmp.Or(a.ServerSide, "auto")
	up.ForceConflicts = a.ForceConflicts
	up.DisableHooks = a.DisableHooks
	up.SkipCRDs = a.SkipCRDs
	up.SkipSchemaValidation = true
	up.ForceReplace = a.ForceReplace
	up.CleanupOnFail = a.CleanupOnFail
	up.DisableOpenAPIValidation = a.DisableOpenAPIValidation
	up.TakeOwnership = a.TakeOwnership
	up.Labels = a.Labels
	switch a.ValuesMode {
	case ValuesReset:
		up.ResetValues = true
	case ValuesReuse:
		up.ReuseValues = true
	case ValuesResetThenReuse:
		up.ResetThenReuseValues = true
	}
	stop, restore := a.watch(ctx, p), a.writingWith(ctx, a.cfg, addedObjects(changes))
	out, err := up.RunWithContext(ctx, name, p.chart, vals)
	stop()
	restore()
	rel, relErr := V1Release(out)
	if relErr != nil {
		return nil, fmt.Errorf("release %q: upgrade: %w", name, relErr)
	}
	if err != nil && ctx.Err() != nil && rel != nil && !a.DryRun {
		// Helm's upgrade marks the revision failed itself (and rolls back
		// with --rollback-on-failure).
		if a.RollbackOnFailure {
			// Helm's error says that it rolled back.
			return &Result{Release: rel}, fmt.Errorf("release %q: upgrade interrupted: %w", name, err)
		}
		return &Result{Release: rel}, fmt.Errorf("release %q: upgrade interrupted (%w): revision %d is %s; `helm rollback %s` returns to the deployed revision (--rollback-on-failure does this by itself)", name, err, rel.Version, rel.Info.Status, name)
	}
	if err != nil {
		return &Result{Release: rel}, fmt.Errorf("release %q: upgrade: %w", name, err)
	}
	if a.Recreate && !a.DryRun {
		if err := recreatePods(ctx, a.cfg, p); err != nil {
			return &Result{Release: rel}, fmt.Errorf("release %q: --recreate-pods: %w", name, err)
		}
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
	waits := a.waitsForResources()
	var resources []progress.Resource
	for _, d := range p.rendered.Documents {
		if d.Empty() || !progress.Watched(d.ID.APIVersion, d.ID.Kind) {
			continue
		}
		hook := d.Hook != ""
		if hook && (a.DisableHooks || d.IsTestHook()) || !hook && !waits {
			continue
		}
		id := d.ID.InNamespace(p.namespace)
		resources = append(resources, progress.Resource{APIVersion: id.APIVersion, Kind: id.Kind, Namespace: id.Namespace, Name: id.Name, Hook: hook})
	}
	if len(resources) == 0 {
		return noop
	}
	rc, err := a.cfg.RESTClientGetter.ToRESTConfig()
	if err != nil {
		return noop
	}
	c := progress.Clients{}
	if c.Typed, err = kubernetes.NewForConfig(rc); err != nil {
		return noop
	}
	// Custom resources are read with the dynamic client; without it (or a
	// mapper) they are not shown, and the workloads still are.
	if dc, err := dynamic.NewForConfig(rc); err == nil {
		if m, err := a.cfg.RESTClientGetter.ToRESTMapper(); err == nil {
			c.Dynamic, c.Mapper = dc, m
		}
	}
	return a.Progress.Watch(ctx, c, resources)
}

// interruptedInstall settles an install that Ctrl-C or SIGTERM cut short.
// Helm's install returns at once and marks the revision failed, or with
// --rollback-on-failure uninstalls the release itself (failRelease, on the
// cancelled context as on any failure). A failed revision is told as such,
// so the next apply upgrades from it; a release still there with
// --rollback-on-failure (Helm's uninstall failed) is uninstalled here.
// helmErr is what Helm's install returned.
func (a *Apply) interruptedInstall(ctx context.Context, rel *release.Release, helmErr error) error {
	cause := ctx.Err()
	if a.RollbackOnFailure {
		if _, err := a.cfg.Releases.Last(rel.Name); errors.Is(err, driver.ErrReleaseNotFound) {
			return fmt.Errorf("release %q: install interrupted (%w); uninstalled it (--rollback-on-failure)", rel.Name, cause)
		}
		un := action.NewUninstall(a.cfg)
		un.WaitStrategy, un.Timeout = kube.StatusWatcherStrategy, a.Timeout
		if _, err := un.Run(rel.Name); err != nil {
			return fmt.Errorf("release %q: install interrupted (%w); --rollback-on-failure could not uninstall it: %w (helm: %w)", rel.Name, cause, err, helmErr)
		}
		return fmt.Errorf("release %q: install interrupted (%w); uninstalled it (--rollback-on-failure)", rel.Name, cause)
	}
	rel.SetStatus(rcommon.StatusFailed, fmt.Sprintf("Install interrupted: %v", cause))
	if err := a.cfg.Releases.Update(rel); err != nil {
		return fmt.Errorf("release %q: install interrupted (%w); marking revision %d failed: %w", rel.Name, cause, rel.Version, err)
	}
	return fmt.Errorf("release %q: install interrupted (%w): revision %d is failed; run apply again to finish it, or helm uninstall %s", rel.Name, cause, rel.Version, rel.Name)
}

// dryRunStrategy is the SDK's dry run for helm-inject's: the client-side
// one (server-side dry runs are a render option, see RenderOptions).
func dryRunStrategy(dryRun bool) action.DryRunStrategy {
	if dryRun {
		return action.DryRunClient
	}
	return action.DryRunNone
}
