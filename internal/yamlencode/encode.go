// Package yamlencode writes yaml.v3 node trees as text, byte for byte as
// yaml.v3's Encoder with SetIndent(2) writes them, several times faster.
//
// Injecting a built-in template re-encodes every workload it changes, and
// yaml.v3's encoder was the largest single cost of `helm-inject template`
// (its event queue keeps every event of a document and allocates twice per
// event). Rendered Kubernetes manifests use a small part of YAML: block
// and flow mappings and sequences of printable ASCII scalars, without
// comments, anchors, tags or block scalars. Encode writes that part itself
// and hands every other tree to yaml.v3 whole, so the output never depends
// on which path ran.
// TestEncodeMatchesYAMLv3 and FuzzEncode hold the two paths to the same
// bytes.
package yamlencode

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Encode returns what yaml.v3's Encoder (indent 2) writes for n, a document
// or a node inside one.
func Encode(n *yaml.Node) ([]byte, error) {
	if out, ok := Fast(n); ok {
		return out, nil
	}
	return Slow(n)
}

// Slow is yaml.v3's own encoding, the reference Fast is held to.
func Slow(n *yaml.Node) ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Fast encodes n without yaml.v3 and reports whether n is in the subset it
// writes; when it is not, the output is nil and the caller uses Slow.
func Fast(n *yaml.Node) ([]byte, bool) {
	root := n
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) != 1 || hasExtras(n) {
			return nil, false
		}
		root = n.Content[0]
	}
	// yaml.v3 writes a top-level mapping from column 0; a top-level
	// scalar or sequence has rules of its own that manifests never need.
	if root.Kind != yaml.MappingNode || len(root.Content) == 0 {
		return nil, false
	}
	w := writer{buf: make([]byte, 0, 1024)}
	if root.Style&yaml.FlowStyle != 0 || !w.mapping(root, 0, false) {
		return nil, false
	}
	return w.buf, true
}

type writer struct {
	buf []byte
}

// hasExtras reports what the fast path leaves to yaml.v3: comments,
// anchors, explicit tags and block scalars.
func hasExtras(n *yaml.Node) bool {
	return n.HeadComment != "" || n.LineComment != "" || n.FootComment != "" ||
		n.Anchor != "" || n.Style&(yaml.TaggedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0
}

func (w *writer) indent(n int) {
	for range n {
		w.buf = append(w.buf, ' ')
	}
}

// mapping writes a non-empty block mapping whose keys start at column
// indent. inline says the first key follows a "- " already written.
func (w *writer) mapping(n *yaml.Node, indent int, inline bool) bool {
	if !plainCollection(n) {
		return false
	}
	for i := 0; i < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if i > 0 || !inline {
			w.indent(indent)
		}
		if !simpleKey(k) || !w.scalar(k, inBlock, true, false) {
			return false
		}
		w.buf = append(w.buf, ':')
		if !w.value(v, indent+2, false) {
			return false
		}
	}
	return true
}

// sequence writes a non-empty block sequence with its dashes at column
// indent. inline says the first dash follows a "- " already written.
func (w *writer) sequence(n *yaml.Node, indent int, inline bool) bool {
	if !plainCollection(n) {
		return false
	}
	for i, item := range n.Content {
		if i > 0 || !inline {
			w.indent(indent)
		}
		w.buf = append(w.buf, '-')
		if !w.value(item, indent+2, true) {
			return false
		}
	}
	return true
}

// value writes what follows a key's colon or an item's dash, and the line
// break after it. Nested block collections start at column indent; after
// a dash they start on the dash's line.
func (w *writer) value(n *yaml.Node, indent int, afterDash bool) bool {
	switch {
	case n.Kind == yaml.ScalarNode:
		if !w.scalar(n, inBlock, false, true) {
			return false
		}
	case n.Kind != yaml.MappingNode && n.Kind != yaml.SequenceNode:
		return false // aliases and zero nodes
	case len(n.Content) == 0 || n.Style&yaml.FlowStyle != 0:
		// yaml.v3 writes empty collections in flow style.
		if !w.flow(n, true) {
			return false
		}
	default:
		if afterDash {
			w.buf = append(w.buf, ' ')
		} else {
			w.buf = append(w.buf, '\n')
		}
		if n.Kind == yaml.MappingNode {
			return w.mapping(n, indent, afterDash)
		}
		return w.sequence(n, indent, afterDash)
	}
	w.buf = append(w.buf, '\n')
	return true
}

