package chartify

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"

	"github.com/helm-inject/helm-inject/internal/benchchart"
	"github.com/helm-inject/helm-inject/internal/testfs"
	"github.com/helm-inject/helm-inject/manifest"
)

const webapp = "../fixtures/charts/webapp"

func renderWebapp(t *testing.T, vals map[string]any) *Rendered {
	t.Helper()
	ch, kind, err := Load(webapp, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if kind != SourceChart {
		t.Fatalf("kind = %s, want chart", kind)
	}
	r, err := Render(ch, vals, RenderOptions{ReleaseName: "shop", Namespace: "prod", Revision: 3, IsUpgrade: true})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRenderUsesReleaseFacts(t *testing.T) {
	r := renderWebapp(t, map[string]any{"greeting": "hi"})
	var cm string
	for _, d := range r.Documents {
		if d.ID.Kind == "ConfigMap" {
			cm = d.Content
		}
	}
	for _, want := range []string{`revision: "3"`, `isUpgrade: "true"`, `greeting: "hi"`, `lookedUpOwner: "none"`} {
		if !strings.Contains(cm, want) {
			t.Errorf("ConfigMap lacks %s:\n%s", want, cm)
		}
	}
	if !strings.Contains(r.Notes, "installed as shop in prod") {
		t.Errorf("notes = %q", r.Notes)
	}
	// Hooks come after the manifests, and keep their annotation.
	last := r.Documents[len(r.Documents)-1]
	if last.Hook == "" {
		t.Errorf("last document %s is not a hook; hooks must follow manifests", last.ID)
	}
}

// TestTempChartReproducesDocuments is the core promise of the temporary
// chart: rendering it gives back the injected documents byte for byte, with
// the same sources, the same notes and every CRD once.
func TestTempChartReproducesDocuments(t *testing.T) {
	r := renderWebapp(t, nil)
	injected := pretendInjected(r, "\n# injected {{ not a template }} }}{{")
	_, loaded, again := buildWriteLoadRender(t, r, injected, TempChartOptions{Source: webapp, Annotations: map[string]string{"helm-inject.io/injectors": `[{"name":"x f=FILE"}]`}},
		RenderOptions{ReleaseName: "shop", Namespace: "prod", Revision: 3, IsUpgrade: true})
	// Subcharts' documents keep helm's paths: the temporary chart has the
	// source chart's subcharts, each with its own templates.
	want := injected
	if want[5].Source != "webapp/charts/cache/templates/deployment.yaml" {
		t.Fatalf("unexpected fixture order: document 5 comes from %s", want[5].Source)
	}
	if diff := cmp.Diff(want, again.Documents); diff != "" {
		t.Errorf("temporary chart renders differently (-injected +rendered):\n%s", diff)
	}
	if again.Notes != r.Notes {
		t.Errorf("notes = %q, want %q", again.Notes, r.Notes)
	}

	md := loaded.Metadata
	if md.Name != "webapp" || md.Version != "1.4.2" || md.AppVersion != "2.7.0" || md.KubeVersion != ">=1.25.0-0" || len(md.Dependencies) != 0 {
		t.Errorf("metadata = %+v, want the source chart's identity and no dependencies", md)
	}
	if md.Annotations[AnnotationSource] != webapp || md.Annotations["helm-inject.io/injectors"] != `[{"name":"x f=FILE"}]` {
		t.Errorf("annotations = %v", md.Annotations)
	}
	var crds []string
	for _, c := range loaded.CRDObjects() {
		crds = append(crds, c.Name)
	}
	if diff := cmp.Diff([]string{"crds/charts/cache/caches.yaml", "crds/widgets.yaml"}, crds); diff != "" {
		t.Errorf("CRD files (-want +got):\n%s", diff)
	}
	if loaded.Values["image"] != "registry.example/webapp:2.7.0" {
		t.Errorf("values.yaml is not the source chart's defaults: %v", loaded.Values)
	}
}

// TestTempChartKeepsWhiteSpace: the temporary chart of a chart whose
// templates end in trim markers, blank lines and CRLF line ends, with a
// trailerless document that installs before its file's others, renders
// back to the same documents with the same trailing white space each, so
// that apply stores the bytes helm 4's install stores.
func TestTempChartKeepsWhiteSpace(t *testing.T) {
	ch, err := loader.Load("../fixtures/charts/whitespace")
	if err != nil {
		t.Fatal(err)
	}
	opts := RenderOptions{ReleaseName: "ws", Namespace: "ns", Revision: 1}
	r, err := Render(ch, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	trailers := map[string]string{}
	for _, d := range r.Documents {
		trailers[d.Source+" "+d.ID.Kind] = d.Trailer
	}
	// What helm 4 keeps after each document of the fixture, read off the
	// templates by hand.
	for key, want := range map[string]string{
		"whitespace/templates/blank-after.yaml ConfigMap": "\n\n\n",
		"whitespace/templates/trimmed.yaml ConfigMap":     "",
		"whitespace/templates/multi.yaml ServiceAccount":  "",
		"whitespace/templates/multi.yaml Service":         "\n\n",
		"whitespace/templates/crlf.yaml ConfigMap":        "\r\n",
	} {
		if got, ok := trailers[key]; !ok || got != want {
			t.Errorf("trailer of %s = %q (found %v), want %q", key, got, ok, want)
		}
	}
	_, _, again := buildWriteLoadRender(t, r, r.Documents, TempChartOptions{Source: "../fixtures/charts/whitespace"}, opts)
	if diff := cmp.Diff(r.Documents, again.Documents); diff != "" {
		t.Errorf("temporary chart renders other white space (-chart +temporary chart):\n%s", diff)
	}
}

func TestWriteChartIsPrivate(t *testing.T) {
	r := renderWebapp(t, nil)
	tc, err := BuildTempChart(r, r.Documents, TempChartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "chart")
	if err := WriteChart(tc, dir); err != nil {
		t.Fatal(err)
	}
	files := 0
	err = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			files++
		}
		want := os.FileMode(0o600)
		if fi.IsDir() {
			want = 0o700
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s has mode %v, want %v", p, fi.Mode().Perm(), want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Every file of the chart was written: Chart.yaml, values.yaml, one
	// file per source template, and the CRDs; and the subchart's
	// Chart.yaml and templates.
	if len(tc.Dependencies()) != 1 {
		t.Fatalf("the temporary chart has %d subcharts, want webapp's one (cache)", len(tc.Dependencies()))
	}
	sub := tc.Dependencies()[0]
	if want := 2 + len(tc.Templates) + len(tc.Files) + 1 + len(sub.Templates); files != want || len(tc.Templates) == 0 || len(sub.Templates) == 0 {
		t.Errorf("%d files written, want %d", files, want)
	}
}

// TestTempChartConditionsApplyOnce: the temporary chart holds the
// subcharts that rendered, under helm's paths, and the source chart's
// conditions do not apply to it again: rendered with values that would
// disable a subchart, it still renders that subchart's documents; a
// subchart that was disabled is absent, whatever the values.
func TestTempChartConditionsApplyOnce(t *testing.T) {
	for _, tt := range []struct {
		name  string
		cache bool
	}{
		{"subchart enabled", true},
		{"subchart disabled", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			enabled := func(on bool) map[string]any { return map[string]any{"cache": map[string]any{"enabled": on}} }
			r := renderWebapp(t, enabled(tt.cache))
			tc, err := BuildTempChart(r, r.Documents, TempChartOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := Render(tc, enabled(!tt.cache), RenderOptions{ReleaseName: "shop", Namespace: "prod", Revision: 3, IsUpgrade: true})
			if err != nil {
				t.Fatal(err)
			}
			var fromCache []string
			for _, d := range got.Documents {
				if strings.HasPrefix(d.Source, "webapp/charts/cache/templates/") {
					fromCache = append(fromCache, d.ID.String())
				}
			}
			if tt.cache && len(fromCache) == 0 {
				t.Errorf("rendered with cache.enabled=false, the temporary chart lost the cache subchart's documents: its condition applied again")
			}
			if !tt.cache && len(fromCache) > 0 {
				t.Errorf("the cache subchart was disabled, yet the temporary chart renders %v", fromCache)
			}
		})
	}
}

func TestTempChartFile(t *testing.T) {
	tests := []struct {
		source, want, err string
	}{
		{"webapp/templates/web.yaml", "templates/web.yaml", ""},
		{"webapp/templates/tests/t.yaml", "templates/tests/t.yaml", ""},
		{"webapp/charts/cache/templates/d.yaml", "charts/cache/templates/d.yaml", ""},
		{"webapp/charts/a/charts/b/templates/d.yaml", "charts/a/charts/b/templates/d.yaml", ""},
		{"webapp/charts/a/templates/charts/b/d.yaml", "charts/a/templates/charts/b/d.yaml", ""},
		{"webapp/templates/_underscore.yaml", "templates/u_underscore.yaml", ""},
		{"webapp/charts/a/templates/_x.yaml", "charts/a/templates/u_x.yaml", ""},
		{"webapp/templates/config.txt", "templates/config.txt", ""},
		// A post-renderer's own source goes under the top templates/.
		{"webapp/generated.yaml", "templates/generated.yaml", ""},
		{"webapp/charts/a/x.yaml", "templates/charts/a/x.yaml", ""},
		{"other/templates/web.yaml", "", "outside chart"},
		{"webapp/templates/../../etc/passwd", "", "safe path"},
		{"webapp/charts/a/templates/../../../../x.yaml", "", "safe path"},
		{"webapp/../x.yaml", "", "safe path"},
	}
	for _, tt := range tests {
		got, err := tempChartFile("webapp", tt.source)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("tempChartFile(%q) = %q, %v; want error %q", tt.source, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("tempChartFile(%q) = %q, %v; want %q", tt.source, got, err, tt.want)
		}
	}
}

func TestFlattenCRDs(t *testing.T) {
	for _, tt := range []struct{ source, want string }{
		{"webapp/crds/c.yaml", "crds/c.yaml"},
		{"webapp/charts/cache/crds/c.yaml", "crds/charts/cache/c.yaml"},
	} {
		if got, err := flatten("webapp", tt.source, "crds"); err != nil || got != tt.want {
			t.Errorf("flatten(%q) = %q, %v; want %q", tt.source, got, err, tt.want)
		}
	}
	if _, err := flatten("webapp", "webapp/crds/../../x.yaml", "crds"); err == nil {
		t.Error("a CRD path out of the chart was accepted")
	}
}

func TestLoadSources(t *testing.T) {
	pkgDir := t.TempDir()
	ch, err := loader.Load(webapp)
	if err != nil {
		t.Fatal(err)
	}
	tgz, err := chartutil.Save(ch, pkgDir)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		ref       string
		kind      SourceKind
		name      string
		wantKinds []string
		wantText  string
	}{
		{webapp, SourceChart, "webapp", nil, "kind: DaemonSet"},
		{tgz, SourceChart, "webapp", nil, "kind: DaemonSet"},
		{"../fixtures/manifests/plain", SourceManifests, "plain", []string{"ConfigMap", "Service", "Deployment"}, `motd: "Hello {{ .User }}"`},
		{"../fixtures/kustomize/overlay", SourceKustomize, "overlay", []string{"ConfigMap", "Deployment"}, "name: staging-api"},
	}
	for _, tt := range tests {
		t.Run(string(tt.kind)+" "+filepath.Base(tt.ref), func(t *testing.T) {
			ch, kind, err := Load(tt.ref, LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if kind != tt.kind || ch.Name() != tt.name {
				t.Fatalf("Load(%s) = %s chart %s, want %s chart %s", tt.ref, kind, ch.Name(), tt.kind, tt.name)
			}
			r, err := Render(ch, nil, RenderOptions{ReleaseName: "r", Namespace: "ns"})
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			var all strings.Builder
			for _, d := range r.Documents {
				kinds = append(kinds, d.ID.Kind)
				all.WriteString(d.Content + "\n")
			}
			if tt.wantKinds != nil {
				if diff := cmp.Diff(tt.wantKinds, kinds); diff != "" {
					t.Errorf("kinds in install order (-want +got):\n%s", diff)
				}
			}
			if !strings.Contains(all.String(), tt.wantText) {
				t.Errorf("rendered output lacks %q:\n%s", tt.wantText, all.String())
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	empty := t.TempDir()
	tests := []struct{ ref, want string }{
		{empty, "neither a chart (no Chart.yaml), a kustomization nor a folder of .yaml manifests"},
		{"../fixtures/does-not-exist", "no such chart directory or archive"},
		{"./missing.tgz", "no such chart directory or archive"},
		// A URL whose download fails says why, not "no such archive".
		{"https://127.0.0.1:1/charts/webapp-1.4.2.tgz", "connection refused"},
	}
	for _, tt := range tests {
		_, _, err := Load(tt.ref, LoadOptions{})
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.ref) {
			t.Errorf("Load(%s) error = %v, want %q and the reference", tt.ref, err, tt.want)
		}
	}
}

func TestDefaultKubeVersionFollowsGoMod(t *testing.T) {
	gomod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	minor := strings.TrimSuffix(strings.TrimPrefix(defaultKubeVersion, "v1."), ".0")
	if !strings.Contains(string(gomod), "k8s.io/client-go v0."+minor+".") {
		t.Errorf("defaultKubeVersion %s does not match the k8s.io/client-go version in go.mod", defaultKubeVersion)
	}
}

// TestRenderTempChartMatchesHelm: RenderTempChart, which `template` and
// apply use instead of rendering the temporary chart, gives the documents,
// sources, order and notes that Helm's engine and our sort give when the
// chart is written, loaded and rendered for real.
func TestRenderTempChartMatchesHelm(t *testing.T) {
	bench := filepath.Join(t.TempDir(), "bench")
	if err := benchchart.Write(bench, 30); err != nil {
		t.Fatal(err)
	}
	crafted := filepath.Join(t.TempDir(), "c")
	testfs.Write(t, crafted, map[string]string{
		"Chart.yaml":                        "apiVersion: v2\nname: c\nversion: 0.1.0\ndependencies:\n- name: sub\n  version: 0.1.0\n",
		"templates/NOTES.txt":               "notes for {{ .Release.Name }}",
		"templates/b.yaml":                  "apiVersion: v1\nkind: Service\nmetadata:\n  name: s1\n---\napiVersion: x/v1\nkind: Zeta\nmetadata:\n  name: z\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm2\n",
		"templates/a.yaml":                  "apiVersion: x/v1\nkind: Alpha\nmetadata:\n  name: a\n---\napiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\n  annotations:\n    helm.sh/hook: pre-install,post-upgrade\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm1\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n",
		"templates/_helpers.tpl":            "{{ define \"c.name\" }}c{{ end }}",
		"templates/off.yaml":                "# switched off by a value\n{{- if false }}\napiVersion: v1\n{{- end }}\n",
		"templates/partly.yaml":             "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm3\n---\n# the second one is off\n",
		"templates/config.txt":              "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ include \"c.name\" . }}-txt\n",
		"templates/config.txt-more.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: more\n",
		"templates/hooks.yaml":              "apiVersion: v1\nkind: Pod\nmetadata:\n  name: t\n  annotations:\n    helm.sh/hook: Test-Success\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: unknown-hook\n  annotations:\n    helm.sh/hook: at-lunch\n",
		"charts/sub/Chart.yaml":             "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
		"charts/sub/templates/deploy.yaml":  "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: sub\n",
		"charts/sub/templates/_partial.tpl": "{{ define \"sub.x\" }}x{{ end }}",
		"charts/sub/templates/zz.yaml":      "apiVersion: v1\nkind: Service\nmetadata:\n  name: sub\n",
	})
	for _, dir := range []string{webapp, "../fixtures/charts/api", "../fixtures/charts/whitespace", bench, crafted} {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			ch, err := loader.Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			opts := RenderOptions{ReleaseName: "r", Namespace: "ns", Revision: 2, IsUpgrade: true}
			r, err := Render(ch, nil, opts)
			if err != nil {
				t.Fatal(err)
			}
			injected := pretendInjected(r, "\n# injected {{ .Values }} }}{{")
			tc, loaded, want := buildWriteLoadRender(t, r, injected, TempChartOptions{Source: dir}, opts)
			got, err := RenderTempChart(tc, r, injected)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want.Documents, got.Documents); diff != "" {
				t.Errorf("documents differ from a render of the temporary chart (-rendered +computed):\n%s", diff)
			}
			if want.Notes != got.Notes {
				t.Errorf("notes = %q, a render gives %q", got.Notes, want.Notes)
			}
			// `template --include-crds` prints the chart in memory's CRDs;
			// apply installs the loaded chart's, in its order.
			crdNames := func(ch *chart.Chart) (names []string) {
				for _, c := range ch.CRDObjects() {
					names = append(names, c.Filename)
				}
				return names
			}
			if diff := cmp.Diff(crdNames(loaded), crdNames(got.Chart)); diff != "" {
				t.Errorf("CRDs differ from the loaded chart's (-loaded +in memory):\n%s", diff)
			}
		})
	}
}

// pretendInjected is r's documents as if an injector had appended tail to
// each (with template delimiters, which the temporary chart must escape).
func pretendInjected(r *Rendered, tail string) []manifest.Document {
	injected := make([]manifest.Document, len(r.Documents))
	for i, d := range r.Documents {
		d.Content += tail
		injected[i] = d
	}
	return injected
}

// buildWriteLoadRender does what apply does with injected documents: build
// the temporary chart, write it, load it back; and renders the loaded chart
// for real.
func buildWriteLoadRender(t *testing.T, r *Rendered, injected []manifest.Document, to TempChartOptions, ro RenderOptions) (*chart.Chart, *chart.Chart, *Rendered) {
	t.Helper()
	tc, err := BuildTempChart(r, injected, to)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := WriteChart(tc, dir); err != nil {
		t.Fatal(err)
	}
	loaded, err := LoadWritten(dir)
	if err != nil {
		t.Fatal(err)
	}
	rendered, err := Render(loaded, nil, ro)
	if err != nil {
		t.Fatal(err)
	}
	return tc, loaded, rendered
}

// TestVerifyRefusesFolders: --verify on a chart folder, a kustomization or
// a folder of manifests is refused, as helm refuses it, instead of being
// ignored; on a packaged chart without a .prov file it fails verification.
func TestVerifyRefusesFolders(t *testing.T) {
	ch, err := loader.Load(webapp)
	if err != nil {
		t.Fatal(err)
	}
	tgz, err := chartutil.Save(ch, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	verify := LoadOptions{PathOptions: action.ChartPathOptions{Verify: true, Keyring: filepath.Join(t.TempDir(), "pubring.gpg")}}
	for _, ref := range []string{webapp, "../fixtures/manifests/plain", "../fixtures/kustomize/overlay"} {
		_, _, err := Load(ref, verify)
		if err == nil || !strings.Contains(err.Error(), "chart "+ref+": --verify: unpacked charts cannot be verified") {
			t.Errorf("Load(%s) with --verify: %v", ref, err)
		}
	}
	if _, _, err := Load(tgz, verify); err == nil || !strings.Contains(err.Error(), ".prov") {
		t.Errorf("Load(%s) with --verify and no .prov file: %v", tgz, err)
	}
}

// TestWriteKeptChart: --keep-chart writes into a new or empty folder,
// refuses a folder it did not write (leaving it as it was), and replaces a
// folder it wrote before whole: no stale file or old file mode survives,
// and helm does not load the marker as part of the chart.
func TestWriteKeptChart(t *testing.T) {
	r := renderWebapp(t, nil)
	tc, err := BuildTempChart(r, r.Documents, TempChartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	write := func(p, data string, mode os.FileMode) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
	}

	// A first run of a chart with one more template.
	withStale := *tc
	withStale.Templates = append(slices.Clone(tc.Templates), &common.File{Name: "templates/stale.yaml", Data: []byte("kind: Stale")})
	kept := filepath.Join(t.TempDir(), "new")
	if err := WriteKeptChart(&withStale, kept); err != nil {
		t.Fatalf("a new folder: %v", err)
	}
	// An empty folder another user could write to is replaced, so the
	// chart is private whatever its mode was.
	empty := t.TempDir()
	if err := os.Chmod(empty, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := WriteKeptChart(tc, empty); err != nil {
		t.Errorf("an empty folder: %v", err)
	}
	if fi, err := os.Stat(empty); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the kept chart in a 0777 folder: %v %v", fi.Mode(), err)
	}

	refused := func(what, dir, want string) {
		t.Helper()
		before, _ := filepath.Glob(filepath.Join(dir, "*"))
		err := WriteKeptChart(tc, dir)
		if err == nil || !strings.Contains(err.Error(), "--keep-chart "+dir+": "+want) {
			t.Errorf("%s: %v", what, err)
		}
		if after, _ := filepath.Glob(filepath.Join(dir, "*")); !slices.Equal(before, after) {
			t.Errorf("%s: the refused folder was changed: %v -> %v", what, before, after)
		}
	}
	foreign := t.TempDir()
	write(filepath.Join(foreign, "notes.txt"), "mine", 0o644)
	refused("a folder of someone else's", foreign, "the folder is not empty and was not written by --keep-chart")
	// A planted marker does not make someone else's files go away.
	write(filepath.Join(foreign, ".helm-inject-kept-chart"), keptChartHeader+"Chart.yaml\n", 0o644)
	refused("a folder with a planted marker", foreign, "the folder holds notes.txt, which --keep-chart did not write")
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(foreign, link); err != nil {
		t.Fatal(err)
	}
	refused("a link", link, "it is a symbolic link")

	// A second run over the kept folder: the first run's extra template
	// and a widened mode from in between are gone.
	stale := filepath.Join(kept, "templates", "stale.yaml")
	if _, err := os.Stat(stale); err != nil {
		t.Fatalf("the first run did not write its extra template: %v", err)
	}
	if err := os.Chmod(filepath.Join(kept, "Chart.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteKeptChart(tc, kept); err != nil {
		t.Fatalf("the folder written before: %v", err)
	}
	if _, err := os.Stat(stale); err == nil {
		t.Error("a stale template survived the second run")
	}
	if fi, err := os.Stat(filepath.Join(kept, "Chart.yaml")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("Chart.yaml after the second run: %v %v", fi.Mode(), err)
	}
	// A file the user put into the kept folder is not removed with it.
	write(filepath.Join(kept, "templates", "mine.yaml"), "kind: Mine", 0o644)
	refused("a kept folder with a file of the user's", kept, "the folder holds templates/mine.yaml, which --keep-chart did not write")
	if err := os.Remove(filepath.Join(kept, "templates", "mine.yaml")); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(kept), ".helm-inject-keep-*")); len(left) != 0 {
		t.Errorf("staging folders left behind: %v", left)
	}
	loaded, err := loader.Load(kept)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range append(loaded.Files, loaded.Templates...) {
		if strings.Contains(f.Name, "kept-chart") {
			t.Errorf("helm loads %s as part of the kept chart", f.Name)
		}
	}
}

// TestRenderSubNotes: the top chart's NOTES.txt is the notes; with
// --render-subchart-notes each subchart's follows it, in path order.
func TestRenderSubNotes(t *testing.T) {
	sub := func(name, notes string) *chart.Chart {
		return &chart.Chart{Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: name, Version: "0.1.0"},
			Templates: []*common.File{{Name: "templates/NOTES.txt", Data: []byte(notes)}}}
	}
	top := sub("top", "top notes")
	top.AddDependency(sub("b", "b notes"), sub("a", "a notes"))
	for _, tt := range []struct {
		subNotes bool
		want     string
	}{{false, "top notes"}, {true, "top notes\na notes\nb notes"}} {
		r, err := Render(top, nil, RenderOptions{ReleaseName: "r", Namespace: "ns", SubNotes: tt.subNotes})
		if err != nil {
			t.Fatal(err)
		}
		if r.Notes != tt.want {
			t.Errorf("SubNotes %v: notes %q, want %q", tt.subNotes, r.Notes, tt.want)
		}
	}
}

// TestTempChartRecordsTheRenderedDigest: the digest of what was rendered
// is an annotation of the temporary chart when given, and absent when not.
func TestTempChartRecordsTheRenderedDigest(t *testing.T) {
	r := renderWebapp(t, nil)
	ch, err := BuildTempChart(r, r.Documents, TempChartOptions{Source: webapp, RenderedDigest: "sha256:abc"})
	if err != nil {
		t.Fatal(err)
	}
	if got := ch.Metadata.Annotations[AnnotationRendered]; got != "sha256:abc" {
		t.Errorf("annotation %s = %q", AnnotationRendered, got)
	}
	ch, err = BuildTempChart(r, r.Documents, TempChartOptions{Source: webapp})
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := ch.Metadata.Annotations[AnnotationRendered]; ok {
		t.Errorf("annotation %s = %q without a digest", AnnotationRendered, got)
	}
}
