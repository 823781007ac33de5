package inject

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"slices"

	"gopkg.in/yaml.v3"
)

// PinsFileName is the file, in an Argo CD application's folder, that fixes
// the versions of its built-in injectors. Without a release to remember
// what an app got, the choice lives in Git: moving an app to a newer
// version is a commit that changes this file.
const PinsFileName = "helm-inject-pins.yaml"

// Pin fixes one built-in injector to one version.
type Pin struct {
	// Constraint is the constraint the version was chosen for; `pin
	// --update` chooses again within it.
	Constraint string `yaml:"constraint,omitempty"`
	Version    string `yaml:"version"`
	// Digest is the definition's digest when it was pinned (the library's
	// lock holds the same): a library whose file changed is refused.
	Digest string `yaml:"digest"`
}

// Pins maps injector names to their pins.
type Pins map[string]Pin

type pinsFile struct {
	Injectors Pins `yaml:"injectors"`
}

const pinsHeader = `# The built-in injector versions of this application, written by
# "helm-inject argocd pin". Argo CD's generate injects exactly these
# versions, whatever the library gains. Move to newer versions with
# "helm-inject argocd pin --update DIR" and review the commit.
`

// ReadPins reads a pins file. A missing file is an error that matches
// fs.ErrNotExist.
func ReadPins(path string) (Pins, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the injector pins: %w", err)
	}
	return ParsePins(path, b)
}

// ParsePins reads the content of a pins file; name is the file as errors
// show it.
func ParsePins(path string, b []byte) (Pins, error) {
	var f pinsFile
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for name, p := range f.Injectors {
		if p.Version == "" || p.Digest == "" {
			return nil, fmt.Errorf("%s: injector %s: a pin needs a version and a digest", path, name)
		}
	}
	if f.Injectors == nil {
		f.Injectors = Pins{}
	}
	return f.Injectors, nil
}

// Encode is the pins file's content: sorted by name, so the same pins are
// the same bytes.
func (p Pins) Encode() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(pinsHeader)
	doc := &yaml.Node{Kind: yaml.MappingNode}
	injectors := &yaml.Node{Kind: yaml.MappingNode}
	doc.Content = append(doc.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "injectors"}, injectors)
	for _, name := range slices.Sorted(maps.Keys(p)) {
		var v yaml.Node
		if err := v.Encode(p[name]); err != nil {
			return nil, fmt.Errorf("encoding the pin of %s: %w", name, err)
		}
		injectors.Content = append(injectors.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: name}, &v)
	}
	if len(p) == 0 {
		injectors.Style = yaml.FlowStyle
	}
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("encoding the injector pins: %w", err)
	}
	return b.Bytes(), enc.Close()
}

// Pin chooses the version of each built-in injector in specs for a pins
// file: an existing pin that still satisfies the constraint is kept unless
// update is set; anything else gets the newest version the constraint
// allows. With no specs, update chooses again for every existing pin
// within the constraint it recorded. It returns the new pins (old is not
// changed).
func (p Pins) Pin(lib *Library, refs []*TemplateRef, update bool) (Pins, error) {
	out := maps.Clone(p)
	if out == nil {
		out = Pins{}
	}
	if len(refs) == 0 && update {
		for _, name := range slices.Sorted(maps.Keys(p)) {
			refs = append(refs, &TemplateRef{Library: lib, Injector: name, Constraint: p[name].Constraint})
		}
	}
	for _, r := range refs {
		old, ok := p[r.Injector]
		if ok && !update && satisfies(old.Version, r.Constraint) {
			if d := lib.Get(r.Injector, old.Version); d != nil && d.Digest == old.Digest {
				out[r.Injector] = Pin{Constraint: r.Constraint, Version: old.Version, Digest: old.Digest}
				continue
			}
		}
		d, err := lib.Resolve(r.Injector, r.Constraint)
		if err != nil {
			return nil, err
		}
		out[r.Injector] = Pin{Constraint: r.Constraint, Version: d.Version, Digest: d.Digest}
	}
	return out, nil
}

// pinned returns the definition p fixes for r, refusing a pin that is
// missing, absent from the library, changed since it was pinned, or
// outside r's constraint.
func (r *TemplateRef) pinned(p Pins) (*Definition, error) {
	pin, ok := p[r.Injector]
	if !ok {
		return nil, fmt.Errorf("injector %s has no pin in %s: run \"helm-inject argocd pin --with %s DIR\" and commit the file", r.Ref, PinsFileName, r.Ref)
	}
	d := r.Library.Get(r.Injector, pin.Version)
	switch {
	case d == nil:
		return nil, fmt.Errorf("injector %s is pinned to %s, which is not in the library %s: restore that version, or pin another with \"helm-inject argocd pin --update\"", r.Ref, pin.Version, r.Library.Dir)
	case d.Digest != pin.Digest:
		return nil, fmt.Errorf("injector %s@%s in %s is not the one pinned (digest %s, pinned %s): a released version must not change", r.Injector, pin.Version, d.File, d.Digest, pin.Digest)
	case !satisfies(d.Version, r.Constraint):
		return nil, fmt.Errorf("injector %s is pinned to %s, outside its constraint: run \"helm-inject argocd pin --with %s DIR\" to pin a version it allows", r.Ref, pin.Version, r.Ref)
	}
	return d, nil
}
