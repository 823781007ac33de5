package inject

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/helm-inject/helm-inject/manifest"
)

// Annotations on injected pod templates.
const (
	// StatusAnnotation lists, per built-in injector, what it added, so that
	// re-injection can strip it first (as sidecar.istio.io/status does).
	StatusAnnotation = "helm-inject.io/status"
	// OptOutAnnotation set to "false" on a pod template keeps every
	// built-in injector away from it.
	OptOutAnnotation = "helm-inject.io/inject"
)

// status is the value of StatusAnnotation.
type status struct {
	Injectors []StatusEntry `json:"injectors"`
}

// StatusEntry is what one built-in injector added to a pod template.
type StatusEntry struct {
	// Record names the injector, its version and digest.
	Record
	Containers     []string `json:"containers,omitempty"`
	InitContainers []string `json:"initContainers,omitempty"`
	Volumes        []string `json:"volumes,omitempty"`
	VolumeMounts   []string `json:"volumeMounts,omitempty"`
	Env            []string `json:"env,omitempty"`
	Annotations    []string `json:"annotations,omitempty"`
	Labels         []string `json:"labels,omitempty"`
}

// recordStatus writes the status annotation with entry in place of the
// same injector's earlier one, keeping the others, sorted by name.
func recordStatus(meta *yaml.Node, st status, entry StatusEntry) error {
	kept := st.Injectors[:0]
	for _, e := range st.Injectors {
		if e.Name != entry.Name {
			kept = append(kept, e)
		}
	}
	st.Injectors = append(kept, entry)
	slices.SortFunc(st.Injectors, func(a, b StatusEntry) int { return strings.Compare(a.Name, b.Name) })
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	setScalar(ensureMap(meta, "annotations"), StatusAnnotation, string(b))
	return nil
}

// strip removes what a previous run of an injector recorded.
func strip(meta, spec *yaml.Node, e StatusEntry) {
	removeNamed(mapGet(spec, "containers"), e.Containers)
	removeNamed(mapGet(spec, "initContainers"), e.InitContainers)
	removeNamed(mapGet(spec, "volumes"), e.Volumes)
	for _, c := range seqItems(mapGet(spec, "containers")) {
		removeNamed(mapGet(c, "volumeMounts"), e.VolumeMounts)
		removeNamed(mapGet(c, "env"), e.Env)
	}
	for _, k := range e.Annotations {
		mapDelete(mapGet(meta, "annotations"), k)
	}
	for _, k := range e.Labels {
		mapDelete(mapGet(meta, "labels"), k)
	}
}

func readStatus(meta *yaml.Node) status {
	var st status
	if s := scalar(mapGet(meta, "annotations"), StatusAnnotation); s != "" {
		_ = json.Unmarshal([]byte(s), &st)
	}
	return st
}

// HasPodTemplate reports whether resources of kind have a pod template: the
// only kinds a built-in injector changes.
func HasPodTemplate(kind string) bool {
	_, ok := podTemplatePath(kind)
	return ok
}

// podTemplatePath says where a kind keeps its pod template: the fields
// below the object (none for a Pod, which is its own template); ok is
// false for a kind without one.
func podTemplatePath(kind string) (path []string, ok bool) {
	switch kind {
	case "Pod":
		return nil, true
	case "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "ReplicationController":
		return []string{"spec", "template"}, true
	case "CronJob":
		return []string{"spec", "jobTemplate", "spec", "template"}, true
	}
	return nil, false
}

// podTemplateOf returns the object holding a workload's pod metadata and
// spec (nil when its kind has none), with the workload's kind and name.
func podTemplateOf(obj *yaml.Node) (*yaml.Node, string, string) {
	kind := scalar(obj, "kind")
	name := scalar(mapGet(obj, "metadata"), "name")
	path, ok := podTemplatePath(kind)
	if !ok {
		return nil, kind, name
	}
	tmpl := obj
	for _, field := range path {
		tmpl = mapGet(tmpl, field)
	}
	return tmpl, kind, name
}

// parseObject returns a document's root node, which the caller may
// change (the parse the document kept, if any: manifest.Document.Tree),
// and the object under it.
func parseObject(d manifest.Document) (root, obj *yaml.Node, err error) {
	if root, err = d.Tree(); err != nil {
		return nil, nil, fmt.Errorf("reading a manifest: %w", err)
	}
	if len(root.Content) == 0 {
		return nil, nil, errors.New("reading a manifest: the document is empty")
	}
	return root, root.Content[0], nil
}

// PodStatus reads the StatusAnnotation of a resource's pod template: which
// built-in injectors injected it, and what they added. It returns the
// resource's kind and name, and no entries for a resource without a pod
// template or without injection.
func PodStatus(doc string) (kind, name string, entries []StatusEntry, err error) {
	_, obj, err := parseObject(manifest.Document{Content: doc})
	if err != nil {
		return "", "", nil, err
	}
	tmpl, kind, name := podTemplateOf(obj)
	if tmpl == nil {
		return kind, name, nil, nil
	}
	return kind, name, readStatus(mapGet(tmpl, "metadata")).Injectors, nil
}
