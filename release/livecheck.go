package release

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/kube"
	release "helm.sh/helm/v4/pkg/release/v1"

	"github.com/helm-inject/helm-inject/drift"
	"github.com/helm-inject/helm-inject/manifest"
)

// When the chart, values, injectors and metadata are all what the deployed
// revision holds, helm 4's upgrade still applies every object again, so
// the cluster ends as the chart says: an object deleted with kubectl is
// created again, a field another manager changed is taken back (or, with
// server-side apply, refused as a conflict). Apply skips that upgrade only
// after it has looked: it reads each object of the revision and compares
// it with the manifest through package drift, on the fields the manifest
// sets. What the cluster adds (defaults, a status, a container or volume
// a webhook adds, the token volume) is kept by helm's upgrade as well, so
// it is not a reason to upgrade.

// liveTarget of a document, read for the live check.
type liveObject struct {
	doc     manifest.Document
	desired map[string]any
	gvr     schema.GroupVersionResource
	ns      string
	drift   *ObjectDrift
}

// checkLive reads the live object of every document (the deployed
// revision's manifests; hooks and empty documents are skipped) with at
// most limit reads at a time, one GET each, and returns the objects an
// upgrade would write: missing ones, and those where a field the manifest
// sets differs, in manifest order. rel is the deployed revision: its
// namespace is the default one, and helm's ownership label and
// annotations of it count as fields the manifest sets (helm's upgrade
// sets them on every object).
func checkLive(ctx context.Context, c liveClients, docs []manifest.Document, rel *release.Release, limit int) ([]liveObject, error) {
	var objs []liveObject
	for _, d := range docs {
		if d.Empty() || d.Hook != "" {
			continue
		}
		objs = append(objs, liveObject{doc: d})
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(limit, 1))
	for i := range objs {
		g.Go(func() error {
			if err := objs[i].read(gctx, c, rel); err != nil {
				return fmt.Errorf("reading %s from the cluster: %w", objs[i].doc.ID, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var drifted []liveObject
	for _, o := range objs {
		if o.drift != nil {
			drifted = append(drifted, o)
		}
	}
	return drifted, nil
}

// read fetches o's live object and records how it drifted (o.drift stays
// nil when it matches).
func (o *liveObject) read(ctx context.Context, c liveClients, rel *release.Release) error {
	if err := yaml.Unmarshal(o.doc.YAML(), &o.desired); err != nil {
		return err
	}
	withOwnership(o.desired, rel.Name, rel.Namespace)
	u := &unstructured.Unstructured{Object: o.desired}
	id := ObjectDrift{Kind: u.GetKind(), Name: u.GetName()}
	gvr, ns, err := liveTarget(c.mapper, u, rel.Namespace)
	if meta.IsNoMatchError(err) {
		// The kind is gone (its CRD deleted): helm's upgrade must create
		// it, and reports its own error if it cannot.
		id.Namespace, id.Missing = u.GetNamespace(), true
		o.drift = &id
		return nil
	}
	if err != nil {
		return err
	}
	o.gvr, o.ns, id.Namespace = gvr, ns, ns
	if ns != "" {
		// As helm's builder sets it before it applies.
		u.SetNamespace(ns)
	}
	live, err := c.dynamic.Resource(gvr).Namespace(ns).Get(ctx, u.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		id.Missing = true
		o.drift = &id
		return nil
	}
	if err != nil {
		return err
	}
	for _, d := range drift.Compare(o.desired, live.Object) {
		// Helm's upgrade keeps what the cluster added: neither a
		// three-way merge patch nor a server-side apply removes it.
		if d.Kind != drift.Added {
			id.Differences = append(id.Differences, d)
		}
	}
	if len(id.Differences) > 0 {
		o.drift = &id
	}
	return nil
}

// withOwnership adds helm's ownership label and annotations of release
// name in namespace ns to obj, as helm's upgrade does to every object it
// applies.
func withOwnership(obj map[string]any, name, ns string) {
	md, _ := obj["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		obj["metadata"] = md
	}
	set := func(field, key, value string) {
		m, _ := md[field].(map[string]any)
		if m == nil {
			m = map[string]any{}
			md[field] = m
		}
		m[key] = value
	}
	set("labels", helmManagedByLabel, helmManagedBy)
	set("annotations", helmReleaseNameAnnotation, name)
	set("annotations", helmReleaseNSAnnotation, ns)
}

// FieldConflict is a field of the release's object that another field
// manager owns, so that helm's server-side apply refuses to take it back
// without --force-conflicts.
type FieldConflict struct {
	Object manifest.ID
	// Field is the API server's path (.spec.replicas) and Manager what
	// the server says of its owner (conflict with "kubectl" using apps/v1).
	Field, Manager string
}

// ConflictError is a live check that found fields other managers changed,
// which a server-side apply would refuse: nothing was written.
type ConflictError struct {
	Release   string
	Revision  int
	Conflicts []FieldConflict
}

func (e *ConflictError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "release %q: the chart has not changed, but the cluster differs from revision %d in fields other field managers now own, which server-side apply will not take back:", e.Release, e.Revision)
	for _, c := range e.Conflicts {
		fmt.Fprintf(&b, "\n  %s: %s (%s)", c.Object, c.Field, c.Manager)
	}
	b.WriteString("\nNothing was written. Run apply again with --force-conflicts to take these fields back (as helm upgrade --force-conflicts does), or change the chart to what the cluster now has.")
	return b.String()
}

// serverSideConflicts asks the API server, in a dry run of the very apply
// helm's upgrade makes (the object as the manifest has it, helm's field
// manager, no force), which fields of the drifted objects other managers
// own. Missing objects have none. Nothing is written.
func serverSideConflicts(ctx context.Context, c liveClients, drifted []liveObject, limit int) ([]FieldConflict, error) {
	found := make([][]FieldConflict, len(drifted))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(limit, 1))
	for i, o := range drifted {
		if o.drift.Missing {
			continue
		}
		g.Go(func() error {
			body, err := json.Marshal(o.desired)
			if err != nil {
				return err
			}
			force := false
			_, err = c.dynamic.Resource(o.gvr).Namespace(o.ns).Patch(gctx, o.drift.Name, types.ApplyPatchType, body,
				metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: FieldManager, Force: &force})
			var status apierrors.APIStatus
			switch {
			case err == nil:
				return nil
			case apierrors.IsConflict(err) && errors.As(err, &status) && status.Status().Details != nil:
				for _, cause := range status.Status().Details.Causes {
					if cause.Type == metav1.CauseTypeFieldManagerConflict {
						found[i] = append(found[i], FieldConflict{Object: o.doc.ID.InNamespace(o.ns), Field: cause.Field, Manager: cause.Message})
					}
				}
				return nil
			}
			return fmt.Errorf("checking %s for conflicts (a dry run of helm's server-side apply): %w", o.doc.ID, err)
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var out []FieldConflict
	for _, f := range found {
		out = append(out, f...)
	}
	return out, nil
}

// liveDrift is the live check of an apply or diff whose plan changes
// nothing: the objects of the deployed revision that the cluster holds
// otherwise. When the upgrade that takes them back would be a
// server-side apply without --force-conflicts, fields other managers own
// make it a *ConflictError instead, before anything is written.
//
// Diff passes checkConflicts false: it shows the drift, and apply reports
// the conflicts.
func liveDrift(ctx context.Context, cfg *action.Configuration, clients func(*action.Configuration) (liveClients, error), p *plan, serverSide string, checkConflicts bool, limit int) ([]ObjectDrift, error) {
	if clients == nil {
		clients = newLiveClients
	}
	c, err := clients(cfg)
	if err != nil {
		return nil, err
	}
	// Nothing changed, so the rendered documents are the revision's.
	drifted, err := checkLive(ctx, c, p.rendered.Documents, p.current, limit)
	if err != nil || len(drifted) == 0 {
		return nil, err
	}
	if checkConflicts && appliesServerSide(p.current, serverSide) {
		conflicts, err := serverSideConflicts(ctx, c, drifted, limit)
		if err != nil {
			return nil, err
		}
		if len(conflicts) > 0 {
			return nil, &ConflictError{Release: p.current.Name, Revision: p.current.Version, Conflicts: conflicts}
		}
	}
	out := make([]ObjectDrift, len(drifted))
	for i, o := range drifted {
		out[i] = *o.drift
	}
	return out, nil
}

// appliesServerSide says whether an upgrade of current with --server-side
// serverSide applies server-side: "true" and "false" say so, and "auto"
// keeps the revision's method (a revision that names none is helm 3's
// client-side apply), as helm 4's upgrade decides.
func appliesServerSide(current *release.Release, serverSide string) bool {
	switch serverSide {
	case "true":
		return true
	case "false":
		return false
	}
	return current.ApplyMethod == string(release.ApplyMethodServerSideApply)
}

// waitForRelease waits for rel's resources as helm's upgrade waits for
// the resources it applied, with the same waiter.
func waitForRelease(cfg *action.Configuration, rel *release.Release, strategy kube.WaitStrategy, jobs bool, timeout time.Duration) error {
	resources, err := cfg.KubeClient.Build(strings.NewReader(rel.Manifest), false)
	if err != nil {
		return fmt.Errorf("reading revision %d's manifest: %w", rel.Version, err)
	}
	waiter, err := cfg.KubeClient.GetWaiter(strategy)
	if err != nil {
		return err
	}
	if jobs {
		return waiter.WaitWithJobs(resources, timeout)
	}
	return waiter.Wait(resources, timeout)
}

// pruneHistory keeps at most maxHistory revisions of name (none pruned
// for 0 or less), deleting the oldest first and never the deployed one:
// what Helm's storage does when an upgrade stores a revision
// (removeLeastRecent), for an apply that stores none.
func pruneHistory(cfg *action.Configuration, name string, maxHistory int) error {
	if maxHistory <= 0 {
		return nil
	}
	h, err := cfg.Releases.History(name)
	if err != nil || len(h) <= maxHistory {
		return err
	}
	revs := make([]*release.Release, 0, len(h))
	for _, r := range h {
		rel, err := V1Release(r)
		if err != nil {
			return err
		}
		revs = append(revs, rel)
	}
	slices.SortFunc(revs, func(a, b *release.Release) int { return a.Version - b.Version })
	deployed := 0
	if d, err := cfg.Releases.Deployed(name); err == nil {
		if rel, err := V1Release(d); err == nil && rel != nil {
			deployed = rel.Version
		}
	}
	left := len(revs)
	for _, r := range revs {
		if left <= maxHistory {
			break
		}
		if r.Version == deployed {
			continue
		}
		if _, err := cfg.Releases.Delete(name, r.Version); err != nil {
			return fmt.Errorf("deleting revision %d: %w", r.Version, err)
		}
		left--
	}
	return nil
}

// DriftLines describes each drifted object on one line: what the cluster
// holds otherwise than the revision, which an apply takes back.
func DriftLines(objs []ObjectDrift) []string {
	var lines []string
	for _, o := range objs {
		at := o.Kind + " " + o.Name
		if o.Namespace != "" {
			at += " (namespace " + o.Namespace + ")"
		}
		if o.Missing {
			lines = append(lines, at+": missing from the cluster; apply creates it again")
			continue
		}
		var what []string
		for _, d := range o.Differences {
			s := d.Path + " " + d.Cause
			if d.Want != "" || d.Got != "" {
				s += fmt.Sprintf(" (release %s, cluster %s)", orNone(d.Want), orNone(d.Got))
			}
			what = append(what, s)
		}
		lines = append(lines, at+": "+strings.Join(what, "; ")+"; apply takes it back")
	}
	return lines
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
