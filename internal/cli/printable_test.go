package cli

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/helm-inject/helm-inject/drift"
	"github.com/helm-inject/helm-inject/inject"
	"github.com/helm-inject/helm-inject/release"
)

// TestPrintable: characters a terminal acts on are written as Go quotes
// them, without the quotes; ordinary text (quotes, backslashes, accents,
// CJK, emoji, spaces) is unchanged.
func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"api-0.9.0":                        "api-0.9.0",
		`say "hi" \ back\slash`:            `say "hi" \ back\slash`,
		"héllo wörld 日本 🚀 ümlaut":          "héllo wörld 日本 🚀 ümlaut",
		"a\u00a0b":                         "a\u00a0b", // no-break space: a space
		"\x1b[31mred\x1b[0m":               `\x1b[31mred\x1b[0m`,
		"ok\rFAKE":                         `ok\rFAKE`,
		"one\ntwo\tcol":                    `one\ntwo\tcol`,
		"bell\a back\b nul\x00 del\x7f":    `bell\a back\b nul\x00 del\x7f`,
		"csi\u009b2J nel\u0085":            `csi\u009b2J nel\u0085`,
		"txt\u202egnp.exe zero\u200bwidth": `txt\u202egnp.exe zero\u200bwidth`,
		"bad\xffutf8\xc3":                  `bad\xffutf8\xc3`,
		"line\u2028sep":                    `line\u2028sep`,
		"":                                 "",
	} {
		if got := printable(in); got != want {
			t.Errorf("printable(%q) = %q, want %q", in, got, want)
		}
	}
	if got, want := printableText("Error: a\x1b[2J\n\tb\rc"), "Error: a\\x1b[2J\n\tb\\rc"; got != want {
		t.Errorf("printableText = %q, want %q (newlines and tabs kept)", got, want)
	}
}

const hostile = "x\x1b[2J\x1b]0;pwned\a\r\n\tFAKE ROW\u202e\u009b\x7f\u200by"

// hostileState is a release state with every string field, slice element
// and map key, at any depth, set to s (map keys prefixed), so that a field
// a writer prints raw shows.
func hostileState(s string) *release.ReleaseState {
	prog := &inject.Program{Path: "/bin/p", SHA256: "sha256:0123456789abcdef", Version: "1"}
	rs := &release.ReleaseState{
		Injectors: []release.InjectorState{{Program: prog}},
		Workloads: []release.WorkloadState{{Hook: true, Injectors: []inject.StatusEntry{{Containers: []string{""}, InitContainers: []string{""}, Volumes: []string{""}}}}},
		History:   []release.RevisionInjectors{{Injectors: []inject.Record{{Program: prog}}}},
		Live: &release.LiveState{
			Objects: []release.ObjectDrift{{Missing: true}, {NotOwned: true}, {Differences: []drift.Difference{{Kind: drift.Changed}, {Kind: drift.Added}, {Kind: drift.Removed}}}},
			Workloads: []release.LiveWorkload{{Templates: []release.PodTemplate{{Revision: 1, Current: true, Injectors: []string{""}, Containers: []string{""}, NotInTemplate: []string{""}}}},
				{Templates: []release.PodTemplate{}}},
			InjectorPods: map[string]int{"k": 1},
		},
	}
	fill(reflect.ValueOf(rs), s)
	// An object outside the release's namespace is shown with its own.
	for i := range rs.Live.Objects {
		rs.Live.Objects[i].Namespace += "-elsewhere"
	}
	return rs
}

func fill(v reflect.Value, s string) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			fill(v.Elem(), s)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Field(i).CanSet() {
				fill(v.Field(i), s)
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			fill(v.Index(i), s)
		}
	case reflect.Map:
		out := reflect.MakeMap(v.Type())
		for _, k := range v.MapKeys() {
			out.SetMapIndex(reflect.ValueOf(s+k.String()), v.MapIndex(k))
		}
		v.Set(out)
	case reflect.String:
		if v.CanSet() {
			v.SetString(s)
		}
	}
}

// rawControl is the first character of out a terminal acts on, other than
// the newline that ends a line.
func rawControl(out string) (rune, bool) {
	for _, r := range out {
		if r != '\n' && notGraphic(r) {
			return r, true
		}
	}
	return 0, false
}

