package inject

import (
	"fmt"
	"strings"
	"time"

	"github.com/helm-inject/helm-inject/internal/redact"
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
// (--with NAME@CONSTRAINT), before a version is chosen for a release: a
// Spec, not an Injector. Declared.Resolve picks the version.
type TemplateRef struct {
	Library    *Library
	Ref        string // as written, e.g. "log-shipper@^1"
	Injector   string // the name
	Constraint string
	Params     map[string]any
}

// Name implements Spec.
func (r *TemplateRef) Name() string { return r.Ref }

// ParseTemplateRef reads a --with reference, NAME or NAME@CONSTRAINT, of an
// injector in lib.
func ParseTemplateRef(lib *Library, ref string, params map[string]any) (*TemplateRef, error) {
	name, constraint, _ := strings.Cut(ref, "@")
	if name == "" {
		return nil, fmt.Errorf("%q: want NAME or NAME@VERSION-CONSTRAINT", ref)
	}
	return &TemplateRef{Library: lib, Ref: ref, Injector: name, Constraint: constraint, Params: params}, nil
}

// Spec is one injector as declared: an Injector (a command, or a built-in
// at a fixed version), or a *TemplateRef whose version is chosen per
// release.
type Spec interface {
	Name() string
}

// Declared is a release's injectors as the user declared them, in order,
// with how they run. Resolve turns it into the Pipeline that runs for one
// release.
type Declared struct {
	Specs     []Spec
	Timeout   time.Duration
	SkipHooks bool
	SkipTests bool
	// Slow is the Pipeline's (progress of a long injector run).
	Slow func(what string) (done func())
	// IdentifyPrograms and Digests are the Pipeline's (external
	// injectors' executables).
	IdentifyPrograms bool
	Digests          *DigestCache
}

// BuiltIn reports whether a built-in injector is declared (at a fixed
// version or chosen per release).
func (d *Declared) BuiltIn() bool {
	for _, s := range d.Specs {
		switch s.(type) {
		case *TemplateRef, *TemplateInjector:
			return true
		}
	}
	return false
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
	// Pins, when not nil, fix every built-in injector's version (an Argo
	// CD application's pins file); the other fields are not read.
	Pins Pins
}

// Resolve returns the pipeline that runs for a release: the declared
// injectors in order, each TemplateRef at the version the choice picks.
func (d *Declared) Resolve(c Choice) (*Pipeline, error) {
	p := &Pipeline{Timeout: d.Timeout, SkipHooks: d.SkipHooks, SkipTests: d.SkipTests, Slow: d.Slow,
		IdentifyPrograms: d.IdentifyPrograms, Digests: d.Digests}
	for _, spec := range d.Specs {
		switch s := spec.(type) {
		case *TemplateRef:
			ti, err := s.resolve(c)
			if err != nil {
				return nil, err
			}
			p.Injectors = append(p.Injectors, ti)
		case Injector:
			p.Injectors = append(p.Injectors, s)
		default:
			return nil, fmt.Errorf("injector %s: %T can neither run nor be resolved", redact.String(spec.Name()), spec)
		}
	}
	return p, nil
}

// resolve picks the definition the choice asks for and binds the
// parameters to it.
func (r *TemplateRef) resolve(c Choice) (*TemplateInjector, error) {
	if c.Pins != nil {
		def, err := r.pinned(c.Pins)
		if err != nil {
			return nil, err
		}
		return NewTemplateInjector(def, r.Params)
	}
	def, err := r.Library.Resolve(r.Injector, r.Constraint)
	if err != nil {
		return nil, err
	}
	keep := !c.Update && (c.Strategy == ReconcileNever || (c.Strategy == ReconcileWithChart && !c.ChartChanged))
	if rec, ok := c.Recorded[r.Injector]; ok && keep && rec.Version != def.Version {
		pinned := r.Library.Get(r.Injector, rec.Version)
		switch {
		case pinned == nil:
			return nil, fmt.Errorf("the release has %s@%s, which is not in the library %s: restore that version, or move on with --update-injectors", r.Injector, rec.Version, r.Library.Dir)
		case satisfies(pinned.Version, r.Constraint):
			def = pinned
		}
	}
	return NewTemplateInjector(def, r.Params)
}

func satisfies(version, constraint string) bool {
	if constraint == "" {
		return true
	}
	c, err := semverConstraint(constraint)
	return err == nil && c.Check(mustVersion(version))
}
