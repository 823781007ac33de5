package inject

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"text/template"

	"github.com/Masterminds/semver/v3"
	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/helm-inject/helm-inject/internal/parallel"
	"github.com/helm-inject/helm-inject/internal/yamlencode"
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

// Definition is one released version of a built-in sidecar template.
type Definition struct {
	Name        string      `yaml:"name"`
	Version     string      `yaml:"version"`
	Description string      `yaml:"description,omitempty"`
	Parameters  []Parameter `yaml:"parameters,omitempty"`
	Select      Selection   `yaml:"select,omitempty"`
	// Template is a Go template (with TemplateFuncs) that renders a YAML
	// mapping of what to add to each selected pod template; see Patch.
	Template string `yaml:"template"`

	// Digest is the SHA-256 of the definition file's bytes.
	Digest string `yaml:"-"`
	// File is where the definition was read from.
	File string `yaml:"-"`

	tmpl *template.Template
}

// Parameter is a declared input of a definition.
type Parameter struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description,omitempty"`
	Default     any    `yaml:"default,omitempty"`
	Required    bool   `yaml:"required,omitempty"`
}

// Selection says which workloads a definition injects into. Empty fields
// select everything.
type Selection struct {
	// Kinds of workload: Pod, Deployment, StatefulSet, DaemonSet,
	// ReplicaSet, Job, CronJob.
	Kinds []string `yaml:"kinds,omitempty"`
	// LabelSelector in kubectl's syntax ("app=web,tier!=db"), matched
	// against the pod template's labels.
	LabelSelector string `yaml:"labelSelector,omitempty"`
	// Names are globs matched against the workload's name.
	Names []string `yaml:"names,omitempty"`
}

// Patch is what a definition's template renders to.
type Patch struct {
	// Containers are appended to the pod's containers.
	Containers []yaml.Node `yaml:"containers,omitempty"`
	// NativeSidecars are appended to initContainers with restartPolicy
	// Always (Kubernetes native sidecars).
	NativeSidecars []yaml.Node `yaml:"nativeSidecars,omitempty"`
	// InitContainers are prepended to the pod's initContainers.
	InitContainers []yaml.Node `yaml:"initContainers,omitempty"`
	Volumes        []yaml.Node `yaml:"volumes,omitempty"`
	// VolumeMounts and Env are added to every container that was there
	// before injection.
	VolumeMounts []yaml.Node       `yaml:"volumeMounts,omitempty"`
	Env          []yaml.Node       `yaml:"env,omitempty"`
	Annotations  map[string]string `yaml:"annotations,omitempty"`
	Labels       map[string]string `yaml:"labels,omitempty"`
}

// ParseDefinition reads a definition file's bytes.
func ParseDefinition(file string, data []byte) (*Definition, error) {
	var d Definition
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("injector definition %s: %w", file, err)
	}
	d.File = file
	sum := sha256.Sum256(data)
	d.Digest = "sha256:" + hex.EncodeToString(sum[:])
	if d.Name == "" || d.Version == "" {
		return nil, fmt.Errorf("injector definition %s: name and version are required", file)
	}
	if _, err := semver.StrictNewVersion(d.Version); err != nil {
		return nil, fmt.Errorf("injector definition %s: version %q is not semver (MAJOR.MINOR.PATCH): %w", file, d.Version, err)
	}
	if _, err := labels.Parse(d.Select.LabelSelector); err != nil {
		return nil, fmt.Errorf("injector definition %s: select.labelSelector: %w", file, err)
	}
	for _, g := range d.Select.Names {
		if _, err := path.Match(g, ""); err != nil {
			return nil, fmt.Errorf("injector definition %s: select.names glob %q: %w", file, g, err)
		}
	}
	t, err := parseTemplate(d.Name+"@"+d.Version, d.Template)
	if err != nil {
		return nil, fmt.Errorf("injector definition %s: template: %w", file, err)
	}
	d.tmpl = t
	return &d, nil
}

// Ref is "name@version".
func (d *Definition) Ref() string { return d.Name + "@" + d.Version }

// TemplateInjector applies a Definition with parameter values.
type TemplateInjector struct {
	Def *Definition
	// Params are the user's values; defaults fill the rest.
	Params map[string]any

	params map[string]any
	// patches holds decoded patches by their rendered text: a template
	// that does not use .Workload renders the same patch for every
	// workload, and decoding it was a tenth of a built-in injection.
	patches *patchCache
}