// flow writes a collection in flow style on one line ("[a, b]",
// "{k: v}"), as yaml.v3 does for collections parsed in flow style and
// everything nested in them. lead says a space goes before it.
func (w *writer) flow(n *yaml.Node, lead bool) bool {
	if !plainCollection(n) {
		return false
	}
	if lead {
		w.buf = append(w.buf, ' ')
	}
	if n.Kind == yaml.SequenceNode {
		w.buf = append(w.buf, '[')
		for i, item := range n.Content {
			if i > 0 {
				w.buf = append(w.buf, ',')
			}
			if !w.flowItem(item, i > 0) {
				return false
			}
		}
		w.buf = append(w.buf, ']')
		return true
	}
	w.buf = append(w.buf, '{')
	for i := 0; i < len(n.Content); i += 2 {
		k := n.Content[i]
		if i > 0 {
			w.buf = append(w.buf, ',')
		}
		if !simpleKey(k) || !w.scalar(k, inFlow, true, i > 0) {
			return false
		}
		w.buf = append(w.buf, ':')
		if !w.flowItem(n.Content[i+1], true) {
			return false
		}
	}
	w.buf = append(w.buf, '}')
	return true
}

func (w *writer) flowItem(n *yaml.Node, lead bool) bool {
	if n.Kind == yaml.ScalarNode {
		return w.scalar(n, inFlow, false, lead)
	}
	return w.flow(n, lead)
}

type position int

const (
	inBlock position = iota
	inFlow
)

// plainCollection reports whether n is a mapping or sequence that yaml.v3
// writes without a tag, anchor or comment.
func plainCollection(n *yaml.Node) bool {
	var implicit string
	switch n.Kind {
	case yaml.MappingNode:
		if len(n.Content)%2 != 0 {
			return false
		}
		implicit = "!!map"
	case yaml.SequenceNode:
		implicit = "!!seq"
	default:
		return false
	}
	return !hasExtras(n) && (n.Tag == "" || shortTag(n.Tag) == implicit)
}

// simpleKey reports whether yaml.v3 writes k as a simple key ("k:"): a
// scalar of at most 128 bytes; others become complex keys ("? k").
func simpleKey(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && len(k.Value) <= 128
}

// scalar writes a scalar, after a space when lead is set (an empty plain
// scalar writes nothing at all), choosing the style as yaml.v3 does: the
// node's quoting, or double quotes where a plain string would read back as
// another type, or single quotes where plain text would not parse as the
// same string in ctx.
func (w *writer) scalar(n *yaml.Node, ctx position, key, lead bool) bool {
	if hasExtras(n) {
		return false
	}
	v := n.Value
	for i := 0; i < len(v); i++ {
		// Printable ASCII only: tabs, line breaks and other characters
		// bring in yaml.v3's escaping and block scalar rules.
		if v[i] < 0x20 || v[i] > 0x7e {
			return false
		}
	}
	style := n.Style & (yaml.DoubleQuotedStyle | yaml.SingleQuotedStyle)
	if n.Tag != "" {
		stag := shortTag(n.Tag)
		switch {
		case stag == "!!str" && style != 0:
		case resolvePlain(v) == stag:
		case stag == "!!str":
			style = yaml.DoubleQuotedStyle
		default:
			return false // yaml.v3 would write the tag
		}
	}
	if style == 0 && (!plainAllowed(v, ctx) || (v == "" && key)) {
		style = yaml.SingleQuotedStyle
	}
	if lead && (style != 0 || v != "") {
		w.buf = append(w.buf, ' ')
	}
	switch style {
	case yaml.DoubleQuotedStyle:
		w.buf = append(w.buf, '"')
		for i := 0; i < len(v); i++ {
			if v[i] == '"' || v[i] == '\\' {
				w.buf = append(w.buf, '\\')
			}
			w.buf = append(w.buf, v[i])
		}
		w.buf = append(w.buf, '"')
	case yaml.SingleQuotedStyle:
		w.buf = append(w.buf, '\'')
		for i := 0; i < len(v); i++ {
			if v[i] == '\'' {
				w.buf = append(w.buf, '\'')
			}
			w.buf = append(w.buf, v[i])
		}
		w.buf = append(w.buf, '\'')
	default:
		w.buf = append(w.buf, v...)
	}
	return true
}

