// Package manifest splits rendered Kubernetes manifests into documents and
// reads each document's identity (apiVersion, kind, namespace, name), the key
// by which helm-inject checks that an injector kept every resource.
//
// Splitting follows Helm's own rules (releaseutil.SplitManifests), so a
// document split here is split the same way when Helm renders the temporary
// chart.
package manifest

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode"

	"gopkg.in/yaml.v3"
)

// ID identifies a Kubernetes resource.
type ID struct {
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
}

// String is the form used in error messages: "apps/v1 Deployment ns/name"
// (or "apps/v1 Deployment name" when the namespace is unset).
func (id ID) String() string {
	name := id.Name
	if id.Namespace != "" {
		name = id.Namespace + "/" + id.Name
	}
	return id.APIVersion + " " + id.Kind + " " + name
}

// InNamespace returns id with namespace filled in when it has none: where
// Helm creates a resource that does not name its namespace.
func (id ID) InNamespace(namespace string) ID {
	if id.Namespace == "" {
		id.Namespace = namespace
	}
	return id
}

// Document is one rendered resource.
type Document struct {
	// Source is the chart template that produced the document, as Helm names
	// it in "# Source:" comments (for example "webapp/templates/web.yaml").
	Source string
	// Content is the YAML text without leading or trailing white space.
	Content string
	// Trailer is the white space Helm 4 keeps after Content, up to the
	// next separator or the end of the template file: none after
	// "{{- end -}}", blank lines where the template has them, "\r\n" in a
	// file written with CRLF. Helm prints it and stores it in the
	// release's manifest, so a document printed or installed byte for byte
	// as Helm does carries it. It is no part of a document's identity or
	// digest.
	Trailer string
	// ID is read from Content.
	ID ID
	// Hook is the value of the helm.sh/hook annotation, empty for a plain
	// manifest.
	Hook string
	// NotResource, when set, says in Helm's words why the document,
	// valid YAML, is no object Helm could create: kubectl's validation's
	// "error validating data: apiVersion not set" (or "kind not set", or
	// both: "[apiVersion not set, kind not set]"), or "resource name may
	// not be empty" for one that has both but no metadata.name. Helm's
	// render keeps such a document where its kind sorts it, `helm
	// template` prints it, and `helm install` refuses it. ID holds what
	// the document does name. Only ParseRendered keeps one.
	NotResource string

	// tree is Content parsed, kept by ParseTree for the first Tree (see
	// there).
	tree *keptTree
}

// keptTree is a document's parse, handed out once: copies of a Document
// share it, and only one of them may have the nodes to change.
type keptTree struct {
	mu   sync.Mutex
	root *yaml.Node
	of   string // the Content parsed
}

// Equal reports whether two documents have the same source, content,
// trailer, identity, hook and NotResource; a parse kept for Tree is no
// part of a document's value. (go-cmp compares documents with it.)
func (d Document) Equal(o Document) bool {
	return d.Source == o.Source && d.Content == o.Content && d.Trailer == o.Trailer && d.ID == o.ID && d.Hook == o.Hook &&
		d.NotResource == o.NotResource
}

// Tree returns Content parsed into a YAML document node that the caller
// owns and may change: the first call on a document from ParseTree (or on
// any copy of it) gets the parse ParseTree made, while Content is still
// the text it parsed; every other call parses Content again (the error is
// yaml.v3's). Reading a document's identity parses all of it, and a
// built-in injector needs all of it: this way the text is parsed once.
func (d Document) Tree() (*yaml.Node, error) {
	if t := d.tree; t != nil {
		t.mu.Lock()
		root := t.root
		if root != nil && t.of == d.Content {
			t.root = nil
		} else {
			root = nil
		}
		t.mu.Unlock()
		if root != nil {
			return root, nil
		}
	}
	root := &yaml.Node{}
	if err := yaml.Unmarshal(d.YAML(), root); err != nil {
		return nil, err
	}
	return root, nil
}

