package helmfile

import (
	"bytes"
	"fmt"
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
// The translation is textual, line by line, so it works on .gotmpl state
// files too: an `injector:` value may be a template expression, copied as
// written. An `injectors:` list must be plain YAML (no template actions
// inside it).

var fieldRE = regexp.MustCompile(`^(\s*)(- )?(injector|injectors):(.*)$`)

// Translate rewrites the injector fields of one state file. dir is the
// state file's folder (relative paths in specs resolve against it). It
// returns the text unchanged, and false, when there is nothing to
// translate.
func Translate(file, text, dir string) (string, bool, error) {
	lines := strings.Split(text, "\n")
	var out []string
	changed := false
	for i := 0; i < len(lines); i++ {
		m := fieldRE.FindStringSubmatch(lines[i])
		if m == nil {
			out = append(out, lines[i])
			continue
		}
		indent, dash, field, value := m[1], m[2], m[3], strings.TrimSpace(m[4])
		keyIndent := indent + strings.Repeat(" ", len(dash))
		var args []string
		switch field {
		case "injector":
			if value == "" || strings.HasPrefix(value, "#") {
				return "", false, fmt.Errorf("%s:%d: injector: needs a value on the same line", file, i+1)
			}
			args = []string{quote("--injector"), value}
		case "injectors":
			// Collect the block below: lines indented deeper than the key
			// (or list items at the key's own indentation, YAML's compact
			// form), until the next key of the release.
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
				if ind > len(keyIndent) || (ind == len(keyIndent) && strings.HasPrefix(strings.TrimLeft(l, " "), "- ")) {
					block = append(block, l)
					continue
				}
				break
			}
			var err error
			if args, err = injectorsArgs(file, i+1, strings.Join(block, "\n")); err != nil {
				return "", false, err
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

// injectorsArgs turns an injectors: list into helm-inject flags, each a
// YAML scalar ready for a block sequence.
func injectorsArgs(file string, line int, block string) ([]string, error) {
	if strings.Contains(block, "{{") {
		return nil, fmt.Errorf("%s:%d: injectors: may not contain template actions; use injector: (one spec, which may), or postRendererArgs", file, line)
	}
	var items []yaml.Node
	if err := yaml.Unmarshal([]byte(dedent(block)), &items); err != nil {
		return nil, fmt.Errorf("%s:%d: injectors: must be a list: %w", file, line, err)
	}
	var args []string
	add := func(flag, v string) { args = append(args, quote(flag), quote(v)) }
	for n, item := range items {
		switch item.Kind {
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

func dedent(s string) string {
	lines := strings.Split(s, "\n")
	least := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if ind := len(l) - len(strings.TrimLeft(l, " ")); least < 0 || ind < least {
			least = ind
		}
	}
	for i, l := range lines {
		if len(l) >= least && least > 0 {
			lines[i] = l[least:]
		}
	}
	return strings.Join(lines, "\n")
}

// quote makes a YAML double-quoted scalar.
func quote(s string) string {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	_ = enc.Encode(&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s, Style: yaml.DoubleQuotedStyle})
	return strings.TrimSpace(b.String())
}
