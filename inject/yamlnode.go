package inject

import (
	"gopkg.in/yaml.v3"
)

// Small helpers to edit YAML documents as nodes (as kustomize's kyaml does):
// key order, comments and formatting of untouched parts survive.

// mapGet returns the value of key in mapping m, or nil.
func mapGet(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// scalar returns the scalar value of key in m, or "".
func scalar(m *yaml.Node, key string) string {
	if v := mapGet(m, key); v != nil && v.Kind == yaml.ScalarNode {
		return v.Value
	}
	return ""
}

func newKey(key string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}
}

// ensure returns the value of key in m, replacing a missing or null value
// with an empty node of kind.
func ensure(m *yaml.Node, key string, kind yaml.Kind, tag string) *yaml.Node {
	if v := mapGet(m, key); v != nil {
		if v.Kind != kind {
			*v = yaml.Node{Kind: kind, Tag: tag}
		}
		return v
	}
	v := &yaml.Node{Kind: kind, Tag: tag}
	m.Content = append(m.Content, newKey(key), v)
	return v
}

func ensureMap(m *yaml.Node, key string) *yaml.Node {
	return ensure(m, key, yaml.MappingNode, "!!map")
}

func ensureSeq(m *yaml.Node, key string) *yaml.Node {
	return ensure(m, key, yaml.SequenceNode, "!!seq")
}

func seqItems(s *yaml.Node) []*yaml.Node {
	if s == nil || s.Kind != yaml.SequenceNode {
		return nil
	}
	return s.Content
}

// yaml11Special reports plain scalars that YAML 1.1 parsers, Kubernetes'
// among them, read as booleans or null; yaml.v3 (YAML 1.2) would write them
// unquoted.
func yaml11Special(s string) bool {
	switch s {
	case "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO",
		"true", "True", "TRUE", "false", "False", "FALSE",
		"on", "On", "ON", "off", "Off", "OFF", "null", "Null", "NULL", "~":
		return true
	}
	return false
}

// setScalar sets key in m to a string value, quoted when a YAML 1.1 or 1.2
// parser would read it as another type.
func setScalar(m *yaml.Node, key, value string) {
	v := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: value}
	if yaml11Special(value) || value == "" {
		v.Style = yaml.DoubleQuotedStyle
	}
	if existing := mapGet(m, key); existing != nil {
		*existing = *v
		return
	}
	m.Content = append(m.Content, newKey(key), v)
}

func mapDelete(m *yaml.Node, key string) {
	if m == nil || m.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content = append(m.Content[:i], m.Content[i+2:]...)
			return
		}
	}
}

// removeNamed drops the items of sequence s whose "name" is in names.
func removeNamed(s *yaml.Node, names []string) {
	if s == nil || s.Kind != yaml.SequenceNode || len(names) == 0 {
		return
	}
	kept := s.Content[:0]
	for _, item := range s.Content {
		if !containsString(names, scalar(item, "name")) {
			kept = append(kept, item)
		}
	}
	s.Content = kept
}

func stringMap(m *yaml.Node) map[string]string {
	out := map[string]string{}
	if m == nil || m.Kind != yaml.MappingNode {
		return out
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		out[m.Content[i].Value] = m.Content[i+1].Value
	}
	return out
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func cloneNode(n *yaml.Node) *yaml.Node {
	c := *n
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, child := range n.Content {
		c.Content[i] = cloneNode(child)
	}
	return &c
}
