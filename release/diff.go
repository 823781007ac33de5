package release

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/action"
	release "helm.sh/helm/v4/pkg/release/v1"

	"github.com/helm-inject/helm-inject/inject"
	"github.com/helm-inject/helm-inject/manifest"
)

// Diff shows what an apply would change, without writing to the cluster:
// it runs apply's own plan (render, inject, temporary chart) and compares
// the result with the deployed revision's manifest and hooks.
type Diff struct {
	cfg *action.Configuration
	Inputs

	// AllowUnreleased treats a release that does not exist as empty, so
	// everything shows as added; without it that is an error.
	AllowUnreleased bool
	// ServerSide is helm-diff's --server-side, the apply method the apply
	// would be given: "true" or "false" differing from the deployed
	// revision's is a change, as for apply.
	ServerSide string
	// ThreeWayMerge compares with the live objects instead of the release
	// record (helm-diff's --three-way-merge): drift shows, and
	// HasChanges means the cluster differs from what apply would send.
	ThreeWayMerge bool
	// DisableHooks is the apply's --no-hooks: with it, the chart's
	// upgrade hooks do not make a revision.
	DisableHooks bool
	// clients builds the live check's clients; nil is newLiveClients.
	clients func(*action.Configuration) (liveClients, error)
}

// NewDiff returns a Diff bound to a Helm configuration.
func NewDiff(cfg *action.Configuration) *Diff {
	return &Diff{cfg: cfg, Inputs: Inputs{Injectors: &inject.Declared{}}}
}

// ChangeType says how a resource changes.
type ChangeType string

const (
	Added   ChangeType = "added"
	Removed ChangeType = "removed"
	Changed ChangeType = "changed"
)

// Change is one resource that an apply would add, remove or modify.
type Change struct {
	Type ChangeType
	ID   manifest.ID
	// Hook is true for a hook resource (shown by `helm get hooks`); Test
	// for a `helm test` hook.
	Hook, Test bool
	// Before and After are the resource's YAML; empty when added/removed.
	Before, After string
}

// DiffResult is what Diff found.
type DiffResult struct {
	Release string
	// Installed is false when the release does not exist yet.
	Installed bool
	Changes   []Change
	// Reasons are the differences, other than resources, that make apply
	// store a new revision (injectors, chart metadata, values, labels, an
	// install, a failed newest revision).
	Reasons []string
	// InjectorsBefore and InjectorsAfter are the injectors recorded in the
	// deployed revision and the ones this apply would record.
	InjectorsBefore, InjectorsAfter []inject.Record
	// Drift describes the objects the cluster holds otherwise than the
	// deployed revision, which an apply of an unchanged chart takes back
	// (the live check), or with --three-way-merge what the cluster added
	// to the objects that an apply keeps.
	Drift []string
	// LiveDrift are the objects of the live check.
	LiveDrift []ObjectDrift
}

// Run computes the changes for release name.
func (d *Diff) Run(ctx context.Context, name string, src Source, vals map[string]any) (*DiffResult, error) {
	// Diff shows what apply would do; a kept chart is apply's business.
	in := d.Inputs
	in.KeepChart = ""
	// A first install creates crds/, as apply without --skip-crds.
	p, err := makePlan(ctx, d.cfg, name, src, vals, in, true)
	if err != nil {
		return nil, err
	}
	res := &DiffResult{Release: name, InjectorsBefore: p.recordsBefore, InjectorsAfter: p.records}
	if p.current == nil {
		if !d.AllowUnreleased {
			return nil, fmt.Errorf("release %q does not exist in namespace %q; use --allow-unreleased to see it as new", name, d.Namespace)
		}
	} else {
		res.Installed = true
	}
	dec, err := decideRevision(p, revisionInputs{labels: d.Labels, serverSide: d.ServerSide, hooks: !d.DisableHooks})
	if err != nil {
		return nil, fmt.Errorf("release %q: %w", name, err)
	}
	res.Changes, res.Reasons = dec.Changes, dec.Reasons
	// As apply: with nothing changed, the cluster is read (--three-way-merge
	// reads it below, for every object).
	if p.current != nil && !dec.newRevision() && !d.SkipLiveCheck && !d.ThreeWayMerge {
		if res.LiveDrift, err = liveDrift(ctx, d.cfg, d.clients, p, d.ServerSide, false, DefaultWriteConcurrency); err != nil {
			return nil, fmt.Errorf("release %q: %w", name, err)
		}
		res.Drift = DriftLines(res.LiveDrift)
	}
	if d.ThreeWayMerge && p.current != nil {
		if res.Changes, res.Drift, err = d.threeWay(ctx, p); err != nil {
			return nil, fmt.Errorf("release %q: %w", name, err)
		}
	}
	return res, nil
}