// YAML is the document as a YAML parser reads it in a manifest stream,
// where Helm's client reads it: Content ending its last line. Content
// holds no line break after its last line, and a block scalar that ends
// the document ("args: [|, echo hi]") keeps its final line break only
// when that line ends: parsed without it, "echo hi\n" would read (and an
// injector would write back) "echo hi".
func (d Document) YAML() []byte { return lineEnded(d.Content) }

// lineEnded is s with a line break at its end.
func lineEnded(s string) []byte {
	if strings.HasSuffix(s, "\n") {
		return []byte(s)
	}
	b := make([]byte, len(s)+1)
	copy(b, s)
	b[len(s)] = '\n'
	return b
}

// Empty reports whether the document holds no object: only comments (a
// template whose resources are switched off but which keeps a comment
// renders to one), or a YAML null ("~"), which Helm's client skips.
// Helm keeps such documents in a release's manifest and creates nothing
// for them; they have no ID. A document that is NotResource is not
// Empty: Helm refuses to install it.
func (d Document) Empty() bool { return d.ID == ID{} && d.NotResource == "" }

// IsObject reports whether the document is a Kubernetes object Helm's
// client creates: neither Empty nor NotResource.
func (d Document) IsObject() bool { return !d.Empty() && d.NotResource == "" }

// IsTestHook reports whether the document is a `helm test` hook.
func (d Document) IsTestHook() bool {
	for _, h := range strings.Split(d.Hook, ",") {
		if strings.TrimSpace(h) == "test" || strings.TrimSpace(h) == "test-success" {
			return true
		}
	}
	return false
}

// Split cuts a multi-document YAML stream into trimmed documents, in
// order, where Helm 4 cuts it: at every line that starts with "---" (with
// the spaces and tabs after it), Helm's `(?m)^---[ \t]*` (pkg/release/v1/util),
// written out by hand because the regular expression was a third of the
// cost of reading a render. A piece of white space only is no document.
// Helm keeps a document's trailing white space; helm-inject trims it, so
// documents compare equal however the stream spaced them. FuzzSplit holds
// it to Helm's own function.
func Split(stream string) []string {
	var docs []string
	eachDocument(stream, func(d string) {
		if d = strings.TrimSpace(d); d != "" {
			docs = append(docs, d)
		}
	})
	return docs
}

// eachDocument calls add with the raw text of each document of stream,
// split at each line that starts with "---" (the separator and the blanks
// after it left out), as Split and SplitFile both split.
func eachDocument(stream string, add func(string)) {
	s := strings.TrimLeftFunc(stream, unicode.IsSpace)
	start := 0 // where the current document begins
	if strings.HasPrefix(s, "---") {
		start = skipBlanks(s, 3)
	}
	for from := start; ; {
		i := strings.Index(s[from:], "\n---")
		if i < 0 {
			break
		}
		sep := from + i + 1
		add(s[start:sep])
		start = skipBlanks(s, sep+3)
		from = start
	}
	add(s[start:])
}

// Part is one document of a rendered template file: its content without
// leading or trailing white space, and the white space after it.
type Part struct {
	Content, Trailer string
}

// SplitFile splits one rendered template file as Helm 4's
// releaseutil.SplitManifests does (at each line that starts with "---"),
// and keeps, with each document, the white space between it and the next
// separator or the end of the file: Helm 4 keeps it in what it prints and
// stores. (Helm 3 dropped it, but for the last document of a file.)
func SplitFile(file string) []Part {
	var parts []Part
	eachDocument(file, func(d string) {
		d = strings.TrimLeftFunc(d, unicode.IsSpace)
		if c := strings.TrimRightFunc(d, unicode.IsSpace); c != "" {
			parts = append(parts, Part{Content: c, Trailer: d[len(c):]})
		}
	})
	return parts
}

// skipBlanks returns the index of the first byte at or after i that is not
// a space or a tab.
func skipBlanks(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return i
}

