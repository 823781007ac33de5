package drift

import (
	"fmt"
	"slices"
	"strings"
)

// Ignore is a rule, as Flux's helm-controller has, for a field another
// controller owns (spec.replicas under a HorizontalPodAutoscaler): a JSON
// pointer, for every object or for one kind or one object.
type Ignore struct {
	// Kind and Name select the objects; empty selects all.
	Kind, Name string
	// Pointer is a JSON pointer; differences at it or below it are
	// ignored.
	Pointer string
}

// ParseIgnore reads [KIND[/NAME]:]POINTER, e.g. /spec/replicas or
// Deployment/web:/spec/replicas.
func ParseIgnore(s string) (Ignore, error) {
	var r Ignore
	target, pointer, ok := strings.Cut(s, ":/")
	if ok {
		r.Pointer = "/" + pointer
		r.Kind, r.Name, _ = strings.Cut(target, "/")
		if r.Kind == "" || strings.Contains(r.Name, "/") {
			return r, fmt.Errorf("drift ignore rule %q: want [KIND[/NAME]:]/JSON/POINTER", s)
		}
	} else {
		r.Pointer = s
	}
	if !strings.HasPrefix(r.Pointer, "/") {
		return r, fmt.Errorf("drift ignore rule %q: the path must be a JSON pointer starting with /, e.g. /spec/replicas", s)
	}
	return r, nil
}

// Filter drops the differences of object kind/name that a rule ignores.
func Filter(diffs []Difference, kind, name string, rules []Ignore) []Difference {
	return slices.DeleteFunc(slices.Clone(diffs), func(d Difference) bool {
		for _, r := range rules {
			if (r.Kind == "" || r.Kind == kind) && (r.Name == "" || r.Name == name) &&
				(d.Path == r.Pointer || strings.HasPrefix(d.Path, strings.TrimSuffix(r.Pointer, "/")+"/")) {
				return true
			}
		}
		return false
	})
}
