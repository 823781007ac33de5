package manifest

import (
	"strings"

	"gopkg.in/yaml.v3"
)

// parseBlock is a parser of the plain block YAML that Helm charts render
// almost always: block mappings and sequences of plain, single- or
// double-quoted one-line scalars, "{}" and "[]", nothing else. It returns
// the document node yaml.v3 returns for the same text, node for node (kind,
// style, tag, value, line and column), or false when the text holds
// anything outside that subset: a comment, a tab, an anchor, a tag, a
// block or multi-line scalar, an escape, a flow collection with items, a
// document marker, a byte outside printable ASCII, or any indentation it
// does not follow exactly. Everything it declines goes to yaml.v3, which
// also gives every error: this parser never reports one, so a document it
// gets wrong can only be one yaml.v3 would have read the same way.
// FuzzParseBlock and TestParseBlockMatchesYAMLv3 hold it to yaml.v3.
//
// It exists because yaml.v3 was 41% of the CPU of `helm-inject template`
// (docs/performance.md): its scanner, token queue and event machinery cost
// several times what one pass over the lines does.
func parseBlock(content string) (*yaml.Node, bool) {
	for i := 0; i < len(content); i++ {
		c := content[i]
		if c == '\n' {
			continue
		}
		if c < 0x20 || c >= 0x7f || declined[c] {
			return nil, false
		}
	}
	if mayHoldMarker(content) {
		return nil, false
	}
	p := blockParser{lines: strings.Split(content, "\n")}
	// One allocation for the nodes instead of one a node: a key and its
	// value for every ": " or ":" at the end of a line, the item of a
	// sequence for every "- ", and the document (a scalar with ": " in it
	// makes the count high, never low; past it nodes come one by one).
	nodes := 2*(strings.Count(content, ": ")+strings.Count(content, ":\n")) + strings.Count(content, "- ") + 2
	p.slab = make([]yaml.Node, 0, nodes)
	// Every node but the document is in one Content: their slices are cut
	// from one array too, each as long as its children once they are read.
	p.contents = make([]*yaml.Node, 0, nodes)
	i := p.nextLine(0)
	if i == len(p.lines) {
		return nil, false
	}
	col := indentOf(p.lines[i])
	if isEntry(p.lines[i][col:]) {
		return nil, false // a document that is a sequence is no resource
	}
	root, next, ok := p.mapping(i, col, 1)
	if !ok || p.nextLine(next) != len(p.lines) {
		return nil, false
	}
	doc := p.node(yaml.DocumentNode, "", root.Line-1, root.Column-1)
	p.stack = append(p.stack, root)
	doc.Content = p.content(0)
	return doc, true
}

// declined are the printable bytes parseBlock leaves to yaml.v3 wherever
// they occur (a tab, like every control byte but the line feed, is
// declined before this table): comments, anchors and aliases, tags, block
// scalars, directives, reserved indicators, escapes and complex keys.
// Flow indicators are read where they stand: in block context a plain
// scalar holds them after its first byte, and a value that is "{}" or
// "[]" is taken, any other flow collection declined.
var declined = func() (t [256]bool) {
	for _, c := range "#&*!|>%@`\\?" {
		t[c] = true
	}
	return t
}()

// resolvable are the first bytes of a plain scalar that yaml.v3 may resolve
// to something other than a string (its resolve table: a sign, a digit, the
// first letters of null, true, false and their YAML 1.1 kin, "~" and "."):
// only those pay for Node.ShortTag, which resolves as the parser does.
var resolvable = func() (t [256]bool) {
	for _, c := range "+-0123456789yYnNtTfFoO~." {
		t[c] = true
	}
	return t
}()

type blockParser struct {
	lines []string
	slab  []yaml.Node
	// stack holds the children read so far of the collections being read,
	// innermost last; contents is where their Content slices are cut from.
	stack    []*yaml.Node
	contents []*yaml.Node
}