// Join writes documents back into one stream, each preceded by "---".
func Join(docs []Document) string {
	n := 0
	for _, d := range docs {
		n += len(d.Content) + 5
	}
	var b strings.Builder
	b.Grow(n)
	writeStream(&b, docs)
	return b.String()
}

// Digest is "sha256:" and the hex SHA-256 of Join(docs), computed without
// building the stream.
func Digest(docs []Document) string {
	h := sha256.New()
	w := bufio.NewWriterSize(h, 64<<10)
	writeStream(w, docs)
	w.Flush() // writes to a hash do not fail
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// writeStream writes what Join returns.
func writeStream(w io.StringWriter, docs []Document) {
	for _, d := range docs {
		w.WriteString("---\n")
		w.WriteString(d.Content)
		w.WriteString("\n")
	}
}

// head is the part of a resource that identifies it.
type head struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name        string            `yaml:"name"`
		Namespace   string            `yaml:"namespace"`
		Annotations map[string]string `yaml:"annotations"`
	} `yaml:"metadata"`
}

// ErrNotResource is returned by Parse for a document that is valid YAML but
// not a Kubernetes resource (one that ParseRendered keeps, NotResource).
var ErrNotResource = errors.New("not a Kubernetes resource")

// Parse reads a document's identity and hook annotation. content must hold a
// single YAML document that is a resource, or no object (an Empty
// document).
func Parse(source, content string) (Document, error) {
	d, err := ParseTree(source, content)
	return d.WithoutTree(), err
}

// WithoutTree is d without the parse ParseTree kept: its memory is freed
// when no copy of d keeps it.
func (d Document) WithoutTree() Document {
	d.tree = nil
	return d
}

// ParseTree is Parse, and keeps the parse for the document's Tree.
func ParseTree(source, content string) (Document, error) {
	d, err := ParseRendered(source, content)
	switch {
	case err != nil:
		return Document{}, err
	case d.NotResource != "" && d.ID.APIVersion != "" && d.ID.Kind != "":
		return Document{}, fmt.Errorf("%w: %s %s: %s", ErrNotResource, d.ID.APIVersion, d.ID.Kind, d.NotResource)
	case d.NotResource != "":
		return Document{}, fmt.Errorf("%w: %s", ErrNotResource, d.NotResource)
	}
	return d, nil
}

// ParseRendered is ParseTree for a document of a chart's render: one that
// is valid YAML but no object Helm could create (no apiVersion, no kind,
// no metadata.name) is kept as Helm's render keeps it, marked by
// NotResource, with its parse; what is not YAML, or is a YAML scalar or
// sequence (which Helm's render refuses too), is still an error.
func ParseRendered(source, content string) (Document, error) {
	if onlyComments(content) {
		return Document{Source: source, Content: content}, nil
	}
	// yaml.Unmarshal into the head would parse the whole document into
	// nodes and decode the head from them; here the nodes are kept. With
	// its line end, as Tree parses it (see YAML).
	root := &yaml.Node{}
	if err := yaml.Unmarshal(lineEnded(content), root); err != nil {
		return Document{}, fmt.Errorf("invalid YAML: %w", err)
	}
	var h head
	if err := root.Decode(&h); err != nil {
		return Document{}, fmt.Errorf("invalid YAML: %w", err)
	}
	// Unmarshal reads the first document only. Another one needs a line
	// that starts with a document marker; only then is it worth a second
	// parse of the whole stream to tell.
	if mayHoldMarker(content) {
		dec := yaml.NewDecoder(strings.NewReader(content))
		var first, extra yaml.Node
		if err := dec.Decode(&first); err == nil && dec.Decode(&extra) == nil {
			return Document{}, errors.New("invalid YAML: more than one document where one was expected")
		}
	}
	switch {
	case len(root.Content) == 0, root.Content[0].Kind == yaml.MappingNode:
		// A mapping; or no node at all, which only text in another
		// encoding than UTF-8 gives (a byte order mark and nothing
		// else), and Helm's client cannot create: no object either.
	case isNull(root.Content[0], content):
		// Helm's client skips a null document as it skips comments.
		return Document{Source: source, Content: content}, nil
	default:
		// A scalar with the non-specific tag "!" decodes into the
		// head; Helm's render reads a string, and refuses it.
		return Document{}, errors.New("invalid YAML: a string where a mapping was expected")
	}
	return Document{
		Source:      source,
		Content:     content,
		ID:          ID{APIVersion: h.APIVersion, Kind: h.Kind, Namespace: h.Metadata.Namespace, Name: h.Metadata.Name},
		Hook:        h.Metadata.Annotations["helm.sh/hook"],
		NotResource: notResource(h),
		tree:        &keptTree{root: root, of: content},
	}, nil
}

