package release

import (
	"bytes"
	"flag"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/helm-inject/helm-inject/chartify"
	chart "helm.sh/helm/v4/pkg/chart/v2"

	"github.com/helm-inject/helm-inject/inject"
	"github.com/helm-inject/helm-inject/internal/testfs"
	"github.com/helm-inject/helm-inject/manifest"
)

var update = flag.Bool("update", false, "rewrite the golden files under fixtures/golden")

// buildInjector compiles the fixture injector program.
func buildInjector(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "sidecar-injector")
	cmd := exec.Command("go", "build", "-o", bin, "../fixtures/injectors/sidecar-injector")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the fixture injector: %v\n%s", err, out)
	}
	return bin
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	testfs.Golden(t, filepath.Join("..", "fixtures", "golden", name), got, *update, "If the change is intended, run go test ./release -update.")
}

// TestTemplateGolden freezes what the external-injector pipeline prints for
// the webapp fixture: every workload, hook and test pod with the sidecar.
func TestTemplateGolden(t *testing.T) {
	bin := buildInjector(t)
	tests := []struct {
		golden string
		spec   string
		print  PrintOptions
	}{
		{"webapp-injected.yaml", bin + " f=FILE,image=registry.example/log-shipper:1.0", PrintOptions{}},
		{"webapp-injected-crds-no-tests.yaml", bin + ",f=FILE,image=registry.example/log-shipper:1.0", PrintOptions{IncludeCRDs: true, SkipTests: true}},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			ch, _, err := chartify.Load("../fixtures/charts/webapp", chartify.LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			c, err := inject.ParseSpec(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			tpl := &Template{Inputs: Inputs{Namespace: "shop", Injectors: &inject.Declared{Specs: []inject.Spec{c}}}}
			r, err := tpl.Run(t.Context(), "demo", Source{Ref: "fixtures/charts/webapp", Chart: ch}, map[string]any{"greeting": "hej"})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := WriteManifests(&out, r, tt.print); err != nil {
				t.Fatal(err)
			}
			// The injector's path is machine-specific; it appears nowhere in
			// the manifests, only in the chart annotations (not printed).
			if strings.Contains(out.String(), bin) {
				t.Fatalf("output mentions the injector path %s", bin)
			}
			golden(t, tt.golden, out.Bytes())
		})
	}
}