// TestRecordStringsEscaped: every string of a release state (the record's
// chart, source, status, names, injectors, the cluster's causes, images
// and names) reaches status's and list's text with its control
// characters escaped: no raw escape, carriage return, C1 control or
// bidirectional override, and no line of its own (a newline in a name
// would fake a row). A field a writer leaves raw fails here.
func TestRecordStringsEscaped(t *testing.T) {
	render := func(rs *release.ReleaseState) string {
		var out bytes.Buffer
		writeStatus(&out, rs)
		out.WriteString("---\n")
		if err := writeList(&out, []*release.ReleaseState{rs}, true); err != nil {
			t.Fatal(err)
		}
		rs.Error = rs.Name // an unreadable release's row
		if err := writeList(&out, []*release.ReleaseState{rs}, false); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	bad := render(hostileState(hostile))
	if r, ok := rawControl(bad); ok {
		t.Errorf("status/list text has a raw %U:\n%s", r, bad)
	}
	benign := render(hostileState("x-y"))
	if got, want := strings.Count(bad, "\n"), strings.Count(benign, "\n"); got != want {
		t.Errorf("a string with a newline added lines: %d lines, want %d:\n%s", got, want, bad)
	}
	if !strings.Contains(bad, `x\x1b[2J\x1b]0;pwned\a\r\n\tFAKE ROW\u202e\u009b\x7f\u200by`) {
		t.Errorf("the escaped string is not shown as Go quotes it:\n%s", bad)
	}
}

// TestStructuredOutputEscaped: -o json keeps every value exact (it decodes
// to the same state) but writes DEL, the C1 controls and format
// characters, which encoding/json leaves raw, as \u escapes; -o yaml,
// whose encoder refuses DEL and C1 and writes format characters raw, is
// written with them escaped as in text. Ordinary text is unchanged.
func TestStructuredOutputEscaped(t *testing.T) {
	rs := hostileState(hostile + "é日🚀")
	var out bytes.Buffer
	if _, err := writeStructured(&out, "json", rs); err != nil {
		t.Fatal(err)
	}
	if r, ok := rawControl(out.String()); ok {
		t.Errorf("-o json has a raw %U:\n%s", r, out.String())
	}
	var back release.ReleaseState
	if err := json.Unmarshal(out.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(rs, &back, cmpopts.IgnoreUnexported(drift.Difference{})); diff != "" {
		t.Errorf("-o json does not decode to the state (-want +got):\n%s", diff)
	}
	if !strings.Contains(out.String(), `\u202e\u009b\u007f\u200byé日🚀`) {
		t.Errorf("-o json: want the escapes and the ordinary text kept:\n%s", out.String())
	}

	out.Reset()
	if _, err := writeStructured(&out, "yaml", rs); err != nil {
		t.Fatalf("-o yaml: %v", err)
	}
	if r, ok := rawControl(out.String()); ok {
		t.Errorf("-o yaml has a raw %U:\n%s", r, out.String())
	}
	// YAML quotes the string and escapes the backslashes of ours.
	if !strings.Contains(out.String(), `\\u202e\\u009b\\x7f\\u200byé日`) {
		t.Errorf("-o yaml: want the escapes and the ordinary text kept:\n%s", out.String())
	}
	if !utf8.Valid(out.Bytes()) {
		t.Error("-o yaml is not UTF-8")
	}
	// An ordinary state is written as before.
	plain := &release.ReleaseState{Name: "web", Namespace: "shop", Revision: 2, Status: "deployed", Chart: "api-0.9.0", Source: `C:\charts\api "v2"`, Injectors: []release.InjectorState{}}
	out.Reset()
	if _, err := writeStructured(&out, "yaml", plain); err != nil {
		t.Fatal(err)
	}
	want := "chart: api-0.9.0\ninjectors: []\nname: web\nnamespace: shop\noutdated: false\nrevision: 2\nsource: C:\\charts\\api \"v2\"\nstatus: deployed\n"
	if out.String() != want {
		t.Errorf("-o yaml of an ordinary state:\n%s\nwant:\n%s", out.String(), want)
	}
}

// TestEscapeJSONBoundaries: the first character past ASCII (U+0080, a C1
// control) and DEL are escaped, the last ASCII graphic and a no-break
// space (graphic) are not.
func TestEscapeJSONBoundaries(t *testing.T) {
	for in, want := range map[string]string{
		`"~"`:            `"~"`,
		"\"\u007f\"":     `"\u007f"`,
		"\"\u0080\"":     `"\u0080"`,
		"\"\u009f\"":     `"\u009f"`,
		"\"a\u00a0b\"":   "\"a\u00a0b\"",
		"\"\U000e0001\"": `"\udb40\udc01"`, // a format character outside the BMP: a surrogate pair
	} {
		if got := string(escapeJSON([]byte(in))); got != want {
			t.Errorf("escapeJSON(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestErrorsEscaped: an error's text (a flag, a record's object name, a
// message the cluster sends back) reaches stderr with its control
// characters escaped, its lines and tabs kept.
func TestErrorsEscaped(t *testing.T) {
	var out, errb bytes.Buffer
	code := Run(t.Context(), []string{"status", "--\x1b[2J\x1b]0;pwned\ax"}, strings.NewReader(""), &out, &errb)
	if code != 1 || strings.Contains(errb.String(), "\x1b") || !strings.Contains(errb.String(), `--\x1b[2J\x1b]0;pwned\ax`) {
		t.Errorf("exit %d, stderr %q; want exit 1 and the flag escaped", code, errb.String())
	}
}