// notResource is why Helm's install refuses a document of head h, in its
// words, or "" for a resource: first what kubectl's validation finds
// unset (listed as it lists them), then an empty name, which the API
// server refuses. An empty string counts as unset.
func notResource(h head) string {
	var unset []string
	if h.APIVersion == "" {
		unset = append(unset, "apiVersion not set")
	}
	if h.Kind == "" {
		unset = append(unset, "kind not set")
	}
	switch {
	case len(unset) == 1:
		return "error validating data: " + unset[0]
	case len(unset) > 1:
		return "error validating data: [" + strings.Join(unset, ", ") + "]"
	case h.Metadata.Name == "":
		return "resource name may not be empty"
	}
	return ""
}

// isNull reports whether n, the top node of a document of content, is a
// YAML null ("~", "null", "!!null", nothing but an anchor): what Helm's
// client skips. yaml.v3 resolves a scalar with the non-specific tag "!"
// ("! ~") as if it had none; Helm reads a string there, so a tag in the
// document (whose only node is this one) makes it no null.
func isNull(n *yaml.Node, content string) bool {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!null" {
		return false
	}
	if n.Style&yaml.TaggedStyle != 0 {
		return true // "!!null"
	}
	for content != "" {
		line := content
		if i := strings.IndexAny(content, "\n\r"); i >= 0 {
			line, content = content[:i], content[i+1:]
		} else {
			content = ""
		}
		line, _, _ = strings.Cut(line, "#")
		for _, token := range strings.Fields(line) {
			if strings.HasPrefix(token, "!") {
				return false
			}
		}
	}
	return true
}

// Known parses documents, taking the parse of an already parsed document
// with the same content instead of parsing again: Parse is a function of
// the content alone, and most documents an injector returns, or a
// deployed revision holds, are byte for byte ones already read.
type Known map[string]Document

// NewKnown returns a Known of docs.
func NewKnown(docs []Document) Known {
	k := make(Known, len(docs))
	for _, d := range docs {
		if _, seen := k[d.Content]; !seen {
			k[d.Content] = d
		}
	}
	return k
}

// Parse is Parse(source, content), from a known document of the same
// content when there is one.
func (k Known) Parse(source, content string) (Document, error) {
	if d, ok := k[content]; ok && d.NotResource == "" {
		d.Source = source
		return d, nil
	}
	return Parse(source, content)
}

// mayHoldMarker reports whether a line of s starts with "---" or "...",
// as a document marker does.
func mayHoldMarker(s string) bool {
	return strings.HasPrefix(s, "---") || strings.HasPrefix(s, "...") ||
		strings.Contains(s, "\n---") || strings.Contains(s, "\n...")
}

// onlyComments reports whether every line of s is blank or a comment.
func onlyComments(s string) bool {
	// A lone "\r" ends a line in YAML too.
	for s != "" {
		s = strings.TrimLeft(s, " \t")
		if s != "" && s[0] != '#' && s[0] != '\n' && s[0] != '\r' {
			return false
		}
		i := strings.IndexAny(s, "\n\r")
		if i < 0 {
			break
		}
		s = s[i+1:]
	}
	return true
}