// plainAllowed is libyaml's analysis of whether a printable ASCII scalar
// may be written plain in block or flow context
// (yaml_emitter_analyze_scalar).
func plainAllowed(v string, ctx position) bool {
	if v == "" {
		return ctx == inBlock
	}
	if v[0] == ' ' || v[len(v)-1] == ' ' {
		return false
	}
	if strings.HasPrefix(v, "---") || strings.HasPrefix(v, "...") {
		return false
	}
	precededBySpace := true
	for i := 0; i < len(v); i++ {
		followedBySpace := i+1 == len(v) || v[i+1] == ' '
		c := v[i]
		if i == 0 {
			switch c {
			case '#', ',', '[', ']', '{', '}', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`':
				return false
			case '?', ':':
				if followedBySpace || ctx == inFlow {
					return false
				}
			case '-':
				if followedBySpace {
					return false
				}
			}
		} else {
			switch c {
			case ',', '?', '[', ']', '{', '}':
				if ctx == inFlow {
					return false
				}
			case ':':
				if followedBySpace || ctx == inFlow {
					return false
				}
			case '#':
				if precededBySpace {
					return false
				}
			}
		}
		precededBySpace = c == ' '
	}
	return true
}

func shortTag(tag string) string {
	const long = "tag:yaml.org,2002:"
	if strings.HasPrefix(tag, long) {
		return "!!" + tag[len(long):]
	}
	return tag
}

// resolvePlain is the tag yaml.v3 resolves a plain scalar to (its resolve
// function with no tag given).
func resolvePlain(v string) string {
	if v == "" {
		return "!!null"
	}
	switch c := v[0]; {
	case c == '+' || c == '-' || c == '.' || (c >= '0' && c <= '9'),
		strings.IndexByte("yYnNtTfFoO~", c) >= 0:
	default:
		return "!!str"
	}
	switch v {
	case "true", "True", "TRUE", "false", "False", "FALSE":
		return "!!bool"
	case "~", "null", "Null", "NULL":
		return "!!null"
	case ".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF":
		return "!!float"
	}
	switch c := v[0]; {
	case c == '.':
		if _, err := strconv.ParseFloat(v, 64); err == nil {
			return "!!float"
		}
	case c == '+' || c == '-' || (c >= '0' && c <= '9'):
		if isTimestamp(v) {
			return "!!timestamp"
		}
		plain := strings.ReplaceAll(v, "_", "")
		if _, err := strconv.ParseInt(plain, 0, 64); err == nil {
			return "!!int"
		}
		if _, err := strconv.ParseUint(plain, 0, 64); err == nil {
			return "!!int"
		}
		if yamlStyleFloat.MatchString(plain) {
			if _, err := strconv.ParseFloat(plain, 64); err == nil {
				return "!!float"
			}
		}
		for _, p := range []struct {
			prefix string
			base   int
		}{{"0b", 2}, {"-0b", 2}, {"0o", 8}, {"-0o", 8}} {
			if !strings.HasPrefix(plain, p.prefix) {
				continue
			}
			digits := plain[len(p.prefix):]
			if p.prefix[0] == '-' {
				digits = "-" + digits
			}
			if _, err := strconv.ParseInt(digits, p.base, 64); err == nil {
				return "!!int"
			}
			if p.prefix[0] != '-' {
				if _, err := strconv.ParseUint(digits, p.base, 64); err == nil {
					return "!!int"
				}
			}
		}
	}
	return "!!str"
}

var yamlStyleFloat = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)

var timestampFormats = []string{
	"2006-1-2T15:4:5.999999999Z07:00",
	"2006-1-2t15:4:5.999999999Z07:00",
	"2006-1-2 15:4:5.999999999",
	"2006-1-2",
}

// isTimestamp is yaml.v3's parseTimestamp: four digits and a dash, then one
// of its formats.
func isTimestamp(s string) bool {
	i := 0
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
	}
	if i != 4 || i == len(s) || s[i] != '-' {
		return false
	}
	for _, f := range timestampFormats {
		if _, err := time.Parse(f, s); err == nil {
			return true
		}
	}
	return false
}