func TestTemplateShowOnly(t *testing.T) {
	r := renderTemplate(t, "../fixtures/charts/webapp", "webapp", "demo", "shop")
	var out bytes.Buffer
	if err := WriteManifests(&out, r, PrintOptions{ShowOnly: []string{"templates/statefulset.yaml"}}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(out.String(), "# Source: webapp/templates/statefulset.yaml"); got != 2 || strings.Count(out.String(), "# Source:") != 2 {
		t.Errorf("--show-only templates/statefulset.yaml printed:\n%s", out.String())
	}
	err := WriteManifests(&out, r, PrintOptions{ShowOnly: []string{"templates/nope.yaml"}})
	if err == nil || !strings.Contains(err.Error(), "could not find template templates/nope.yaml") {
		t.Errorf("unknown --show-only template: error = %v", err)
	}
}

// TestTemplateHideSecret: --hide-secret prints each Secret of the
// manifest as helm's comment, with none of its values; other documents
// are printed whole.
func TestTemplateHideSecret(t *testing.T) {
	r := renderTemplate(t, "../fixtures/charts/webapp", "webapp", "demo", "shop")
	var plain, hidden bytes.Buffer
	if err := WriteManifests(&plain, r, PrintOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := WriteManifests(&hidden, r, PrintOptions{HideSecret: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plain.String(), "kind: Secret") {
		t.Fatalf("the webapp chart renders no Secret:\n%s", plain.String())
	}
	if strings.Contains(hidden.String(), "kind: Secret") || !strings.Contains(hidden.String(), "# Source: webapp/templates/secret.yaml\n"+hiddenSecret) {
		t.Errorf("--hide-secret printed:\n%s", hidden.String())
	}
	if !strings.Contains(hidden.String(), "kind: Deployment") {
		t.Errorf("--hide-secret left out other documents:\n%s", hidden.String())
	}
}

// TestWriteManifestsFramesAsHelm4: the bytes helm 4.3.2's `helm template`
// prints (captured from it) for a chart whose two hooks are all it
// renders, and for a ConfigMap and a Secret with --output-dir and
// --hide-secret's stored manifest.
func TestWriteManifestsFramesAsHelm4(t *testing.T) {
	doc := func(source, kind, name, hook string) manifest.Document {
		content := "apiVersion: v1\nkind: " + kind + "\nmetadata:\n  name: " + name
		if hook != "" {
			content += "\n  annotations: {helm.sh/hook: " + hook + "}"
		}
		d, err := manifest.Parse(source, content)
		if err != nil {
			t.Fatal(err)
		}
		d.Trailer = "\n" // each template file ended with a line end
		return d
	}
	hooks := &chartify.Rendered{Chart: &chart.Chart{Metadata: &chart.Metadata{Name: "hooks"}}, Documents: []manifest.Document{
		doc("hooks/templates/hooks.yaml", "ConfigMap", "pre", "pre-install"),
		doc("hooks/templates/hooks.yaml", "ConfigMap", "post", "post-install"),
	}}
	var out bytes.Buffer
	if err := WriteManifests(&out, hooks, PrintOptions{}); err != nil {
		t.Fatal(err)
	}
	const helm4 = "\n---\n# Source: hooks/templates/hooks.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: pre\n  annotations: {helm.sh/hook: pre-install}\n\n" +
		"---\n# Source: hooks/templates/hooks.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: post\n  annotations: {helm.sh/hook: post-install}\n\n"
	if diff := cmp.Diff(helm4, out.String()); diff != "" {
		t.Errorf("hooks only (-helm 4 +helm-inject)\n%s", diff)
	}
	out.Reset()
	if err := WriteManifests(&out, hooks, PrintOptions{ShowOnly: []string{"templates/hooks.yaml"}}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "---\n# Source: hooks/templates/hooks.yaml\n") {
		t.Errorf("--show-only prints an empty line first:\n%q", out.String())
	}

	two := &chartify.Rendered{Documents: []manifest.Document{doc("two/templates/both.yaml", "Secret", "s", ""), doc("two/templates/both.yaml", "ConfigMap", "a", "")}}
	dir := t.TempDir()
	if err := WriteManifestsToDir(dir, two, PrintOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "two", "templates", "both.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const dirHelm4 = "---\n# Source: two/templates/both.yaml\napiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n\n" +
		"---\n# Source: two/templates/both.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n\n"
	if diff := cmp.Diff(dirHelm4, string(got)); diff != "" {
		t.Errorf("--output-dir (-helm 4 +helm-inject)\n%s", diff)
	}
}

// TestTemplatePrintsWhiteSpaceAsHelm4: for a chart whose templates end
// with a trim marker, with blank lines, with CRLF line ends, with several
// documents (one only a comment) and a test hook, template prints exactly
// the bytes helm 4.3.2's `helm template ws fixtures/charts/whitespace -n ns`
// printed, alone and with --show-only templates/test-hook.yaml --show-only
// templates/multi.yaml (fixtures/golden/whitespace*.helm4.yaml were
// captured from the helm 4 CLI; recapture them from it, never from
// helm-inject).
func TestTemplatePrintsWhiteSpaceAsHelm4(t *testing.T) {
	r := renderTemplate(t, "../fixtures/charts/whitespace", "whitespace", "ws", "ns")
	for _, tc := range []struct {
		golden string
		o      PrintOptions
	}{
		{"whitespace.helm4.yaml", PrintOptions{}},
		// helm prints in the order of the patterns, not of the files.
		{"whitespace-show-only.helm4.yaml", PrintOptions{ShowOnly: []string{"templates/test-hook.yaml", "templates/multi.yaml"}}},
	} {
		want, err := os.ReadFile(filepath.Join("..", "fixtures", "golden", tc.golden))
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := WriteManifests(&out, r, tc.o); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(want), out.String()); diff != "" {
			t.Errorf("%s (-helm 4 +helm-inject):\n%s", tc.golden, diff)
		}
	}
}

// TestTemplateTrimsALoneManifest: a chart whose one manifest (the first
// document, before a test hook) ends in blank lines prints it trimmed, as
// helm 4.3.2's `helm template r . -n ns` printed it (copied below).
func TestTemplateTrimsALoneManifest(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "one")
	testfs.Write(t, dir, map[string]string{
		"Chart.yaml":          "apiVersion: v2\nname: one\nversion: 0.1.0\n",
		"templates/cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n\n\n",
		"templates/test.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: t\n  annotations:\n    helm.sh/hook: test\n",
	})
	r := renderTemplate(t, dir, dir, "r", "ns")
	var out bytes.Buffer
	if err := WriteManifests(&out, r, PrintOptions{}); err != nil {
		t.Fatal(err)
	}
	const helm4 = "---\n# Source: one/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n" +
		"---\n# Source: one/templates/test.yaml\napiVersion: v1\nkind: Pod\nmetadata:\n  name: t\n  annotations:\n    helm.sh/hook: test\n\n"
	if diff := cmp.Diff(helm4, out.String()); diff != "" {
		t.Errorf("(-helm 4 +helm-inject):\n%s", diff)
	}
}

// TestOutputDirShowOnly: template --output-dir --show-only writes the
// shown template's file only, with the bytes helm 4.3.2's `helm template
// ws fixtures/charts/whitespace -n ns --output-dir` wrote into that file
// (copied below; helm 4 itself answers --show-only with --output-dir by
// "could not find template" after writing every file).
func TestOutputDirShowOnly(t *testing.T) {
	r := renderTemplate(t, "../fixtures/charts/whitespace", "whitespace", "ws", "ns")
	dir := t.TempDir()
	if err := WriteManifestsToDir(dir, r, PrintOptions{ShowOnly: []string{"templates/multi.yaml"}}); err != nil {
		t.Fatal(err)
	}
	var files []string
	if err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"whitespace/templates/multi.yaml"}, files); diff != "" {
		t.Errorf("files written (-want +got):\n%s", diff)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "whitespace", "templates", "multi.yaml"))
	const helm4 = "---\n# Source: whitespace/templates/multi.yaml\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: multi\n" +
		"---\n# Source: whitespace/templates/multi.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: multi\n\n" +
		"---\n# Source: whitespace/templates/multi.yaml\napiVersion: v1\nkind: Service\nmetadata:\n  name: multi\nspec:\n  ports: [{port: 80}]\n\n\n" +
		"---\n# Source: whitespace/templates/multi.yaml\n# only a comment\n\n"
	if diff := cmp.Diff(helm4, string(got)); diff != "" {
		t.Errorf("multi.yaml (-helm 4 +helm-inject):\n%s", diff)
	}
}

// renderTemplate loads the chart in dir and runs template for release
// name in namespace ns, with no values and no injector.
func renderTemplate(t *testing.T, dir, ref, name, ns string) *chartify.Rendered {
	t.Helper()
	ch, _, err := chartify.Load(dir, chartify.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := (&Template{Inputs: Inputs{Namespace: ns}}).Run(t.Context(), name, Source{Ref: ref, Chart: ch}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
