// Package drift compares a live Kubernetes object with the manifest a
// release applied, as Flux's helm-controller and helm-drift do, but
// limited to the fields the manifest sets: defaults that the API server
// or controllers add (terminationMessagePath, dnsPolicy, a Service's
// clusterIP) are never drift. Containers, init containers and volumes
// that the cluster has and the manifest does not are drift too: they are
// what a mutating webhook or a kubectl patch adds.
package drift

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Kind of difference.
type Kind string

const (
	// Changed: the live value differs from the manifest's.
	Changed Kind = "changed"
	// Removed: the manifest sets the field, the live object lacks it.
	Removed Kind = "removed"
	// Added: a container, init container or volume the manifest does not
	// have.
	Added Kind = "added"
)

// Difference is one path where the live object differs from the manifest.
type Difference struct {
	// Path is a JSON pointer into the live object (into the manifest for
	// a removed field): /spec/template/spec/containers/1/image.
	Path string `json:"path"`
	Kind Kind   `json:"kind"`
	// Want is the manifest's value and Got the live one, as JSON; both
	// empty for a Secret's data.
	Want string `json:"want,omitempty"`
	Got  string `json:"got,omitempty"`
	// Cause names what probably made it: "edited by kubectl-patch",
	// "added in the cluster by kubectl-patch".
	Cause string `json:"cause"`

	// fields is the path in managedFields' terms (f:spec, k:{"name":"x"}).
	fields []string
}

// addedLists are the pod spec lists whose extra items are drift: what a
// webhook or an edit adds to run something the release does not declare.
var addedLists = []string{"containers", "initContainers", "volumes"}

func isAddedList(key string) bool { return slices.Contains(addedLists, key) }

// admitted reports an item the API server itself adds to every pod: the
// ServiceAccount admission plugin's projected token volume,
// kube-api-access-XXXXX. No release declares it and no upgrade removes
// it, so it is neither drift nor part of the live side of a diff.
func admitted(key string, item any) bool {
	m, _ := item.(map[string]any)
	return key == "volumes" && strings.HasPrefix(itemName(item), "kube-api-access-") && m["projected"] != nil
}

// added is the items of a named list that the manifest's list (want)
// does not have and the cluster added.
func added(want, got []any, key string) []int {
	if !isAddedList(key) {
		return nil
	}
	declared := map[string]bool{}
	for _, item := range want {
		declared[itemName(item)] = true
	}
	var out []int
	for j, g := range got {
		if !declared[itemName(g)] && !admitted(key, g) {
			out = append(out, j)
		}
	}
	return out
}

// missingAddedLists are the added lists (init containers, volumes) that a
// pod spec of the manifest (want: it has containers) does not set and the
// live one holds: every item of them is added.
func missingAddedLists(want, got map[string]any) []string {
	if !hasKey(want, "containers") {
		return nil
	}
	var out []string
	for _, k := range addedLists {
		if items, ok := got[k].([]any); ok && want[k] == nil && named(items) && len(added(nil, items, k)) > 0 {
			out = append(out, k)
		}
	}
	return out
}

// Compare returns where live differs from desired, fields in name order
// and list items in the manifest's order, with the cause each difference's
// field managers suggest. Both are
// objects as JSON decodes them. The top-level status is not compared.
func Compare(desired, live map[string]any) []Difference {
	desired = NormalizeSecret(desired)
	w := walker{}
	for _, k := range sortedKeys(desired) {
		if k == "status" {
			continue
		}
		w.compare(desired[k], live[k], hasKey(live, k), "/"+escape(k), []string{"f:" + k}, k)
	}
	owners := fieldOwners(live)
	secret := desired["kind"] == "Secret" && desired["apiVersion"] == "v1"
	for i := range w.out {
		w.out[i].Cause = cause(w.out[i], owners)
		if secret && (strings.HasPrefix(w.out[i].Path, "/data") || strings.HasPrefix(w.out[i].Path, "/stringData")) {
			w.out[i].Want, w.out[i].Got = "", ""
		}
	}
	return w.out
}

type walker struct{ out []Difference }

func (w *walker) add(kind Kind, path string, fields []string, want, got any) {
	d := Difference{Path: path, Kind: kind, fields: slices.Clone(fields)}
	if kind != Added {
		d.Want = jsonString(want)
	}
	if kind != Removed {
		d.Got = jsonString(got)
	}
	w.out = append(w.out, d)
}

