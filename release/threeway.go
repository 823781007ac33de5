package release

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/helm-inject/helm-inject/drift"
	"github.com/helm-inject/helm-inject/manifest"
)

// getLive reads the live object of a manifest; nil when the cluster does
// not have it. A namespaced object without a namespace is in ns.
func getLive(ctx context.Context, c liveClients, desired map[string]any, ns string) (*unstructured.Unstructured, string, error) {
	u := &unstructured.Unstructured{Object: desired}
	gvr, ns, err := liveTarget(c.mapper, u, ns)
	if err != nil {
		return nil, "", err
	}
	live, err := c.dynamic.Resource(gvr).Namespace(ns).Get(ctx, u.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, ns, nil
	}
	if err != nil {
		return nil, ns, err
	}
	return live, ns, nil
}

// threeWay is diff --three-way-merge: each object of the new manifest is
// compared with its live object, not with the release record, as
// helm-diff's flag does. The live side shows the fields the manifest sets
// as the cluster has them, and the containers, init containers and
// volumes the cluster added; both sides are written in one canonical form
// (keys sorted), so only values differ. Hooks, which do not stay in the
// cluster, are still compared with the release record. Besides the
// changes, it returns a note for each thing the cluster added that an
// apply keeps.
func threeWay(ctx context.Context, c liveClients, p *plan, recorded []manifest.Document) ([]Change, []string, error) {
	var before, after []manifest.Document
	var notes []string
	seen := map[manifest.ID]bool{}
	for _, d := range p.rendered.Documents {
		if d.Empty() || d.Hook != "" {
			after = append(after, d)
			continue
		}
		seen[d.ID.InNamespace(p.namespace)] = true
		liveDoc, desiredDoc, added, err := liveSide(ctx, c, d, p.namespace)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", d.ID, err)
		}
		after = append(after, desiredDoc)
		if liveDoc != nil {
			before = append(before, *liveDoc)
		}
		notes = append(notes, added...)
	}
	for _, d := range recorded {
		switch {
		case d.Empty() || seen[d.ID.InNamespace(p.namespace)]:
		case d.Hook != "":
			before = append(before, d)
		default:
			// Removed by the apply: shown as the cluster has it.
			liveDoc, _, _, err := liveSide(ctx, c, d, p.namespace)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", d.ID, err)
			}
			if liveDoc != nil {
				before = append(before, *liveDoc)
			}
		}
	}
	return compare(before, after, p.namespace), notes, nil
}

// liveSide is one document's two sides in canonical form: the live object
// seen through the manifest (nil when the cluster lacks it) and the
// manifest; and what the cluster added that an apply would keep.
func liveSide(ctx context.Context, c liveClients, d manifest.Document, ns string) (*manifest.Document, manifest.Document, []string, error) {
	var desired map[string]any
	if err := yaml.Unmarshal(d.YAML(), &desired); err != nil {
		return nil, d, nil, err
	}
	// The API server folds a Secret's stringData into data and drops it;
	// the manifest is compared as it stores it, or an unchanged Secret
	// would show its data removed. Projected on itself, the manifest then
	// loses what the live side cannot have: nulls, status.
	desired = drift.NormalizeSecret(desired)
	canonical, err := canonicalDocument(d, drift.Project(desired, desired))
	if err != nil {
		return nil, d, nil, err
	}
	live, _, err := getLive(ctx, c, desired, ns)
	if err != nil || live == nil {
		return nil, canonical, nil, err
	}
	projected, err := canonicalDocument(d, drift.Project(desired, live.Object))
	if err != nil {
		return nil, canonical, nil, err
	}
	var notes []string
	for _, diff := range drift.Compare(desired, live.Object) {
		if diff.Kind == drift.Added {
			notes = append(notes, fmt.Sprintf("%s: %s %s; an apply keeps it (see docs/live.md to restore the release's state)", d.ID, diff.Path, diff.Cause))
		}
	}
	return &projected, canonical, notes, nil
}

// canonicalDocument writes obj as d's content, keys sorted.
func canonicalDocument(d manifest.Document, obj map[string]any) (manifest.Document, error) {
	b, err := yaml.Marshal(obj)
	if err != nil {
		return d, err
	}
	d.Content = strings.TrimSpace(string(b))
	return d, nil
}
