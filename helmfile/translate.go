package helmfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// The release fields helm-inject adds to helmfile's state. helmfile itself
// rejects unknown fields, so the wrapper translates them into fields
// helmfile has, which carry them to the shim:
//
//	injector: "istioctl kube-inject f=FILE,injectConfigFile=inject-config.yaml"
//
// becomes
//
//	postRenderer: helm-inject
//	postRendererArgs:
//	  - --injector-dir
//	  - /abs/dir/of/the/state/file
//	  - --injector
//	  - "istioctl kube-inject f=FILE,injectConfigFile=inject-config.yaml"
//
// and `injectors:` (a list) becomes the same with one flag pair per item:
//
//	injectors:
//	  - "linkerd inject,--manual,FILE"     # --injector (helm-x form)
//	  - inject: "my-injector FILE"         # --inject (a command line)
//	  - with: log-shipper@^1               # --with (a built-in)
//	    params: {destination: logs:24224}  # --with-set log-shipper.destination=...
//	    reconcile: never                   # --reconcile (per release)
//	    library: ./injectors               # --injector-library
//
// Only the fields of a release item (an item of the top-level releases:
// list) and of the top-level helmDefaults: are injector fields: a chart
// value that happens to be called injector, inside a release's inline
// values:, is left alone. A release that has its own postRenderer keeps
// it: helm-inject runs it after injection (--post-renderer).
//
// Plain .yaml state files (helmfile v1 does not render them as templates)
// are edited as yaml.v3 nodes: comments, key order, anchors and flow-style
// releases are kept, and multi-document files (---) are handled document by
// document. .gotmpl state files are templates, not YAML, so they are edited
// as text, at exactly the indentation of a release item's (or
// helmDefaults') own keys: an injector: value may be a template expression,
// copied as written; an injectors: list must be plain YAML.

// Translate rewrites the injector fields of one state file. dir is the
// state file's folder (relative paths in specs resolve against it). It
// returns the text unchanged, and false, when there is nothing to
// translate.
func Translate(file, text, dir string) (string, bool, error) {
	if strings.HasSuffix(file, ".gotmpl") {
		return translateText(file, text, dir)
	}
	return translateYAML(file, text, dir)
}

func translateYAML(file, text, dir string) (string, bool, error) {
	dec := yaml.NewDecoder(strings.NewReader(text))
	var docs []*yaml.Node
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", false, fmt.Errorf("%s: %w", file, err)
		}
		docs = append(docs, &doc)
	}
	// The mappings whose own fields may be injector fields: helmDefaults
	// and each release item.
	var targets []*yaml.Node
	for _, doc := range docs {
		if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
			continue
		}
		top := doc.Content[0]
		for i := 0; i+1 < len(top.Content); i += 2 {
			switch key, v := top.Content[i].Value, resolve(top.Content[i+1]); {
			case key == "helmDefaults" && v.Kind == yaml.MappingNode:
				targets = append(targets, v)
			case key == "releases" && v.Kind == yaml.SequenceNode:
				for _, item := range v.Content {
					if item = resolve(item); item.Kind == yaml.MappingNode {
						targets = append(targets, item)
					}
				}
			}
		}
	}
	changed := false
	for _, m := range targets {
		c, err := translateNode(file, m, dir)
		if err != nil {
			return "", false, err
		}
		changed = changed || c
	}
	if !changed {
		return text, false, nil
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	for _, doc := range docs {
		if err := enc.Encode(doc); err != nil {
			return "", false, fmt.Errorf("%s: writing the translated state: %w", file, err)
		}
	}
	if err := enc.Close(); err != nil {
		return "", false, fmt.Errorf("%s: writing the translated state: %w", file, err)
	}
	return b.String(), true, nil
}

func resolve(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		return n.Alias
	}
	return n
}

