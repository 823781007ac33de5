package inject

import (
	"errors"
	"io"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"
)

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
