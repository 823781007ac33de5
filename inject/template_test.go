package inject

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/helm-inject/helm-inject/internal/testfs"
	"github.com/helm-inject/helm-inject/manifest"
)

var update = flag.Bool("update", false, "write missing golden files under fixtures/golden (existing ones are frozen)")

const exampleLibrary = "../examples/injectors"

// exampleParams are the parameters the golden files are made with.
var exampleParams = map[string]map[string]any{
	"log-shipper":    {"destination": "logs.example:24224"},
	"oauth2-proxy":   {"issuerURL": "https://sso.example", "clientSecretName": "web-oauth"},
	"cloudsql-proxy": {"instance": "shop:europe-west1:orders"},
}

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "fixtures", "workloads", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// golden compares an injector version's output with its frozen file.
// -update writes the file of a new version only: a released version's
// output is frozen, so an existing file is never rewritten.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("..", "fixtures", "golden", "injectors", name)
	_, err := os.Stat(path)
	testfs.Golden(t, path, got, *update && errors.Is(err, fs.ErrNotExist),
		"A released injector version must inject the same bytes forever: add a new version instead of changing this one.")
}

func injectWith(t *testing.T, lib *Library, name, version string, params map[string]any, in []byte) []byte {
	t.Helper()
	def := lib.Get(name, version)
	if def == nil {
		t.Fatalf("%s@%s is not in the library", name, version)
	}
	return injectDef(t, def, params, in)
}

