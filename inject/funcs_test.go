package inject

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestRemovedFuncsRefused: a definition that calls a removed function, in
// any position a template can call one, is refused when it is read, with
// the file, the line and the function named; nothing is rendered.
func TestRemovedFuncsRefused(t *testing.T) {
	tests := []struct {
		name, template, fn, line string
	}{
		{"env", `annotations: {a: {{ env "CI_TOKEN" | quote }}}`, "env", ":1:"},
		{"expandenv piped", `annotations: {a: {{ "$HOME" | expandenv | quote }}}`, "expandenv", ":1:"},
		{"getHostByName in if", "annotations:\n{{- if getHostByName \"example.com\" }}\n  a: b\n{{- end }}", "getHostByName", ":2:"},
		{"now in else", "{{ if true }}{{ else }}{{ now }}{{ end }}", "now", ":1:"},
		{"uuidv4 in range", "{{ range list 1 }}{{ uuidv4 }}{{ end }}", "uuidv4", ":1:"},
		{"randAlphaNum in with", "{{ with 1 }}\n{{ randAlphaNum 8 }}{{ end }}", "randAlphaNum", ":2:"},
		{"genCA in a variable", `{{ $ca := genCA "x" 3 }}`, "genCA", ":1:"},
		{"env in parentheses", `{{ (env "HOME") | quote }}`, "env", ":1:"},
		{"env in a defined template", "{{ define \"x\" }}{{ env \"A\" }}{{ end }}annotations: {}", "env", ":1:"},
		{"env as template argument", "{{ define \"x\" }}{{ . }}{{ end }}{{ template \"x\" (env \"A\") }}", "env", ":1:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			def := "name: leaky\nversion: 1.0.0\ntemplate: |\n" + indent(tt.template)
			_, err := ParseDefinition("lib/leaky/1.0.0.yaml", []byte(def))
			if err == nil {
				t.Fatalf("a template calling %s was accepted", tt.fn)
			}
			for _, want := range []string{"injector definition lib/leaky/1.0.0.yaml", `function "` + tt.fn + `" is not available in injector definitions`, "leaky@1.0.0" + tt.line} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
		})
	}
}

func indent(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = "  " + l
	}
	return strings.Join(lines, "\n") + "\n"
}

// TestAllowedFuncsRenderTheSameBytes: what remains is deterministic: a
// definition using string, list, dict, encoding and hash functions renders
// the same patch twice, whatever the environment holds.
func TestAllowedFuncsRenderTheSameBytes(t *testing.T) {
	def := "name: pure\nversion: 1.0.0\nparameters:\n  - name: dest\n    default: logs.example:24224\ntemplate: |\n" + indent(
		`annotations:
  dest: {{ .Params.dest | upper | quote }}
  sum: {{ .Params.dest | sha256sum | trunc 12 | quote }}
  b64: {{ .Params.dest | b64enc | quote }}
  list: {{ list "b" "a" | sortAlpha | join "," | quote }}
  dict: {{ dict "k" "v" | toJson | quote }}
  date: {{ "2026-01-02" | toDate "2006-01-02" | date "Jan 2" | quote }}`)
	d, err := ParseDefinition("pure.yaml", []byte(def))
	if err != nil {
		t.Fatal(err)
	}
	in := readFixture(t, "mixed.yaml")
	first := injectDef(t, d, nil, in)
	t.Setenv("HOME", "/elsewhere")
	if second := injectDef(t, d, nil, in); string(first) != string(second) {
		t.Errorf("two renders differ:\n%s\n---\n%s", first, second)
	}
	if !strings.Contains(string(first), `LOGS.EXAMPLE:24224`) || !strings.Contains(string(first), `dict: '{"k":"v"}'`) {
		t.Errorf("allowed functions did not render:\n%s", first)
	}
}

// TestRemovedFuncsDocumented: docs/versioned-injectors.md lists exactly
// the removed functions.
func TestRemovedFuncsDocumented(t *testing.T) {
	b, err := os.ReadFile("../docs/versioned-injectors.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "## Template functions")
	if !ok {
		t.Fatal(`docs/versioned-injectors.md has no "## Template functions" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var documented []string
	for _, m := range regexp.MustCompile("`([A-Za-z0-9]+)`").FindAllStringSubmatch(section, -1) {
		if _, removed := removedFunc(m[1]); removed {
			documented = append(documented, m[1])
		}
	}
	want := RemovedFuncs()
	slices.Sort(want)
	slices.Sort(documented)
	documented = slices.Compact(documented)
	if !slices.Equal(documented, want) {
		t.Errorf("documented removed functions %v, want %v", documented, want)
	}
}
