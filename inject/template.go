package inject

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/helm-inject/helm-inject/internal/parallel"
	"github.com/helm-inject/helm-inject/internal/yamlencode"
	"github.com/helm-inject/helm-inject/manifest"
)

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
		slices.Sort(unknown)
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

// Inject implements Injector: every selected pod template gets the patch,
// after what an earlier run of the same injector added was stripped.
func (t *TemplateInjector) Inject(ctx context.Context, manifests []byte, env Env) ([]byte, error) {
	var out strings.Builder
	err := untilDone(ctx, t.Def.Ref(), func() error {
		for _, doc := range manifest.Split(string(manifests)) {
			content, _, err := t.injectOne(ctx, manifest.Document{Content: doc}, env)
			if err != nil {
				return err
			}
			out.WriteString("---\n")
			out.WriteString(content)
			out.WriteString("\n")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return []byte(out.String()), nil
}

// InjectDocuments implements DocumentInjector, the Pipeline's fast path
// for built-in injectors: only documents of a kind that has a pod template
// (and that the definition selects) are parsed, and the output needs no
// identity check, because only pod templates are changed. Documents are
// independent, so they are injected on every CPU.
func (t *TemplateInjector) InjectDocuments(ctx context.Context, docs []manifest.Document, env Env) ([]manifest.Document, error) {
	out := slices.Clone(docs)
	err := untilDone(ctx, t.Def.Ref(), func() error { return t.injectDocuments(ctx, docs, out, env) })
	if err != nil {
		return nil, err
	}
	return out, nil
}

// injectDocuments injects docs into out on every CPU.
func (t *TemplateInjector) injectDocuments(ctx context.Context, docs, out []manifest.Document, env Env) error {
	return parallel.For(len(docs), func(i int) error {
		d := docs[i]
		if !HasPodTemplate(d.ID.Kind) || (len(t.Def.Select.Kinds) > 0 && !containsString(t.Def.Select.Kinds, d.ID.Kind)) {
			return nil
		}
		content, changed, err := t.injectOne(ctx, d, env)
		if err != nil {
			return err
		}
		if changed {
			out[i].Content = content
		}
		return nil
	})
}

// injectOne injects one document (its Content trimmed YAML text) and
// returns its new text, trimmed as manifest.Split returns it, and whether
// it changed. The document's kept parse, if any, saves parsing it again.
func (t *TemplateInjector) injectOne(ctx context.Context, d manifest.Document, env Env) (string, bool, error) {
	doc := d.Content
	root, obj, err := parseObject(d)
	if err != nil {
		return "", false, err
	}
	tmpl, kind, name := podTemplateOf(obj)
	if tmpl == nil || !t.selects(tmpl, kind, name) {
		return doc, false, nil
	}
	changed, err := t.apply(ctx, tmpl, kind, name, env)
	if err != nil {
		return "", false, fmt.Errorf("%s %s: %w", kind, name, err)
	}
	if !changed {
		return doc, false, nil
	}
	b, err := yamlencode.Encode(root)
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
func (t *TemplateInjector) apply(ctx context.Context, tmpl *yaml.Node, kind, name string, env Env) (bool, error) {
	meta := ensureMap(tmpl, "metadata")
	spec := ensureMap(tmpl, "spec")
	st := readStatus(meta)
	for _, e := range st.Injectors {
		if e.Name == t.Def.Name {
			strip(meta, spec, e)
		}
	}
	// The status annotation is written last, after this injector's own
	// annotations, so a second run puts every key back where the first did.
	mapDelete(mapGet(meta, "annotations"), StatusAnnotation)

	var containerNames []string
	for _, c := range seqItems(mapGet(spec, "containers")) {
		containerNames = append(containerNames, scalar(c, "name"))
	}
	patch, err := t.render(ctx, meta, kind, name, containerNames, env)
	if err != nil {
		return false, err
	}
	a := patching{def: t.Def, meta: meta, spec: spec, entry: StatusEntry{Record: t.Record("")}}
	if err := a.add(patch, containerNames); err != nil {
		return false, err
	}
	return true, recordStatus(meta, st, a.entry)
}

// render executes the definition's template for one workload and decodes
// the patch it renders.
func (t *TemplateInjector) render(ctx context.Context, meta *yaml.Node, kind, name string, containerNames []string, env Env) (*Patch, error) {
	data := map[string]any{
		"Params":   t.params,
		"Release":  map[string]any{"Name": env.Release, "Namespace": env.Namespace},
		"Workload": map[string]any{"Kind": kind, "Name": name, "Labels": stringMap(mapGet(meta, "labels")), "Containers": containerNames},
	}
	rendered, err := t.Def.execute(ctx, data)
	if err != nil {
		return nil, err
	}
	patch, err := t.patches.decode(rendered)
	if err != nil {
		return nil, fmt.Errorf("template of %s rendered invalid YAML: %w", t.Def.Ref(), err)
	}
	return patch, nil
}

// patching adds one patch to one pod template and records what it added.
type patching struct {
	def        *Definition
	meta, spec *yaml.Node
	entry      StatusEntry
	// names of the containers and init containers the pod has
	existing map[string]bool
}

// add puts every part of the patch into the pod template; mounts and env
// go into the containers that were there before (containerNames).
func (a *patching) add(patch *Patch, containerNames []string) error {
	a.existing = map[string]bool{}
	for _, field := range []string{"containers", "initContainers"} {
		for _, c := range seqItems(mapGet(a.spec, field)) {
			a.existing[scalar(c, "name")] = true
		}
	}
	if err := a.addContainers("initContainers", patch.InitContainers, true, false); err != nil {
		return err
	}
	if err := a.addContainers("initContainers", patch.NativeSidecars, false, true); err != nil {
		return err
	}
	if err := a.addContainers("containers", patch.Containers, false, false); err != nil {
		return err
	}
	if err := a.addVolumes(patch.Volumes); err != nil {
		return err
	}
	a.addMountsAndEnv(patch, containerNames)
	for _, k := range slices.Sorted(maps.Keys(patch.Annotations)) {
		setScalar(ensureMap(a.meta, "annotations"), k, patch.Annotations[k])
		a.entry.Annotations = append(a.entry.Annotations, k)
	}
	for _, k := range slices.Sorted(maps.Keys(patch.Labels)) {
		setScalar(ensureMap(a.meta, "labels"), k, patch.Labels[k])
		a.entry.Labels = append(a.entry.Labels, k)
	}
	return nil
}

// addContainers adds containers to field, before the others when prepend,
// as native sidecars (restartPolicy: Always) when native.
func (a *patching) addContainers(field string, items []yaml.Node, prepend, native bool) error {
	if len(items) == 0 {
		return nil
	}
	seq := ensureSeq(a.spec, field)
	var add []*yaml.Node
	for i := range items {
		c := &items[i]
		n := scalar(c, "name")
		if n == "" {
			return fmt.Errorf("%s of %s has a container without a name", field, a.def.Ref())
		}
		if a.existing[n] {
			return fmt.Errorf("%s would add container %q, but the pod already has a container of that name", a.def.Ref(), n)
		}
		a.existing[n] = true
		if native {
			setScalar(c, "restartPolicy", "Always")
		}
		add = append(add, c)
		if field == "containers" {
			a.entry.Containers = append(a.entry.Containers, n)
		} else {
			a.entry.InitContainers = append(a.entry.InitContainers, n)
		}
	}
	if prepend {
		seq.Content = append(add, seq.Content...)
	} else {
		seq.Content = append(seq.Content, add...)
	}
	return nil
}

func (a *patching) addVolumes(volumes []yaml.Node) error {
	if len(volumes) == 0 {
		return nil
	}
	seq := ensureSeq(a.spec, "volumes")
	have := map[string]bool{}
	for _, v := range seq.Content {
		have[scalar(v, "name")] = true
	}
	for i := range volumes {
		n := scalar(&volumes[i], "name")
		if have[n] {
			return fmt.Errorf("%s would add volume %q, but the pod already has a volume of that name", a.def.Ref(), n)
		}
		seq.Content = append(seq.Content, &volumes[i])
		a.entry.Volumes = append(a.entry.Volumes, n)
	}
	return nil
}

func (a *patching) addMountsAndEnv(patch *Patch, containerNames []string) {
	for _, c := range seqItems(mapGet(a.spec, "containers")) {
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
		a.entry.VolumeMounts = append(a.entry.VolumeMounts, scalar(&patch.VolumeMounts[i], "name"))
	}
	for i := range patch.Env {
		a.entry.Env = append(a.entry.Env, scalar(&patch.Env[i], "name"))
	}
}
