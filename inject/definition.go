package inject

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"text/template"

	"github.com/Masterminds/semver/v3"
	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/labels"
)

// Definition is one released version of a built-in sidecar template.
type Definition struct {
	Name        string      `yaml:"name"`
	Version     string      `yaml:"version"`
	Description string      `yaml:"description,omitempty"`
	Parameters  []Parameter `yaml:"parameters,omitempty"`
	Select      Selection   `yaml:"select,omitempty"`
	// Template is a Go template (sprig's functions but the removed ones,
	// see removedFunc) that renders a YAML mapping of what to add to each
	// selected pod template; see Patch.
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
