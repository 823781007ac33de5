package drift

import (
	"slices"
	"strings"
)

// helmManager is the field manager of helm and helm-inject: what it owns
// is the release's, not a cause of drift.
const helmManager = "helm"

// owner is one field manager of a live object and the fields it owns.
type owner struct {
	manager string
	fields  map[string]any
}

// fieldOwners reads metadata.managedFields: who wrote which fields.
func fieldOwners(live map[string]any) []owner {
	meta, _ := live["metadata"].(map[string]any)
	entries, _ := meta["managedFields"].([]any)
	var out []owner
	for _, e := range entries {
		m, _ := e.(map[string]any)
		name, _ := m["manager"].(string)
		fields, _ := m["fieldsV1"].(map[string]any)
		if name == "" || fields == nil || name == helmManager {
			continue
		}
		out = append(out, owner{manager: name, fields: fields})
	}
	return out
}

// owns reports whether fields holds the path, or an atomic field above it
// (a leaf {} owns everything under it).
func (o owner) owns(path []string) bool {
	node := o.fields
	for _, seg := range path {
		next, ok := node[seg].(map[string]any)
		if !ok {
			return false
		}
		if len(next) == 0 {
			return true
		}
		node = next
	}
	return true
}

// cause names what probably made a difference: who wrote the field other
// than helm, and how.
func cause(d Difference, owners []owner) string {
	var by []string
	for _, o := range owners {
		if o.owns(d.fields) && !slices.Contains(by, o.manager) {
			by = append(by, o.manager)
		}
	}
	what := map[Kind]string{Changed: "edited", Removed: "removed in the cluster", Added: "added in the cluster"}[d.Kind]
	if len(by) > 0 {
		return what + " by " + strings.Join(by, ", ")
	}
	return what
}