// injectDef injects a stream with a definition and parameters, for
// release "shop" in namespace "shop".
func injectDef(t *testing.T, def *Definition, params map[string]any, in []byte) []byte {
	t.Helper()
	inj, err := NewTemplateInjector(def, params)
	if err != nil {
		t.Fatal(err)
	}
	out, err := inj.Inject(t.Context(), in, Env{Release: "shop", Namespace: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestShippedDefinitionsAreFrozen: each shipped version's output on the
// fixture workloads is frozen under fixtures/golden/injectors.
func TestShippedDefinitionsAreFrozen(t *testing.T) {
	lib, err := LoadLibrary(exampleLibrary)
	if err != nil {
		t.Fatal(err)
	}
	if err := lib.Verify(); err != nil {
		t.Fatal(err)
	}
	in := readFixture(t, "mixed.yaml")
	for _, name := range lib.Names() {
		for _, def := range lib.Versions(name) {
			t.Run(def.Ref(), func(t *testing.T) {
				out := injectWith(t, lib, name, def.Version, exampleParams[name], in)
				golden(t, name+"-"+def.Version+".yaml", out)
				// The pipeline's path (documents, on every CPU) injects
				// the same frozen bytes.
				inj, err := NewTemplateInjector(def, exampleParams[name])
				if err != nil {
					t.Fatal(err)
				}
				injected, err := inj.InjectDocuments(t.Context(), docsOf(t, string(in)), Env{Release: "shop", Namespace: "shop"})
				if err != nil {
					t.Fatal(err)
				}
				var stream strings.Builder
				for _, d := range injected {
					stream.WriteString("---\n" + d.Content + "\n")
				}
				golden(t, name+"-"+def.Version+".yaml", []byte(stream.String()))
				// The output keeps every resource and is stable.
				if _, err := Reconcile(docsOf(t, string(in)), string(out), "shop"); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

func docsOf(t *testing.T, stream string) []manifestDoc {
	t.Helper()
	return parseAll(t, stream)
}

// TestTemplateInjectionIsIdempotent: injecting twice equals injecting
// once, and moving to another version strips the old one's additions.
func TestTemplateInjectionIsIdempotent(t *testing.T) {
	lib, err := LoadLibrary(exampleLibrary)
	if err != nil {
		t.Fatal(err)
	}
	in := readFixture(t, "mixed.yaml")
	for _, name := range lib.Names() {
		for _, def := range lib.Versions(name) {
			once := injectWith(t, lib, name, def.Version, exampleParams[name], in)
			twice := injectWith(t, lib, name, def.Version, exampleParams[name], once)
			if diff := cmp.Diff(string(once), string(twice)); diff != "" {
				t.Errorf("%s: injecting twice differs from once:\n%s", def.Ref(), diff)
			}
		}
		versions := lib.Versions(name)
		oldest, newest := versions[0], versions[len(versions)-1]
		upgraded := injectWith(t, lib, name, newest.Version, exampleParams[name],
			injectWith(t, lib, name, oldest.Version, exampleParams[name], in))
		direct := injectWith(t, lib, name, newest.Version, exampleParams[name], in)
		// Sequences emptied by the strip may remain as "[]"; compare the
		// status and containers, which must match exactly.
		if strings.Count(string(upgraded), "helm-inject.io/status") != strings.Count(string(direct), "helm-inject.io/status") ||
			strings.Count(string(upgraded), "- name: "+name) != strings.Count(string(direct), "- name: "+name) {
			t.Errorf("%s: upgrading %s → %s leaves a different pod than injecting %s directly:\n%s",
				name, oldest.Version, newest.Version, newest.Version, upgraded)
		}
		if strings.Contains(string(upgraded), `"version":"`+oldest.Version+`"`) {
			t.Errorf("%s: the status still names %s after upgrading", name, oldest.Version)
		}
	}
}

func TestTemplateSelection(t *testing.T) {
	lib, err := LoadLibrary(exampleLibrary)
	if err != nil {
		t.Fatal(err)
	}
	out := string(injectWith(t, lib, "cloudsql-proxy", "1.0.0", exampleParams["cloudsql-proxy"], readFixture(t, "mixed.yaml")))
	docs := parseAll(t, out)
	injected := map[string]bool{}
	for _, d := range docs {
		injected[d.ID.Kind+"/"+d.ID.Name] = strings.Contains(d.Content, "name: cloudsql-proxy")
	}
	want := map[string]bool{"Deployment/web": true, "StatefulSet/db": false, "CronJob/report": true, "Deployment/legacy": false, "ConfigMap/settings": false}
	if diff := cmp.Diff(want, injected); diff != "" {
		t.Errorf("selection by label db-proxy=enabled and opt-out (-want +got):\n%s", diff)
	}
}

func TestTemplateErrors(t *testing.T) {
	lib, err := LoadLibrary(exampleLibrary)
	if err != nil {
		t.Fatal(err)
	}
	def := lib.Get("log-shipper", "1.0.0")
	if _, err := NewTemplateInjector(def, nil); err == nil || !strings.Contains(err.Error(), `parameter "destination" is required`) {
		t.Errorf("missing required parameter: %v", err)
	}
	if _, err := NewTemplateInjector(def, map[string]any{"destination": "x:1", "colour": "red"}); err == nil || !strings.Contains(err.Error(), "has no parameter colour") {
		t.Errorf("unknown parameter: %v", err)
	}
	if _, err := lib.Resolve("no-such", ""); err == nil || !strings.Contains(err.Error(), `injector "no-such" is not in the library`) {
		t.Errorf("unknown injector: %v", err)
	}
	if _, err := lib.Resolve("log-shipper", "^2"); err == nil || !strings.Contains(err.Error(), `no version of injector "log-shipper"`) || !strings.Contains(err.Error(), "1.0.0, 1.1.0") {
		t.Errorf("constraint that matches nothing: %v", err)
	}
	if d, err := lib.Resolve("log-shipper", "~1.0"); err != nil || d.Version != "1.0.0" {
		t.Errorf("~1.0 resolved to %v, %v", d, err)
	}
	if d, err := lib.Resolve("log-shipper", "^1"); err != nil || d.Version != "1.1.0" {
		t.Errorf("^1 resolved to %v, %v", d, err)
	}

	// A template that names a missing parameter, and one whose container
	// clashes with the pod's own.
	for _, tt := range []struct{ def, want string }{
		{"name: bad\nversion: 1.0.0\ntemplate: |\n  containers:\n    - name: x\n      image: {{ .Params.nope }}\n", "map has no entry for key \"nope\""},
		{"name: clash\nversion: 1.0.0\ntemplate: |\n  containers:\n    - name: app\n      image: x\n", `would add container "app", but the pod already has a container of that name`},
		{"name: broken\nversion: 1.0.0\ntemplate: |\n  containers: {{ \n", "template:"},
		{"name: v\nversion: one\ntemplate: x\n", "is not semver"},
	} {
		d, err := ParseDefinition("test.yaml", []byte(tt.def))
		if err == nil {
			var inj *TemplateInjector
			if inj, err = NewTemplateInjector(d, nil); err == nil {
				_, err = inj.Inject(t.Context(), readFixture(t, "mixed.yaml"), Env{Release: "r"})
			}
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("definition %q: error = %v, want %q", tt.def, err, tt.want)
		}
	}
}

// TestLockedVersionsAreFrozen: editing a locked version is refused with an
// error naming the file and the lock; an unlocked one fails verify.
func TestLockedVersionsAreFrozen(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(exampleLibrary)); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "log-shipper", "1.0.0.yaml")
	b, _ := os.ReadFile(file)
	if err := os.WriteFile(file, []byte(strings.Replace(string(b), "fluent-bit:2.2.0", "fluent-bit:2.2.1", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadLibrary(dir)
	if err == nil || !strings.Contains(err.Error(), file+" was changed after log-shipper@1.0.0 was locked in "+filepath.Join(dir, LockFileName)) ||
		!strings.Contains(err.Error(), "add the change as a new version") {
		t.Errorf("edited locked version: %v", err)
	}
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	newFile := filepath.Join(dir, "log-shipper", "1.2.0.yaml")
	if err := os.WriteFile(newFile, []byte(strings.Replace(string(b), "version: 1.0.0", "version: 1.2.0", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	lib, err := LoadLibrary(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := lib.Verify(); err == nil || !strings.Contains(err.Error(), "log-shipper@1.2.0") {
		t.Errorf("verify with an unlocked version: %v", err)
	}
	if added, err := lib.Lock(); err != nil || len(added) != 1 || added[0] != "log-shipper@1.2.0" {
		t.Errorf("lock added %v, %v", added, err)
	}
	lib, err = LoadLibrary(dir)
	if err != nil || lib.Verify() != nil {
		t.Errorf("after lock: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "log-shipper", "9.9.9.yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadLibrary(dir); err == nil || !strings.Contains(err.Error(), "declares log-shipper@1.0.0; it must live in log-shipper/1.0.0.yaml") {
		t.Errorf("misplaced definition: %v", err)
	}
}

type manifestDoc = manifest.Document

func parseAll(t *testing.T, stream string) []manifest.Document {
	t.Helper()
	var out []manifest.Document
	for _, part := range manifest.Split(stream) {
		d, err := manifest.Parse("", part)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

func TestTemplateSelectionByKindAndName(t *testing.T) {
	def, err := ParseDefinition("sel.yaml", []byte("name: sel\nversion: 1.0.0\nselect:\n  kinds: [Deployment, CronJob]\n  names: [\"w*\", report]\ntemplate: |\n  annotations:\n    selected: \"yes\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	inj, err := NewTemplateInjector(def, nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := inj.Inject(t.Context(), readFixture(t, "mixed.yaml"), Env{Release: "r"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, d := range parseAll(t, string(out)) {
		got[d.ID.Kind+"/"+d.ID.Name] = strings.Contains(d.Content, "selected: \"yes\"")
	}
	// legacy is a Deployment but neither matches a glob nor wants injection.
	want := map[string]bool{"Deployment/web": true, "StatefulSet/db": false, "CronJob/report": true, "Deployment/legacy": false, "ConfigMap/settings": false}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("selection (-want +got):\n%s", diff)
	}
}

// TestPatchCache: a patch rendered the same for many workloads is decoded
// once, and each workload gets nodes of its own to edit.
func TestPatchCache(t *testing.T) {
	var c patchCache
	text := "containers:\n  - name: proxy\n    image: proxy:1\nvolumes:\n  - name: v\n    emptyDir: {}\n"
	first, err := c.decode(text)
	if err != nil {
		t.Fatal(err)
	}
	setScalar(&first.Containers[0], "restartPolicy", "Always")
	first.Volumes[0].Content[1].Value = "changed"
	second, err := c.decode(text)
	if err != nil {
		t.Fatal(err)
	}
	if got := scalar(&second.Containers[0], "restartPolicy"); got != "" {
		t.Errorf("an edit of one workload's patch reached another's: restartPolicy %q", got)
	}
	if got := second.Volumes[0].Content[1].Value; got != "v" {
		t.Errorf("an edit of one workload's patch reached another's: volume name %q", got)
	}
	if len(c.decoded) != 1 {
		t.Errorf("cache holds %d patches, want 1", len(c.decoded))
	}
	for i := range patchCacheSize + 10 {
		if _, err := c.decode(fmt.Sprintf("containers:\n  - name: c%d\n", i)); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.decoded) != patchCacheSize {
		t.Errorf("cache holds %d patches, want at most %d", len(c.decoded), patchCacheSize)
	}
	if _, err := c.decode("containers: [\n"); err == nil {
		t.Error("invalid YAML decoded without an error")
	}
	if _, err := c.decode("sidecars: []\n"); err == nil || !strings.Contains(err.Error(), "sidecars") {
		t.Errorf("an unknown field should be an error naming it, got %v", err)
	}
}

// TestUpgradeStripsWhatTheOldVersionAdded: a new version that renames its
// annotation, label, env var, volume mount, volume, init container and
// container leaves nothing of the old version's behind: each kind of
// addition is stripped by name from the status annotation.
func TestUpgradeStripsWhatTheOldVersionAdded(t *testing.T) {
	def := func(version, suffix string) *Definition {
		t.Helper()
		d, err := ParseDefinition("strip/"+version+".yaml", []byte(`name: strip
version: `+version+`
template: |
  containers:
    - {name: proxy-`+suffix+`, image: proxy:1}
  initContainers:
    - {name: init-`+suffix+`, image: init:1}
  volumes:
    - {name: vol-`+suffix+`, emptyDir: {}}
  volumeMounts:
    - {name: vol-`+suffix+`, mountPath: /`+suffix+`}
  env:
    - {name: ENV_`+suffix+`, value: "1"}
  annotations:
    ann-`+suffix+`: "1"
  labels:
    label-`+suffix+`: "1"
`))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	run := func(d *Definition, in []byte) string { return string(injectDef(t, d, nil, in)) }
	in := []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n        - {name: app, image: app:1}\n")
	upgraded := run(def("2.0.0", "new"), []byte(run(def("1.0.0", "old"), in)))
	for _, old := range []string{"proxy-old", "init-old", "vol-old", "/old", "ENV_old", "ann-old", "label-old"} {
		if strings.Contains(upgraded, old) {
			t.Errorf("%s survived the upgrade to 2.0.0:\n%s", old, upgraded)
		}
	}
	for _, added := range []string{"proxy-new", "init-new", "vol-new", "/new", "ENV_new", "ann-new", "label-new", "name: app"} {
		if !strings.Contains(upgraded, added) {
			t.Errorf("%s is missing after the upgrade:\n%s", added, upgraded)
		}
	}
}