// content pops the children pushed on the stack since its length was
// base and returns them as a Content slice, cut from contents while it
// lasts, its capacity its length: an append to one never writes into
// another's.
func (p *blockParser) content(base int) []*yaml.Node {
	children := p.stack[base:]
	n := len(children)
	var c []*yaml.Node
	if at := len(p.contents); at+n <= cap(p.contents) {
		p.contents = p.contents[:at+n]
		c = p.contents[at : at+n : at+n]
	} else {
		c = make([]*yaml.Node, n)
	}
	copy(c, children)
	p.stack = p.stack[:base]
	return c
}

// node returns a new node of line i, column col (both from 0), set in
// place in the slab while it lasts.
func (p *blockParser) node(kind yaml.Kind, tag string, i, col int) *yaml.Node {
	var n *yaml.Node
	if len(p.slab) < cap(p.slab) {
		p.slab = p.slab[:len(p.slab)+1]
		n = &p.slab[len(p.slab)-1]
	} else {
		n = new(yaml.Node)
	}
	n.Kind, n.Tag, n.Line, n.Column = kind, tag, i+1, col+1
	return n
}

// nextLine is the index of the first line from i on that is not blank.
func (p *blockParser) nextLine(i int) int {
	for ; i < len(p.lines); i++ {
		if strings.TrimLeft(p.lines[i], " ") != "" {
			return i
		}
	}
	return i
}

func indentOf(line string) int {
	n := 0
	for n < len(line) && line[n] == ' ' {
		n++
	}
	return n
}

// isEntry reports whether s, the rest of a line, starts a sequence entry.
func isEntry(s string) bool {
	return s == "-" || strings.HasPrefix(s, "- ")
}

// keyEnd is the index in s of the ':' that ends the implicit key s starts
// with, or -1: the first ':' followed by a space or the end of s after a
// plain key, the ':' right after the closing quote of a quoted one.
func keyEnd(s string) int {
	if s[0] == '"' || s[0] == '\'' {
		n, ok := quotedLen(s)
		if !ok {
			return -1
		}
		if n < len(s) && s[n] == ':' && (n+1 == len(s) || s[n+1] == ' ') {
			return n
		}
		return -1
	}
	for i := 0; i < len(s); i++ {
		if s[i] == ':' && (i+1 == len(s) || s[i+1] == ' ') {
			return i
		}
	}
	return -1
}

// quotedLen is the length of the quoted scalar s starts with, closing
// quote included; false when it does not close on this line.
func quotedLen(s string) (int, bool) {
	q := s[0]
	for i := 1; i < len(s); i++ {
		if s[i] != q {
			continue
		}
		if q == '\'' && i+1 < len(s) && s[i+1] == '\'' {
			i++ // '' is a quote inside single quotes
			continue
		}
		return i + 1, true
	}
	return 0, false
}

// maxDepth is the deepest nesting of collections parseBlock reads: yaml.v3
// refuses a document nested deeper than 10,000 indents ("exceeded max
// depth"), and a document far less deep is left to it to say so.
const maxDepth = 1000

// mapping reads a block mapping whose first key is at line i, column col,
// nested depth collections deep, and returns it with the index of the
// line after it.
func (p *blockParser) mapping(i, col, depth int) (*yaml.Node, int, bool) {
	if depth > maxDepth {
		return nil, 0, false
	}
	m := p.node(yaml.MappingNode, "!!map", i, col)
	base := len(p.stack)
	for {
		rest := p.lines[i][col:]
		// libyaml allows an implicit key of 1024 characters at most; a
		// longer one than 1000 bytes is left to it.
		end := keyEnd(rest)
		if end <= 0 || end > 1000 || rest[end-1] == ' ' {
			return nil, 0, false
		}
		key, ok := p.scalar(rest[:end], i, col)
		if !ok || key.Kind != yaml.ScalarNode {
			return nil, 0, false
		}
		value, next, ok := p.value(i, col, col+end+1, depth)
		if !ok {
			return nil, 0, false
		}
		p.stack = append(p.stack, key, value)
		if i = p.nextLine(next); i == len(p.lines) || indentOf(p.lines[i]) < col {
			m.Content = p.content(base)
			return m, i, true
		}
		// The next key: a deeper line (a continued scalar) or an entry
		// starts with a space or "- ", which no key does, and is declined.
	}
}

