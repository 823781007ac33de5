package inject

import (
	"context"
	"errors"
	"fmt"
)

// ReconcileStrategy says when a release moves to a newer version of a
// built-in injector (after amalthea's reconcileStrategy).
type ReconcileStrategy string

const (
	// ReconcileAlways injects the version the constraint resolves to now.
	ReconcileAlways ReconcileStrategy = "always"
	// ReconcileNever keeps the version a release already has, as long as
	// it still satisfies the constraint; new releases get the resolved one.
	ReconcileNever ReconcileStrategy = "never"
	// ReconcileWithChart keeps the recorded version until the release
	// changes for another reason (its manifests before injection differ
	// from the last revision's), then moves, so workloads roll once.
	ReconcileWithChart ReconcileStrategy = "with-chart"
)

// ParseReconcileStrategy validates a --reconcile value.
func ParseReconcileStrategy(s string) (ReconcileStrategy, error) {
	switch r := ReconcileStrategy(s); r {
	case ReconcileAlways, ReconcileNever, ReconcileWithChart:
		return r, nil
	}
	return "", fmt.Errorf("unknown reconcile strategy %q (want always, never or with-chart)", s)
}

// TemplateRef is a built-in injector as the user asked for it
// (--with NAME@CONSTRAINT), before a version is chosen for a release.
// It cannot inject by itself: Resolve picks the version.
type TemplateRef struct {
	Library    *Library
	Ref        string // as written, e.g. "log-shipper@^1"
	Injector   string // the name
	Constraint string
	Params     map[string]any
}

// Name implements Injector.
func (r *TemplateRef) Name() string { return r.Ref }

// Inject implements Injector; a TemplateRef must be resolved first.
func (r *TemplateRef) Inject(context.Context, []byte, Env) ([]byte, error) {
	return nil, errors.New("internal error: built-in injector used before its version was resolved")
}

// Choice is how a release's built-in injector versions are chosen.
type Choice struct {
	Strategy ReconcileStrategy
	// Update moves to the resolved version whatever the strategy
	// (--update-injectors).
	Update bool
	// Recorded maps injector names to what the deployed revision has;
	// empty for a new release.
	Recorded map[string]Record
	// ChartChanged says whether the manifests before injection differ from
	// the deployed revision's (for with-chart).
	ChartChanged bool
}

// Resolve replaces every TemplateRef of injectors by a TemplateInjector at
// the version the strategy chooses.
func Resolve(injectors []Injector, c Choice) ([]Injector, error) {
	out := make([]Injector, 0, len(injectors))
	for _, inj := range injectors {
		ref, ok := inj.(*TemplateRef)
		if !ok {
			out = append(out, inj)
			continue
		}
		def, err := ref.Library.Resolve(ref.Injector, ref.Constraint)
		if err != nil {
			return nil, err
		}
		keep := !c.Update && (c.Strategy == ReconcileNever || (c.Strategy == ReconcileWithChart && !c.ChartChanged))
		if rec, ok := c.Recorded[ref.Injector]; ok && keep && rec.Version != def.Version {
			pinned := ref.Library.Get(ref.Injector, rec.Version)
			switch {
			case pinned == nil:
				return nil, fmt.Errorf("the release has %s@%s, which is not in the library %s: restore that version, or move on with --update-injectors", ref.Injector, rec.Version, ref.Library.Dir)
			case satisfies(pinned.Version, ref.Constraint):
				def = pinned
			}
		}
		ti, err := NewTemplateInjector(def, ref.Params)
		if err != nil {
			return nil, err
		}
		out = append(out, ti)
	}
	return out, nil
}

func satisfies(version, constraint string) bool {
	if constraint == "" {
		return true
	}
	c, err := semverConstraint(constraint)
	return err == nil && c.Check(mustVersion(version))
}
