package release

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/helm-inject/helm-inject/chartify"
	"github.com/helm-inject/helm-inject/inject"
	"github.com/helm-inject/helm-inject/manifest"
)

// renderAPI renders the api fixture through the injector pipeline, as a
// revision would store it.
func renderAPI(t *testing.T, p *inject.Declared, vals map[string]any) []manifest.Document {
	t.Helper()
	ch, _, err := chartify.Load("../fixtures/charts/api", chartify.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := (&Template{Inputs: Inputs{Namespace: "prod", Injectors: p}}).Run(t.Context(), "api", Source{Ref: "api", Chart: ch}, vals)
	if err != nil {
		t.Fatal(err)
	}
	return r.Documents
}

// TestDiffGolden freezes the text output (colour off) for a value change
// that touches a ConfigMap, a Deployment, a Secret and a test hook, and an
// injector upgrade.
func TestDiffGolden(t *testing.T) {
	bin := buildInjector(t)
	inj := func(image string) *inject.Declared {
		c, err := inject.ParseSpec(bin + " f=FILE,image=" + image)
		if err != nil {
			t.Fatal(err)
		}
		return &inject.Declared{Specs: []inject.Spec{c}}
	}
	before := renderAPI(t, inj("registry.example/proxy:1.0"), nil)
	after := renderAPI(t, inj("registry.example/proxy:1.1"), map[string]any{"logLevel": "debug", "password": "rotated!", "testImage": "registry.example/curl:2.0"})
	res := &DiffResult{
		Release: "api", Installed: true, Changes: compare(before, after, "prod"),
		InjectorsBefore: []inject.Record{{Name: "sidecar-injector f=FILE,image=registry.example/proxy:1.0"}, {Name: "log-shipper", Version: "1.0.0", Digest: "sha256:a"}},
		InjectorsAfter:  []inject.Record{{Name: "sidecar-injector f=FILE,image=registry.example/proxy:1.1"}, {Name: "log-shipper", Version: "1.1.0", Digest: "sha256:b"}},
	}
	res.Reasons = injectorChanges(res.InjectorsBefore, res.InjectorsAfter)
	for _, tt := range []struct {
		golden string
		opts   DiffPrintOptions
	}{
		{"diff-api.txt", DiffPrintOptions{Context: 3, IncludeTests: true}},
		{"diff-api-context1-show-secrets.txt", DiffPrintOptions{Context: 1, ShowSecrets: true, IncludeTests: true}},
		// Without --include-tests the test hook is hidden, as in helm-diff,
		// and a line says that it still counts.
		{"diff-api-simple-suppress-secrets.txt", DiffPrintOptions{Output: DiffOutputSimple, SuppressSecrets: true}},
		{"diff-api-suppress-kind-and-lines.txt", DiffPrintOptions{Context: 1, IncludeTests: true, Suppress: []string{"ConfigMap"}, SuppressLines: []*regexp.Regexp{regexp.MustCompile(`image: registry\.example/proxy`)}}},
		{"diff-api-no-hooks.txt", DiffPrintOptions{Output: DiffOutputSimple, NoHooks: true, IncludeTests: true}},
	} {
		t.Run(tt.golden, func(t *testing.T) {
			var out bytes.Buffer
			if err := WriteDiff(&out, res, tt.opts); err != nil {
				t.Fatal(err)
			}
			golden(t, tt.golden, out.Bytes())
		})
	}

	var out bytes.Buffer
	if err := WriteDiff(&out, res, DiffPrintOptions{Output: DiffOutputJSON, IncludeTests: true}); err != nil {
		t.Fatal(err)
	}
	var parsed struct {
		Changes []struct{ Change, Kind, Name, Before, After string }
	}
	if err := json.Unmarshal(out.Bytes(), &parsed); err != nil {
		t.Fatal(err)
	}
	if len(parsed.Changes) != 4 {
		t.Errorf("json lists %d changes, want 4 (ConfigMap, Secret, Deployment, test Pod)", len(parsed.Changes))
	}
	if strings.Contains(out.String(), "cm90YXRlZCE=") || strings.Contains(out.String(), "rotated!") {
		t.Errorf("json output shows the Secret value unmasked")
	}
}

func TestCompareIdenticalRendersHaveNoChanges(t *testing.T) {
	a := renderAPI(t, nil, map[string]any{"logLevel": "warn"})
	b := renderAPI(t, nil, map[string]any{"logLevel": "warn"})
	if c := compare(a, b, "prod"); len(c) != 0 {
		t.Errorf("identical renders differ: %+v", c)
	}
	added := compare(nil, b, "prod")
	if len(added) != len(b) || added[0].Type != Added {
		t.Errorf("against nothing, every resource must be added: %+v", added)
	}
}

func TestMaskSecretPair(t *testing.T) {
	before := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\ndata:\n  user: YXBp\n  password: czNjcjN0\nstringData:\n  token: abc"
	after := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\ndata:\n  user: YXBp\n  password: bmV3\nstringData:\n  token: abc"
	b, a := maskSecretPair(before, after)
	for _, want := range []string{"user: 'REDACTED # (3 bytes)'", "password: '-------- # (6 bytes)'", "token: 'REDACTED # (3 bytes)'"} {
		if !strings.Contains(b, want) {
			t.Errorf("masked before lacks %q:\n%s", want, b)
		}
	}
	if !strings.Contains(a, "password: '++++++++ # (3 bytes)'") {
		t.Errorf("masked after:\n%s", a)
	}
	for _, secret := range []string{"czNjcjN0", "bmV3", "YXBp", "abc"} {
		if strings.Contains(a+b, secret) {
			t.Errorf("masked output contains %q", secret)
		}
	}
}

// TestStripTrailingCR: a change only in line endings is hidden with
// --strip-trailing-cr (and still counted); a real change is shown.
func TestStripTrailingCR(t *testing.T) {
	id := manifest.ID{APIVersion: "v1", Kind: "ConfigMap", Namespace: "n", Name: "c"}
	res := &DiffResult{Release: "r", Installed: true, Changes: []Change{
		{Type: Changed, ID: id, Before: "data:\r\n  a: b\r\n", After: "data:\n  a: b\n"},
	}}
	var out bytes.Buffer
	if err := WriteDiff(&out, res, DiffPrintOptions{StripTrailingCR: true}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "has changed") || !strings.Contains(out.String(), "1 more resource change") || !res.HasChanges() {
		t.Errorf("with --strip-trailing-cr:\n%s", out.String())
	}
	out.Reset()
	if err := WriteDiff(&out, res, DiffPrintOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "n, c, ConfigMap (v1) has changed:") {
		t.Errorf("without --strip-trailing-cr:\n%s", out.String())
	}
}

// TestCompare: each change says whether it is a hook and a test, from
// whichever side has the document; comment-only documents are no change.
func TestCompare(t *testing.T) {
	doc := func(kind, name, hook, body string) manifest.Document {
		return manifest.Document{ID: manifest.ID{APIVersion: "v1", Kind: kind, Name: name}, Hook: hook, Content: body}
	}
	before := []manifest.Document{
		doc("ConfigMap", "kept", "", "a: 1"),
		doc("Pod", "was-hook", "pre-install", "x: 1"),
		doc("Pod", "old-test", "test", "t: 1"),
		{Content: "# only a comment"},
	}
	after := []manifest.Document{
		doc("ConfigMap", "kept", "", "a: 2"),
		doc("Pod", "was-hook", "", "x: 2"),
		doc("Job", "new-hook", "post-install", "j: 1"),
		doc("ConfigMap", "plain", "", "p: 1"),
		{Content: "# another comment"},
	}
	type row struct {
		Type       ChangeType
		Name       string
		Hook, Test bool
	}
	var got []row
	for _, c := range compare(before, after, "shop") {
		got = append(got, row{c.Type, c.ID.Name, c.Hook, c.Test})
	}
	want := []row{
		{Changed, "kept", false, false},
		{Changed, "was-hook", true, false},
		{Added, "new-hook", true, false},
		{Added, "plain", false, false},
		{Removed, "old-test", true, true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("compare (-want +got):\n%s", diff)
	}
}

// TestSameJSON: values compare as they are stored.
func TestSameJSON(t *testing.T) {
	tests := []struct {
		a, b map[string]any
		want bool
	}{
		{nil, map[string]any{}, true},
		{map[string]any{}, nil, true},
		{map[string]any{"n": 2}, map[string]any{"n": 2.0}, true},
		{map[string]any{"n": 1}, nil, false},
		{nil, map[string]any{"n": 1}, false},
		{map[string]any{"n": 1}, map[string]any{"n": "1"}, false},
	}
	for _, tt := range tests {
		if got, err := sameJSON(tt.a, tt.b); err != nil || got != tt.want {
			t.Errorf("sameJSON(%v, %v) = %v, %v; want %v", tt.a, tt.b, got, err, tt.want)
		}
	}
}

// TestInjectorProgramChanges: diff's reason names an external injector's
// program when its build, version or path changes, and says when a
// revision is the first to record it.
func TestInjectorProgramChanges(t *testing.T) {
	const spec = "istioctl kube-inject -f FILE"
	old := &inject.Program{Path: "/opt/istio-1.27.1/bin/istioctl", SHA256: "sha256:aaaaaaaaaaaaaaaa", Version: "1.27.1"}
	tests := []struct {
		name   string
		before *inject.Program
		after  *inject.Program
		want   []string
	}{
		{"same program", old, &inject.Program{Path: old.Path, SHA256: old.SHA256, Version: old.Version}, nil},
		{"new version", old, &inject.Program{Path: "/opt/istio-1.28.0/bin/istioctl", SHA256: "sha256:bbbbbbbbbbbbbbbb", Version: "1.28.0"},
			[]string{"injector " + spec + ": program istioctl 1.27.1 (sha256:aaaaaaaaaaaa) → istioctl 1.28.0 (sha256:bbbbbbbbbbbb)"}},
		{"rebuilt, no version command", &inject.Program{Path: "/bin/inj", SHA256: "sha256:1111111111111111"}, &inject.Program{Path: "/bin/inj", SHA256: "sha256:2222222222222222"},
			[]string{"injector " + spec + ": program inj (sha256:111111111111) → inj (sha256:222222222222)"}},
		{"moved", old, &inject.Program{Path: "/usr/local/bin/istioctl", SHA256: old.SHA256, Version: old.Version},
			[]string{"injector " + spec + ": program /opt/istio-1.27.1/bin/istioctl → /usr/local/bin/istioctl (the same file)"}},
		{"first recorded", nil, old,
			[]string{"injector " + spec + ": program istioctl 1.27.1 (sha256:aaaaaaaaaaaa) recorded (the deployed revision does not name its program)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := injectorChanges([]inject.Record{{Name: spec, Digest: "sha256:x", Program: tt.before}}, []inject.Record{{Name: spec, Digest: "sha256:y", Program: tt.after}})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("reasons (-want +got):\n%s", diff)
			}
		})
	}
}