// translateNode replaces the injector fields of one release (or of
// helmDefaults) by postRenderer and postRendererArgs, where the first of
// them stood.
func translateNode(file string, m *yaml.Node, dir string) (bool, error) {
	var args, carried []string
	var pos = -1
	var kept []*yaml.Node
	has := false
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], resolve(m.Content[i+1])
		switch k.Value {
		case "injector":
			if v.Kind != yaml.ScalarNode || v.Value == "" {
				return false, fmt.Errorf("%s:%d: injector: needs one spec, a string", file, k.Line)
			}
			args = append(args, "--injector", v.Value)
		case "injectors":
			if v.Kind != yaml.SequenceNode {
				return false, fmt.Errorf("%s:%d: injectors: must be a list", file, k.Line)
			}
			a, err := injectorsArgs(file, k.Line, v.Content)
			if err != nil {
				return false, err
			}
			args = append(args, a...)
		case "postRenderer":
			if !isMarker(v.Value) {
				carried = append(carried, "--post-renderer", v.Value)
			}
		case "postRendererArgs":
			for _, a := range v.Content {
				carried = append(carried, "--post-renderer-args", a.Value)
			}
		default:
			kept = append(kept, m.Content[i], m.Content[i+1])
			continue
		}
		if k.Value == "injector" || k.Value == "injectors" {
			has = true
		}
		if pos < 0 {
			pos = len(kept)
		}
	}
	if !has {
		return false, nil
	}
	all := append([]string{"--injector-dir", dir}, args...)
	all = append(all, carried...)
	list := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
	for _, a := range all {
		list.Content = append(list.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: a, Style: yaml.DoubleQuotedStyle})
	}
	fields := []*yaml.Node{
		{Kind: yaml.ScalarNode, Tag: "!!str", Value: "postRenderer"}, {Kind: yaml.ScalarNode, Tag: "!!str", Value: Marker},
		{Kind: yaml.ScalarNode, Tag: "!!str", Value: "postRendererArgs"}, list,
	}
	m.Content = append(kept[:pos:pos], append(fields, kept[pos:]...)...)
	return true, nil
}

// fieldRE matches a key that may be an injector field, with its
// indentation and an optional list dash before it.
var fieldRE = regexp.MustCompile(`^(\s*)(- )?(injector|injectors|postRenderer|postRendererArgs):(.*)$`)

// translateText is Translate for .gotmpl state files: only keys at the
// indentation of a release item's (or helmDefaults') own keys count.
func translateText(file, text, dir string) (string, bool, error) {
	lines := strings.Split(text, "\n")
	fields := fieldLines(lines)
	var out []string
	changed := false
	for i := 0; i < len(lines); i++ {
		m := fields[i].field
		if m == nil {
			out = append(out, lines[i])
			continue
		}
		indent, dash, field, value := m[1], m[2], m[3], strings.TrimSpace(m[4])
		keyIndent := indent + strings.Repeat(" ", len(dash))
		var args []string
		switch field {
		case "postRenderer", "postRendererArgs":
			if fields.ownerHasInjector(i) {
				return "", false, fmt.Errorf("%s:%d: a release with injector fields may not set %s in a .gotmpl state file; pass the post-renderer in the injector flags (--post-renderer, --post-renderer-args)", file, i+1, field)
			}
			out = append(out, lines[i])
			continue
		case "injector":
			if value == "" || strings.HasPrefix(value, "#") {
				return "", false, fmt.Errorf("%s:%d: injector: needs a value on the same line", file, i+1)
			}
			args = []string{quote("--injector"), value}
		case "injectors":
			block, j := injectorsBlock(lines, i, value, len(keyIndent))
			joined := strings.Join(block, "\n")
			if strings.Contains(joined, "{{") {
				return "", false, fmt.Errorf("%s:%d: injectors: may not contain template actions; use injector: (one spec, which may), or postRendererArgs", file, i+1)
			}
			var list yaml.Node
			// YAML reads a block indented as a whole as it reads it unindented.
			err := yaml.Unmarshal([]byte(joined), &list)
			if err == nil && (len(list.Content) != 1 || list.Content[0].Kind != yaml.SequenceNode) {
				err = errors.New("not a list")
			}
			if err != nil {
				return "", false, fmt.Errorf("%s:%d: injectors: must be a list: %w", file, i+1, err)
			}
			raw, err := injectorsArgs(file, i+1, list.Content[0].Content)
			if err != nil {
				return "", false, err
			}
			for _, a := range raw {
				args = append(args, quote(a))
			}
			i = j - 1
		}
		changed = true
		out = append(out, indent+dash+"postRenderer: "+Marker)
		out = append(out, keyIndent+"postRendererArgs:")
		for _, a := range append([]string{quote("--injector-dir"), quote(dir)}, args...) {
			out = append(out, keyIndent+"  - "+a)
		}
	}
	return strings.Join(out, "\n"), changed, nil
}

// fieldLine is what translateText knows of one line of a .gotmpl state
// file.
type fieldLine struct {
	// owner is the line where the release item (or helmDefaults:) the line
	// belongs to starts, -1 outside releases: and helmDefaults:.
	owner int
	// field is fieldRE's match when the line is one of the owner's own
	// injector or post-renderer fields, nil otherwise.
	field []string
}

type fieldLineList []fieldLine

