package inject

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Masterminds/sprig/v3"

	"github.com/helm-inject/helm-inject/manifest"
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
		{"date formats in the local zone", `annotations: {a: {{ date "2006" 0 | quote }}}`, "date", ":1:"},
		{"toDate parses in the local zone", `annotations: {a: {{ toDate "2006" "2026" | quote }}}`, "toDate", ":1:"},
		{"htmlDate", `annotations: {a: {{ htmlDate 0 | quote }}}`, "htmlDate", ":1:"},
		{"dateInZone", `annotations: {a: {{ dateInZone "2006" 0 "UTC" | quote }}}`, "dateInZone", ":1:"},
		{"durationRound", `annotations: {a: {{ durationRound "2h" | quote }}}`, "durationRound", ":1:"},
		{"unixEpoch", `annotations: {a: {{ unixEpoch 0 | quote }}}`, "unixEpoch", ":1:"},
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
  duration: {{ duration 90 | quote }}`)
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

// TestRemovedFuncsDocumented: the table of docs/versioned-injectors.md
// lists exactly the removed functions (read from the table's first
// column, not filtered through the code's own list).
func TestRemovedFuncsDocumented(t *testing.T) {
	b, err := os.ReadFile("../docs/versioned-injectors.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "| removed | why |")
	if !ok {
		t.Fatal(`docs/versioned-injectors.md has no "| removed | why |" table`)
	}
	section, _, _ = strings.Cut(section, "\n\n")
	var documented []string
	for _, row := range strings.Split(section, "\n") {
		cells := strings.Split(row, "|")
		if len(cells) < 3 || strings.HasPrefix(cells[1], "---") {
			continue
		}
		for _, m := range regexp.MustCompile("`([A-Za-z0-9_]+)`").FindAllStringSubmatch(cells[1], -1) {
			documented = append(documented, m[1])
		}
	}
	want := RemovedFuncs()
	slices.Sort(want)
	slices.Sort(documented)
	if !slices.Equal(documented, want) {
		t.Errorf("documented removed functions %v, want %v", documented, want)
	}
}

// allowedSprigFuncs are the sprig functions a definition may call, each
// reviewed: none reads the machine, the network, the clock, the time zone
// or a random source.
var allowedSprigFuncs = []string{
	"abbrev", "abbrevboth", "add", "add1", "add1f", "addf", "adler32sum", "all", "any", "append", "atoi",
	"b32dec", "b32enc", "b64dec", "b64enc", "base", "biggest", "buildCustomCert", "camelcase", "cat", "ceil",
	"chunk", "clean", "coalesce", "compact", "concat", "contains", "decryptAES", "deepCopy", "deepEqual",
	"default", "derivePassword", "dict", "dig", "dir", "div", "divf", "duration", "empty", "ext", "fail",
	"first", "float64", "floor", "fromJson", "get", "has", "hasKey", "hasPrefix", "hasSuffix", "hello",
	"indent", "initial", "initials", "int", "int64", "isAbs", "join", "kebabcase", "keys", "kindIs", "kindOf",
	"last", "list", "lower", "max", "maxf", "merge", "mergeOverwrite", "min", "minf", "mod", "mul", "mulf",
	"mustAppend", "mustChunk", "mustCompact", "mustDeepCopy", "mustFirst", "mustFromJson", "mustHas",
	"mustInitial", "mustLast", "mustMerge", "mustMergeOverwrite", "mustPrepend", "mustPush", "mustRegexFind",
	"mustRegexFindAll", "mustRegexMatch", "mustRegexReplaceAll", "mustRegexReplaceAllLiteral", "mustRegexSplit",
	"mustRest", "mustReverse", "mustSlice", "mustToJson", "mustToPrettyJson", "mustToRawJson", "mustUniq",
	"mustWithout", "nindent", "nospace", "omit", "osBase", "osClean", "osDir", "osExt", "osIsAbs", "pick",
	"pluck", "plural", "prepend", "push", "quote", "regexFind", "regexFindAll", "regexMatch", "regexQuoteMeta",
	"regexReplaceAll", "regexReplaceAllLiteral", "regexSplit", "repeat", "replace", "rest", "reverse", "round",
	"semver", "semverCompare", "seq", "set", "sha1sum", "sha256sum", "sha512sum", "slice", "snakecase",
	"sortAlpha", "split", "splitList", "splitn", "squote", "sub", "subf", "substr", "swapcase", "ternary",
	"title", "toDecimal", "toJson", "toPrettyJson", "toRawJson", "toString", "toStrings", "trim", "trimAll",
	"trimPrefix", "trimSuffix", "trimall", "trunc", "tuple", "typeIs", "typeIsLike", "typeOf", "uniq", "unset",
	"until", "untilStep", "untitle", "upper", "urlJoin", "urlParse", "values", "without", "wrap", "wrapWith",
}

// TestSprigFuncsReviewed: every function of sprig's map is either on the
// reviewed allowed list or removed, never both; a sprig upgrade that adds
// a function fails here until someone decides which it is.
func TestSprigFuncsReviewed(t *testing.T) {
	for name := range sprig.TxtFuncMap() {
		_, removed := removedFunc(name)
		allowed := slices.Contains(allowedSprigFuncs, name)
		switch {
		case !allowed && !removed:
			t.Errorf("sprig function %q is neither reviewed as allowed nor removed", name)
		case allowed && removed:
			t.Errorf("sprig function %q is both allowed and removed", name)
		}
	}
	for _, name := range allowedSprigFuncs {
		if _, ok := sprig.TxtFuncMap()[name]; !ok {
			t.Errorf("allowed function %q is not in sprig", name)
		}
	}
	if n := len(RemovedFuncs()); n+len(allowedSprigFuncs) != len(sprig.TxtFuncMap()) {
		t.Errorf("%d removed + %d allowed != %d sprig functions", n, len(allowedSprigFuncs), len(sprig.TxtFuncMap()))
	}
}

// TestDefinitionRunIsBounded: a definition that would build a huge list or
// string, or render a huge patch, fails with the limit named; one that
// never ends (its templates call each other exponentially, writing
// nothing) stops at the injector timeout.
func TestDefinitionRunIsBounded(t *testing.T) {
	tests := []struct{ name, template, want string }{
		{"until", `{{ range until 30000000 }}{{ end }}annotations: {}`, "until: 30000000 is over the limit of 10000"},
		{"untilStep", `{{ range untilStep 0 30000000 1 }}{{ end }}annotations: {}`, "untilStep: 30000000 is over the limit of 10000"},
		{"seq", `annotations: {a: {{ seq 30000000 | quote }}}`, "seq: 30000000 is over the limit of 10000"},
		{"repeat", `annotations: {a: {{ repeat 100000000 "ab" | quote }}}`, "repeat: 200000000 is over the limit of 1048576"},
		{"indent", `annotations: {a: {{ indent 100000000 "x" | quote }}}`, "indent: 100000000 is over the limit of 10000"},
		{"printf width", `annotations: {a: {{ printf "%0100000000d" 1 | quote }}}`, "printf width: 100000000 is over the limit of 10000"},
		{"printf width from an argument", `annotations: {a: {{ printf "%*d" 100000000 1 | quote }}}`, "a width or precision from an argument (*) is not allowed"},
		{"rendered size", `annotations: {a: "{{ range until 5000 }}{{ repeat 1000 "x" }}{{ end }}"}`, "the rendered patch is over 4194304 bytes"},
	}
	in := readFixture(t, "mixed.yaml")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := ParseDefinition("big.yaml", []byte("name: big\nversion: 1.0.0\ntemplate: |\n"+indent(tt.template)))
			if err != nil {
				t.Fatal(err)
			}
			inj, err := NewTemplateInjector(d, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = inj.Inject(t.Context(), in, Env{Release: "shop", Namespace: "shop"})
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "big@1.0.0") {
				t.Fatalf("error %v, want one naming big@1.0.0 and %q", err, tt.want)
			}
		})
	}
	// Within the limits, the same functions work.
	d, err := ParseDefinition("small.yaml", []byte("name: small\nversion: 1.0.0\ntemplate: |\n"+indent(`annotations: {a: {{ printf "%03d-%s" 7 (repeat 2 "ab") | quote }}, n: {{ until 3 | len | quote }}}`)))
	if err != nil {
		t.Fatal(err)
	}
	if out := injectDef(t, d, nil, in); !strings.Contains(string(out), `a: 007-abab`) || !strings.Contains(string(out), `n: "3"`) {
		t.Errorf("bounded functions within their limits:\n%s", out)
	}

	// 2^24 calls: seconds, far over the timeout (and short enough that the
	// run left in the background ends soon after this test).
	exp := "{{ define \"a0\" }}{{ end }}"
	for i := 1; i <= 24; i++ {
		exp += fmt.Sprintf("{{ define \"a%d\" }}{{ template \"a%d\" }}{{ template \"a%d\" }}{{ end }}", i, i-1, i-1)
	}
	exp += "{{ template \"a24\" }}annotations: {}"
	d, err = ParseDefinition("exp.yaml", []byte("name: exp\nversion: 1.0.0\ntemplate: |\n"+indent(exp)))
	if err != nil {
		t.Fatal(err)
	}
	inj, err := NewTemplateInjector(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		p := &Pipeline{Injectors: []Injector{inj}, Timeout: 200 * time.Millisecond}
		_, _, err := p.Run(t.Context(), docs(t, manifest.Split(string(in))...), Env{Release: "shop", Namespace: "ns"})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "did not finish within 200ms (--injector-timeout)") || !strings.Contains(err.Error(), "template of exp@1.0.0: stopped") || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("an endless definition: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("an endless definition did not stop at its timeout")
	}
}

// TestBoundedFuncsAtTheLimit: each bounded function makes a result of
// exactly the limit and refuses one element (or byte) more.
func TestBoundedFuncsAtTheLimit(t *testing.T) {
	f := boundedFuncs()
	call := func(name string, args ...any) (any, error) {
		out := reflect.ValueOf(f[name]).Call(func() []reflect.Value {
			v := make([]reflect.Value, len(args))
			for i, a := range args {
				v[i] = reflect.ValueOf(a)
			}
			return v
		}())
		err, _ := out[1].Interface().(error)
		return out[0].Interface(), err
	}
	size := func(v any) int {
		switch v := v.(type) {
		case []int:
			return len(v)
		case string:
			return len(v)
		}
		return -1
	}
	for _, tt := range []struct {
		name       string
		atLimit    []any
		wantSize   int
		overLimit  []any
		wantErrMsg string
	}{
		{"until", []any{10000}, 10000, []any{10001}, "until: 10001 is over the limit of 10000"},
		{"until", []any{-10000}, 10000, []any{-10001}, "until: -10001 is over the limit of 10000"},
		{"untilStep", []any{0, 10000, 1}, 10000, []any{0, 10001, 1}, "untilStep: 10001 is over the limit of 10000"},
		{"untilStep", []any{0, 30000, 3}, 10000, []any{0, 30001, 3}, "untilStep: 10001 is over the limit of 10000"},
		{"untilStep", []any{0, -30000, -3}, 10000, []any{0, -30001, -3}, "untilStep: 10001 is over the limit of 10000"},
		{"untilStep", []any{5, 0, 1}, 0, []any{-10001, 0, 1}, "untilStep: 10001 is over the limit of 10000"},
		// seq prints the numbers space-separated: 1..10000 is 48893 bytes,
		// the 10000 odd numbers 1..19999 are 54444.
		{"seq", []any{10000}, 48893, []any{10001}, "seq: 10001 is over the limit of 10000"},
		{"seq", []any{10000, 1}, 48893, []any{10001, 1}, "seq: 10001 is over the limit of 10000"},
		{"seq", []any{1, 2, 19999}, 54444, []any{1, 2, 20001}, "seq: 10001 is over the limit of 10000"},
		{"indent", []any{10000, "x"}, 10001, []any{10001, "x"}, "indent: 10001 is over the limit of 10000"},
		{"nindent", []any{10000, "x"}, 10002, []any{10001, "x"}, "nindent: 10001 is over the limit of 10000"},
		{"repeat", []any{1 << 20, "x"}, 1 << 20, []any{1<<20 + 1, "x"}, "repeat: 1048577 is over the limit of 1048576"},
		{"repeat", []any{1 << 19, "xy"}, 1 << 20, []any{1<<19 + 1, "xy"}, "repeat: 1048578 is over the limit of 1048576"},
		{"printf", []any{"%10000d", 7}, 10000, []any{"%10001d", 7}, "printf width: 10001 is over the limit of 10000"},
		{"printf", []any{"%.10000f", 1.0}, 10002, []any{"%.10001f", 1.0}, "printf width: 10001 is over the limit of 10000"},
		// Every width counts, not only the first.
		{"printf", []any{"%d %5d", 1, 2}, 7, []any{"%d %10001d", 1, 2}, "printf width: 10001 is over the limit of 10000"},
		// Repeating nothing is nothing, whatever the count.
		{"repeat", []any{3, ""}, 0, []any{1<<20 + 1, "x"}, "repeat: 1048577 is over the limit of 1048576"},
	} {
		got, err := call(tt.name, tt.atLimit...)
		if err != nil || size(got) != tt.wantSize {
			t.Errorf("%s%v: size %d, %v; want size %d", tt.name, tt.atLimit, size(got), err, tt.wantSize)
		}
		if _, err := call(tt.name, tt.overLimit...); err == nil || err.Error() != tt.wantErrMsg+" in injector definitions" {
			t.Errorf("%s%v: %v, want %q", tt.name, tt.overLimit, err, tt.wantErrMsg)
		}
	}
}