// value reads the value of the key of line i, column col, whose ':' ends
// before column after, in a mapping nested depth collections deep.
func (p *blockParser) value(i, col, after, depth int) (*yaml.Node, int, bool) {
	line := p.lines[i]
	at := after + indentOf(line[after:])
	if at < len(line) {
		// A deeper line after it, which would continue the scalar or be an
		// error, is declined by the mapping.
		n, ok := p.scalar(line[at:], i, at)
		return n, i + 1, ok
	}
	j := p.nextLine(i + 1)
	if j < len(p.lines) {
		indent := indentOf(p.lines[j])
		rest := p.lines[j][indent:]
		switch {
		case indent >= col && isEntry(rest):
			return p.sequence(j, indent, depth+1)
		case indent > col:
			return p.mapping(j, indent, depth+1)
		}
	}
	// An empty value: yaml.v3 places its null right after the ':'.
	return p.node(yaml.ScalarNode, "!!null", i, after), i + 1, true
}

// sequence reads a block sequence whose first "-" is at line i, column
// col, nested depth collections deep (the value of a mapping, which
// checked the depth: a sequence holds no sequence here).
func (p *blockParser) sequence(i, col, depth int) (*yaml.Node, int, bool) {
	s := p.node(yaml.SequenceNode, "!!seq", i, col)
	base := len(p.stack)
	for {
		line := p.lines[i]
		at := col + 1 + indentOf(line[col+1:])
		if at == len(line) {
			return nil, 0, false // an item on lines of its own
		}
		rest := line[at:]
		var item *yaml.Node
		next := i + 1
		if keyEnd(rest) > 0 {
			var ok bool
			if item, next, ok = p.mapping(i, at, depth+1); !ok {
				return nil, 0, false
			}
		} else {
			var ok bool
			if item, ok = p.scalar(rest, i, at); !ok {
				return nil, 0, false
			}
		}
		p.stack = append(p.stack, item)
		i = p.nextLine(next)
		if i == len(p.lines) || indentOf(p.lines[i]) < col || !isEntry(p.lines[i][col:]) {
			// The end, or the next key of the mapping this sequence is
			// the value of; a deeper line is declined by the next item.
			s.Content = p.content(base)
			return s, i, true
		}
	}
}

// plainStart reports whether s may start a plain scalar: not with an
// indicator, except "-" before a character that is not a space.
func plainStart(s string) bool {
	switch s[0] {
	case '-':
		return len(s) > 1 && s[1] != ' '
	case '?', ':', ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`', ' ':
		return false
	}
	return true
}

// scalar reads the one-line scalar s, at line i, column col, that is the
// whole rest of its line (or a key, up to its ':').
func (p *blockParser) scalar(s string, i, col int) (*yaml.Node, bool) {
	s = strings.TrimRight(s, " ")
	switch s[0] {
	case '"', '\'':
		if l, ok := quotedLen(s); !ok || l != len(s) {
			return nil, false // more after the closing quote
		}
		n := p.node(yaml.ScalarNode, "!!str", i, col)
		n.Style, n.Value = yaml.DoubleQuotedStyle, s[1:len(s)-1]
		if s[0] == '\'' {
			n.Style, n.Value = yaml.SingleQuotedStyle, strings.ReplaceAll(n.Value, "''", "'")
		}
		return n, true
	}
	switch s {
	case "{}":
		n := p.node(yaml.MappingNode, "!!map", i, col)
		n.Style = yaml.FlowStyle
		return n, true
	case "[]":
		n := p.node(yaml.SequenceNode, "!!seq", i, col)
		n.Style = yaml.FlowStyle
		return n, true
	}
	if !plainStart(s) || keyEnd(s) >= 0 {
		return nil, false // an indicator, or "a: b" in a value
	}
	return p.plain(s, i, col), true
}

// plain is the plain scalar s, its tag resolved as yaml.v3 resolves it.
func (p *blockParser) plain(s string, i, col int) *yaml.Node {
	n := p.node(yaml.ScalarNode, "!!str", i, col)
	n.Value = s
	switch {
	case s == "<<":
		n.Tag = "!!merge"
	case resolvable[s[0]]:
		n.Tag = "" // ShortTag resolves an untagged plain scalar
		n.Tag = n.ShortTag()
	}
	return n
}