// fieldLines finds, for each line, the release item or helmDefaults it
// belongs to and whether it is one of that owner's own fields: a key at
// exactly the indentation of the item's keys ("- key:" on the item's line
// counts), never a key nested deeper, as in a release's inline values.
func fieldLines(lines []string) fieldLineList {
	fl := make(fieldLineList, len(lines))
	block, owner, keyIndent := "", -1, -1
	for i, l := range lines {
		fl[i].owner = -1
		trimmed := strings.TrimSpace(l)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") || strings.HasPrefix(trimmed, "{{") {
			fl[i].owner = owner
			continue
		}
		if l[0] != ' ' && l[0] != '-' {
			block, owner, keyIndent = "", -1, -1
			switch {
			case strings.HasPrefix(l, "releases:"):
				block = "releases"
			case strings.HasPrefix(l, "helmDefaults:"):
				block, owner = "helmDefaults", i
			}
			continue
		}
		lead := len(l) - len(strings.TrimLeft(l, " "))
		switch {
		case block == "releases" && strings.HasPrefix(trimmed, "- ") && (keyIndent < 0 || lead+2 == keyIndent):
			owner, keyIndent = i, lead+2
		case block == "helmDefaults" && keyIndent < 0:
			keyIndent = lead
		}
		fl[i].owner = owner
		if m := fieldRE.FindStringSubmatch(l); m != nil && owner >= 0 && len(m[1])+len(m[2]) == keyIndent {
			fl[i].field = m
		}
	}
	return fl
}

// ownerHasInjector reports whether the owner of line i has an injector
// field.
func (fl fieldLineList) ownerHasInjector(i int) bool {
	for _, l := range fl {
		if l.owner == fl[i].owner && l.field != nil && (l.field[3] == "injector" || l.field[3] == "injectors") {
			return true
		}
	}
	return false
}

// injectorsArgs turns the items of an injectors: list into helm-inject
// flags.
func injectorsArgs(file string, line int, items []*yaml.Node) ([]string, error) {
	var args []string
	add := func(flag, v string) { args = append(args, flag, v) }
	for n, item := range items {
		switch item = resolve(item); item.Kind {
		case yaml.ScalarNode:
			add("--injector", item.Value)
		case yaml.MappingNode:
			var it struct {
				Inject    string            `yaml:"inject"`
				Injector  string            `yaml:"injector"`
				With      string            `yaml:"with"`
				Params    map[string]string `yaml:"params"`
				Reconcile string            `yaml:"reconcile"`
				Library   string            `yaml:"library"`
			}
			if err := item.Decode(&it); err != nil {
				return nil, fmt.Errorf("%s:%d: injectors item %d: %w", file, line, n+1, err)
			}
			switch {
			case it.Inject != "":
				add("--inject", it.Inject)
			case it.Injector != "":
				add("--injector", it.Injector)
			case it.With != "":
				add("--with", it.With)
				name, _, _ := strings.Cut(it.With, "@")
				for _, k := range slices.Sorted(maps.Keys(it.Params)) {
					add("--with-set", name+"."+k+"="+it.Params[k])
				}
				if it.Library != "" {
					add("--injector-library", it.Library)
				}
				if it.Reconcile != "" {
					add("--reconcile", it.Reconcile)
				}
			default:
				return nil, fmt.Errorf("%s:%d: injectors item %d needs one of inject, injector or with", file, line, n+1)
			}
		default:
			return nil, fmt.Errorf("%s:%d: injectors item %d is neither a string nor a mapping", file, line, n+1)
		}
	}
	return args, nil
}

// injectorsBlock collects the text of the injectors: field on line i: its
// value on the same line, then the lines below indented deeper than the
// key (or list items at the key's own indentation, YAML's compact form),
// until the next key of the release. It returns the lines and the index of
// the first line after them; blank lines after the list are not the
// list's (they are copied as they are, the file's last newline too).
func injectorsBlock(lines []string, i int, value string, keyIndent int) ([]string, int) {
	var block []string
	if value != "" && !strings.HasPrefix(value, "#") {
		block = append(block, value)
	}
	j := i + 1
	for ; j < len(lines); j++ {
		l := lines[j]
		if strings.TrimSpace(l) == "" {
			block = append(block, l)
			continue
		}
		ind := len(l) - len(strings.TrimLeft(l, " "))
		if ind > keyIndent || (ind == keyIndent && strings.HasPrefix(strings.TrimLeft(l, " "), "- ")) {
			block = append(block, l)
			continue
		}
		break
	}
	for j > i+1 && strings.TrimSpace(lines[j-1]) == "" {
		j--
		block = block[:len(block)-1]
	}
	return block, j
}

// quote makes a YAML double-quoted scalar.
func quote(s string) string {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	_ = enc.Encode(&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s, Style: yaml.DoubleQuotedStyle})
	return strings.TrimSpace(b.String())
}