// NewTemplateInjector checks params against the definition's declared
// parameters: unknown ones and missing required ones are errors.
func NewTemplateInjector(def *Definition, params map[string]any) (*TemplateInjector, error) {
	declared := map[string]Parameter{}
	for _, p := range def.Parameters {
		declared[p.Name] = p
	}
	var unknown []string
	for k := range params {
		if _, ok := declared[k]; !ok {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("injector %s (%s) has no parameter %s", def.Ref(), def.File, strings.Join(unknown, ", "))
	}
	merged := map[string]any{}
	for _, p := range def.Parameters {
		v, ok := params[p.Name]
		switch {
		case ok:
			merged[p.Name] = v
		case p.Required:
			return nil, fmt.Errorf("injector %s (%s): parameter %q is required", def.Ref(), def.File, p.Name)
		default:
			merged[p.Name] = p.Default
		}
	}
	return &TemplateInjector{Def: def, Params: params, params: merged, patches: &patchCache{}}, nil
}

// Name implements Injector.
func (t *TemplateInjector) Name() string { return t.Def.Ref() }

// Digest identifies the definition and the parameter values: two injectors
// with the same digest produce the same bytes.
func (t *TemplateInjector) Digest() string {
	p, _ := json.Marshal(t.params) // map keys are sorted
	sum := sha256.Sum256(append([]byte(t.Def.Digest+"\n"), p...))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// status is the value of StatusAnnotation.
type status struct {
	Injectors []StatusEntry `json:"injectors"`
}

// StatusEntry is what one built-in injector added to a pod template.
type StatusEntry struct {
	Name           string   `json:"name"`
	Version        string   `json:"version"`
	Digest         string   `json:"digest"`
	Containers     []string `json:"containers,omitempty"`
	InitContainers []string `json:"initContainers,omitempty"`
	Volumes        []string `json:"volumes,omitempty"`
	VolumeMounts   []string `json:"volumeMounts,omitempty"`
	Env            []string `json:"env,omitempty"`
	Annotations    []string `json:"annotations,omitempty"`
	Labels         []string `json:"labels,omitempty"`
}

// Inject implements Injector: every selected pod template gets the patch,
// after what an earlier run of the same injector added was stripped.
func (t *TemplateInjector) Inject(_ context.Context, manifests []byte, env Env) ([]byte, error) {
	var out strings.Builder
	for _, doc := range manifest.Split(string(manifests)) {
		content, _, err := t.injectOne(doc, env)
		if err != nil {
			return nil, err
		}
		out.WriteString("---\n")
		out.WriteString(content)
		out.WriteString("\n")
	}
	return []byte(out.String()), nil
}

// InjectDocuments implements DocumentInjector, the Pipeline's fast path
// for built-in injectors: only documents of a kind that has a pod template
// (and that the definition selects) are parsed, and the output needs no
// identity check, because only pod templates are changed. Documents are
// independent, so they are injected on every CPU.
func (t *TemplateInjector) InjectDocuments(_ context.Context, docs []manifest.Document, env Env) ([]manifest.Document, error) {
	out := slices.Clone(docs)
	err := parallel.For(len(docs), func(i int) error {
		d := docs[i]
		if !podTemplateKinds[d.ID.Kind] || (len(t.Def.Select.Kinds) > 0 && !containsString(t.Def.Select.Kinds, d.ID.Kind)) {
			return nil
		}
		content, changed, err := t.injectOne(d.Content, env)
		if err != nil {
			return err
		}
		if changed {
			out[i].Content = content
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// podTemplateKinds are the kinds podTemplateOf finds a pod template in.
var podTemplateKinds = map[string]bool{
	"Pod": true, "Deployment": true, "StatefulSet": true, "DaemonSet": true, "ReplicaSet": true,
	"Job": true, "ReplicationController": true, "CronJob": true,
}

// injectOne injects one document (trimmed YAML text) and returns its new
// text, trimmed as manifest.Split returns it, and whether it changed.
func (t *TemplateInjector) injectOne(doc string, env Env) (string, bool, error) {
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(doc), &root); err != nil || len(root.Content) == 0 {
		return "", false, fmt.Errorf("reading a manifest: %v", err)
	}
	obj := root.Content[0]
	tmpl, kind, name := podTemplateOf(obj)
	if tmpl == nil || !t.selects(tmpl, kind, name) {
		return doc, false, nil
	}
	changed, err := t.apply(tmpl, kind, name, env)
	if err != nil {
		return "", false, fmt.Errorf("%s %s: %w", kind, name, err)
	}
	if !changed {
		return doc, false, nil
	}
	b, err := yamlencode.Encode(&root)
	if err != nil {
		return "", false, err
	}
	return strings.TrimSpace(string(b)), true, nil
}

func (t *TemplateInjector) selects(tmpl *yaml.Node, kind, name string) bool {
	if v := scalar(mapGet(mapGet(tmpl, "metadata"), "annotations"), OptOutAnnotation); v == "false" {
		return false
	}
	s := t.Def.Select
	if len(s.Kinds) > 0 && !containsString(s.Kinds, kind) {
		return false
	}
	if len(s.Names) > 0 {
		ok := false
		for _, g := range s.Names {
			if m, _ := path.Match(g, name); m {
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	if s.LabelSelector != "" {
		sel, _ := labels.Parse(s.LabelSelector)
		if !sel.Matches(labels.Set(stringMap(mapGet(mapGet(tmpl, "metadata"), "labels")))) {
			return false
		}
	}
	return true
}

// apply strips this injector's previous additions from a pod template and
// adds the rendered patch. It reports whether the template changed.
func (t *TemplateInjector) apply(tmpl *yaml.Node, kind, name string, env Env) (bool, error) {
	meta := ensureMap(tmpl, "metadata")
	spec := ensureMap(tmpl, "spec")
	st := readStatus(meta)
	var prev *StatusEntry
	for i := range st.Injectors {
		if st.Injectors[i].Name == t.Def.Name {
			prev = &st.Injectors[i]
		}
	}
	if prev != nil {
		strip(meta, spec, *prev)
	}
	// The status annotation is written last, after this injector's own
	// annotations, so a second run puts every key back where the first did.
	mapDelete(mapGet(meta, "annotations"), StatusAnnotation)

	var containerNames []string
	for _, c := range seqItems(mapGet(spec, "containers")) {
		containerNames = append(containerNames, scalar(c, "name"))
	}
	data := map[string]any{
		"Params":   t.params,
		"Release":  map[string]any{"Name": env.Release, "Namespace": env.Namespace},
		"Workload": map[string]any{"Kind": kind, "Name": name, "Labels": stringMap(mapGet(meta, "labels")), "Containers": containerNames},
	}
	var rendered bytes.Buffer
	if err := t.Def.tmpl.Execute(&rendered, data); err != nil {
		return false, fmt.Errorf("template of %s: %w", t.Def.Ref(), err)
	}
	patch, err := t.patches.decode(rendered.String())
	if err != nil {
		return false, fmt.Errorf("template of %s rendered invalid YAML: %w", t.Def.Ref(), err)
	}

	entry := StatusEntry{Name: t.Def.Name, Version: t.Def.Version, Digest: t.Digest()}
	existing := map[string]bool{}
	for _, field := range []string{"containers", "initContainers"} {
		for _, c := range seqItems(mapGet(spec, field)) {
			existing[scalar(c, "name")] = true
		}
	}
	addContainers := func(field string, items []yaml.Node, prepend, native bool) error {
		if len(items) == 0 {
			return nil
		}
		seq := ensureSeq(spec, field)
		var add []*yaml.Node
		for i := range items {
			c := &items[i]
			n := scalar(c, "name")
			if n == "" {
				return fmt.Errorf("%s of %s has a container without a name", field, t.Def.Ref())
			}
			if existing[n] {
				return fmt.Errorf("%s would add container %q, but the pod already has a container of that name", t.Def.Ref(), n)
			}
			existing[n] = true
			if native {
				setScalar(c, "restartPolicy", "Always")
			}
			add = append(add, c)
			if field == "containers" {
				entry.Containers = append(entry.Containers, n)
			} else {
				entry.InitContainers = append(entry.InitContainers, n)
			}
		}
		if prepend {
			seq.Content = append(add, seq.Content...)
		} else {
			seq.Content = append(seq.Content, add...)
		}
		return nil
	}
	if err := addContainers("initContainers", patch.InitContainers, true, false); err != nil {
		return false, err
	}
	if err := addContainers("initContainers", patch.NativeSidecars, false, true); err != nil {
		return false, err
	}
	if err := addContainers("containers", patch.Containers, false, false); err != nil {
		return false, err
	}
	if len(patch.Volumes) > 0 {
		seq := ensureSeq(spec, "volumes")
		have := map[string]bool{}
		for _, v := range seq.Content {
			have[scalar(v, "name")] = true
		}
		for i := range patch.Volumes {
			n := scalar(&patch.Volumes[i], "name")
			if have[n] {
				return false, fmt.Errorf("%s would add volume %q, but the pod already has a volume of that name", t.Def.Ref(), n)
			}
			seq.Content = append(seq.Content, &patch.Volumes[i])
			entry.Volumes = append(entry.Volumes, n)
		}
	}
	// Mounts and env go into the containers that were there before.
	for _, c := range seqItems(mapGet(spec, "containers")) {
		if !containsString(containerNames, scalar(c, "name")) {
			continue
		}
		for i := range patch.VolumeMounts {
			ensureSeq(c, "volumeMounts").Content = append(ensureSeq(c, "volumeMounts").Content, cloneNode(&patch.VolumeMounts[i]))
		}
		for i := range patch.Env {
			ensureSeq(c, "env").Content = append(ensureSeq(c, "env").Content, cloneNode(&patch.Env[i]))
		}
	}
	for i := range patch.VolumeMounts {
		entry.VolumeMounts = append(entry.VolumeMounts, scalar(&patch.VolumeMounts[i], "name"))
	}
	for i := range patch.Env {
		entry.Env = append(entry.Env, scalar(&patch.Env[i], "name"))
	}
	for _, k := range slices.Sorted(maps.Keys(patch.Annotations)) {
		setScalar(ensureMap(meta, "annotations"), k, patch.Annotations[k])
		entry.Annotations = append(entry.Annotations, k)
	}
	for _, k := range slices.Sorted(maps.Keys(patch.Labels)) {
		setScalar(ensureMap(meta, "labels"), k, patch.Labels[k])
		entry.Labels = append(entry.Labels, k)
	}

	// Record this injector in the status annotation, keeping the others.
	kept := st.Injectors[:0]
	for _, e := range st.Injectors {
		if e.Name != t.Def.Name {
			kept = append(kept, e)
		}
	}
	st.Injectors = append(kept, entry)
	sort.Slice(st.Injectors, func(i, j int) bool { return st.Injectors[i].Name < st.Injectors[j].Name })
	b, err := json.Marshal(st)
	if err != nil {
		return false, err
	}
	setScalar(ensureMap(meta, "annotations"), StatusAnnotation, string(b))
	return true, nil
}

// patchCache decodes rendered patches, remembering a bounded number of
// them; it is safe for concurrent use.
type patchCache struct {
	mu      sync.Mutex
	decoded map[string]*Patch
}

// patchCacheSize bounds the cache: a template that renders a different
// patch per workload gains nothing from it and should not fill memory.
const patchCacheSize = 64

// decode returns a Patch the caller may modify (its nodes are copies). A
// nil cache decodes every time.
func (c *patchCache) decode(rendered string) (*Patch, error) {
	if c == nil {
		c = &patchCache{}
	}
	c.mu.Lock()
	cached := c.decoded[rendered]
	c.mu.Unlock()
	if cached == nil {
		var p Patch
		dec := yaml.NewDecoder(strings.NewReader(rendered))
		dec.KnownFields(true)
		if err := dec.Decode(&p); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.decoded == nil {
			c.decoded = map[string]*Patch{}
		}
		if len(c.decoded) >= patchCacheSize {
			return &p, nil // not shared: the caller may have it
		}
		c.decoded[rendered] = &p
		cached = &p
	}
	return cached.clone(), nil
}

// clone copies the nodes apply inserts into a pod template as they are
// (apply copies mounts and env itself, once per container); the maps are
// only read.
func (p *Patch) clone() *Patch {
	nodes := func(in []yaml.Node) []yaml.Node {
		if in == nil {
			return nil
		}
		out := make([]yaml.Node, len(in))
		for i := range in {
			out[i] = *cloneNode(&in[i])
		}
		return out
	}
	c := *p
	c.Containers = nodes(p.Containers)
	c.NativeSidecars = nodes(p.NativeSidecars)
	c.InitContainers = nodes(p.InitContainers)
	c.Volumes = nodes(p.Volumes)
	return &c
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

// podTemplateOf returns the object holding a workload's pod metadata and
// spec, with the workload's kind and name.
func podTemplateOf(obj *yaml.Node) (*yaml.Node, string, string) {
	kind := scalar(obj, "kind")
	name := scalar(mapGet(obj, "metadata"), "name")
	switch kind {
	case "Pod":
		return obj, kind, name
	case "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "ReplicationController":
		return mapGet(mapGet(obj, "spec"), "template"), kind, name
	case "CronJob":
		return mapGet(mapGet(mapGet(mapGet(obj, "spec"), "jobTemplate"), "spec"), "template"), kind, name
	}
	return nil, kind, name
}

// PodStatus reads the StatusAnnotation of a resource's pod template: which
// built-in injectors injected it, and what they added. It returns the
// resource's kind and name, and no entries for a resource without a pod
// template or without injection.
func PodStatus(doc string) (kind, name string, entries []StatusEntry, err error) {
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(doc), &root); err != nil || len(root.Content) == 0 {
		return "", "", nil, fmt.Errorf("reading a manifest: %v", err)
	}
	tmpl, kind, name := podTemplateOf(root.Content[0])
	if tmpl == nil {
		return kind, name, nil, nil
	}
	return kind, name, readStatus(mapGet(tmpl, "metadata")).Injectors, nil
}