// threeWay replaces the changes with the ones against the live objects
// and adds a reason for each thing the cluster added that an apply keeps.
func (d *Diff) threeWay(ctx context.Context, p *plan) ([]Change, []string, error) {
	c, err := newLiveClients(d.cfg)
	if err != nil {
		return nil, nil, err
	}
	recorded, err := releaseDocuments(p.current, nil)
	if err != nil {
		return nil, nil, err
	}
	return threeWay(ctx, c, p, recorded)
}

// HasChanges reports whether apply, given the same inputs, would store a
// new revision: a resource, the injectors, the chart, the values or the
// labels change, or the release is not installed yet. With ThreeWayMerge
// the resources are the live objects', and what the cluster added counts
// too (Drift): whether the cluster differs from what apply sends.
func (r *DiffResult) HasChanges() bool {
	return len(r.Changes) > 0 || len(r.Reasons) > 0 || len(r.Drift) > 0
}

// releaseDocuments splits a stored revision back into documents: the
// manifest (each document led by Helm's "# Source:" comment) and the hooks.
// A document the same as one of known (what is about to be compared with
// it) is not parsed again.
func releaseDocuments(rel *release.Release, known manifest.Known) ([]manifest.Document, error) {
	docs, err := manifestDocuments(rel.Manifest, known)
	if err != nil {
		return nil, err
	}
	for _, h := range rel.Hooks {
		d, err := known.Parse(h.Path, strings.TrimSpace(h.Manifest))
		if err != nil {
			return nil, err
		}
		docs = append(docs, d)
	}
	return docs, nil
}

// manifestDocuments splits a release manifest into documents, each named
// by the "# Source:" comment Helm puts before it; one the same as one of
// known (which may be nil) is not parsed again.
func manifestDocuments(stream string, known manifest.Known) ([]manifest.Document, error) {
	var docs []manifest.Document
	for _, part := range manifest.Split(stream) {
		source := ""
		if rest, ok := strings.CutPrefix(part, "# Source: "); ok {
			line, content, _ := strings.Cut(rest, "\n")
			source, part = line, strings.TrimSpace(content)
		}
		d, err := known.Parse(source, part)
		if err != nil {
			return nil, err
		}
		docs = append(docs, d)
	}
	return docs, nil
}

// compare pairs documents by identity (a missing namespace counts as ns)
// and lists what differs, in the order of after, then removed resources in
// the order of before.
func compare(before, after []manifest.Document, ns string) []Change {
	key := func(d manifest.Document) manifest.ID { return d.ID.InNamespace(ns) }
	// Documents of comments only create nothing and have no identity.
	before = slices.DeleteFunc(slices.Clone(before), manifest.Document.Empty)
	after = slices.DeleteFunc(slices.Clone(after), manifest.Document.Empty)
	old := make(map[manifest.ID]manifest.Document, len(before))
	for _, d := range before {
		old[key(d)] = d
	}
	var changes []Change
	seen := make(map[manifest.ID]bool, len(after))
	for _, d := range after {
		k := key(d)
		seen[k] = true
		o, ok := old[k]
		switch {
		case !ok:
			changes = append(changes, Change{Type: Added, ID: k, Hook: d.Hook != "", Test: d.IsTestHook(), After: d.Content})
		case o.Content != d.Content:
			changes = append(changes, Change{Type: Changed, ID: k, Hook: d.Hook != "" || o.Hook != "", Test: d.IsTestHook() || o.IsTestHook(), Before: o.Content, After: d.Content})
		}
	}
	for _, d := range before {
		if k := key(d); !seen[k] {
			changes = append(changes, Change{Type: Removed, ID: k, Hook: d.Hook != "", Test: d.IsTestHook(), Before: d.Content})
		}
	}
	return changes
}

// sameJSON compares values as they are stored: JSON, where 2 and 2.0 are
// one number and an empty map equals no map.
func sameJSON(a, b map[string]any) (bool, error) {
	if len(a) == 0 && len(b) == 0 {
		return true, nil
	}
	ja, err := json.Marshal(a)
	if err != nil {
		return false, err
	}
	jb, err := json.Marshal(b)
	if err != nil {
		return false, err
	}
	var na, nb any
	if err := errors.Join(json.Unmarshal(ja, &na), json.Unmarshal(jb, &nb)); err != nil {
		return false, err
	}
	return reflect.DeepEqual(na, nb), nil
}