// compare walks want (the manifest) and got (live) at path; key is the
// field name that holds them (for lists merged by name).
func (w *walker) compare(want, got any, present bool, path string, fields []string, key string) {
	if want == nil {
		return // null in a manifest sets nothing
	}
	if !present {
		if !isZero(want) {
			w.add(Removed, path, fields, want, nil)
		}
		return
	}
	switch wv := want.(type) {
	case map[string]any:
		gv, ok := got.(map[string]any)
		if !ok {
			w.add(Changed, path, fields, want, got)
			return
		}
		for _, k := range sortedKeys(wv) {
			w.compare(wv[k], gv[k], hasKey(gv, k), path+"/"+escape(k), append(fields, "f:"+k), k)
		}
		for _, k := range missingAddedLists(wv, gv) {
			w.compareNamed(nil, gv[k].([]any), path+"/"+escape(k), append(fields, "f:"+k), k)
		}
	case []any:
		gv, ok := got.([]any)
		if !ok {
			w.add(Changed, path, fields, want, got)
			return
		}
		switch {
		case named(wv) && named(gv):
			w.compareNamed(wv, gv, path, fields, key)
		case len(wv) == len(gv):
			// Item by item, so that defaults inside items (a port's
			// protocol) are not drift. Such lists are atomic for field
			// managers: their owner is the list's.
			for i := range wv {
				w.compare(wv[i], gv[i], true, path+"/"+strconv.Itoa(i), fields, "")
			}
		default:
			w.add(Changed, path, fields, want, got)
		}
	default:
		if !sameScalar(want, got) {
			w.add(Changed, path, fields, want, got)
		}
	}
}

// compareNamed pairs list items by name, as a strategic merge does for
// containers, volumes, env and ports.
func (w *walker) compareNamed(want, got []any, path string, fields []string, key string) {
	index := map[string]int{}
	for i, g := range got {
		index[itemName(g)] = i
	}
	for i, item := range want {
		name := itemName(item)
		itemFields := append(fields, nameKey(name))
		j, ok := index[name]
		if !ok {
			w.add(Removed, path+"/"+strconv.Itoa(i), itemFields, item, nil)
			continue
		}
		delete(index, name)
		w.compare(item, got[j], true, path+"/"+strconv.Itoa(j), itemFields, "")
	}
	for _, j := range added(want, got, key) {
		w.add(Added, path+"/"+strconv.Itoa(j), append(fields, nameKey(itemName(got[j]))), nil, got[j])
	}
}

// named reports whether every item of a non-empty list is an object with a
// string name.
func named(list []any) bool {
	if len(list) == 0 {
		return false
	}
	for _, item := range list {
		if itemName(item) == "" {
			return false
		}
	}
	return true
}

func itemName(item any) string {
	m, _ := item.(map[string]any)
	s, _ := m["name"].(string)
	return s
}

// nameKey is a list item's key in managedFields: k:{"name":"web"}.
func nameKey(name string) string {
	b, _ := json.Marshal(map[string]string{"name": name})
	return "k:" + string(b)
}

// isZero reports a value the API server drops when it stores an object (a
// field with omitempty): false, 0, "", an empty list or map.
func isZero(v any) bool {
	switch x := v.(type) {
	case bool:
		return !x
	case float64: // manifests are decoded as JSON: every number is a float64
		return x == 0
	case string:
		return x == ""
	case []any:
		return len(x) == 0
	case map[string]any:
		for _, e := range x {
			if e != nil && !isZero(e) {
				return false
			}
		}
		return true
	}
	return false
}

// sameScalar compares leaves as the API server keeps them: numbers by
// value, and quantities in canonical form ("0.5" and "500m" of CPU, 1Gi
// and 1024Mi of memory are one).
func sameScalar(want, got any) bool {
	if sameJSON(want, got) {
		return true
	}
	a, aok := quantity(want)
	b, bok := quantity(got)
	return aok && bok && a.Cmp(b) == 0
}

func quantity(v any) (resource.Quantity, bool) {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case float64:
		s = strconv.FormatFloat(x, 'f', -1, 64)
	case int64:
		s = strconv.FormatInt(x, 10)
	default:
		return resource.Quantity{}, false
	}
	q, err := resource.ParseQuantity(s)
	return q, err == nil
}

func sameJSON(a, b any) bool {
	return jsonString(a) == jsonString(b)
}

func jsonString(v any) string {
	if v == nil {
		return ""
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// NormalizeSecret turns a Secret's stringData into data, as the API server
// stores it (each value base64-encoded; stringData wins over data for the
// same key; stringData dropped), so that a manifest with stringData is
// compared with what the cluster holds. Other objects, and a Secret
// without stringData, are returned as they are; obj is not modified.
func NormalizeSecret(obj map[string]any) map[string]any {
	sd, ok := obj["stringData"].(map[string]any)
	if !ok || obj["kind"] != "Secret" {
		return obj
	}
	out := maps.Clone(obj)
	data, _ := obj["data"].(map[string]any)
	data = maps.Clone(data)
	if data == nil {
		data = map[string]any{}
	}
	for k, v := range sd {
		if s, ok := v.(string); ok {
			data[k] = base64.StdEncoding.EncodeToString([]byte(s))
		}
	}
	delete(out, "stringData")
	out["data"] = data
	return out
}

func hasKey(m map[string]any, k string) bool {
	_, ok := m[k]
	return ok
}

func sortedKeys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }

// escape writes a key as a JSON pointer segment (RFC 6901).
func escape(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}
