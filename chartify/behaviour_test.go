package chartify

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"

	"github.com/helm-inject/helm-inject/internal/testfs"
)

// loadFiles writes a chart folder and loads it as helm does.
func loadFiles(t *testing.T, files map[string]string) *chart.Chart {
	t.Helper()
	dir := t.TempDir()
	testfs.Write(t, dir, files)
	ch, err := loader.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

const cmTemplate = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n"

// TestTempChartStoresTheChartsOwnValues: the release stores the chart's
// values.yaml as written, even when rendering changed the chart's values
// in memory (a subchart's import-values merge into the parent's). A user
// would otherwise see `helm get values --all` and the next upgrade's
// defaults hold values the chart never declared.
func TestTempChartStoresTheChartsOwnValues(t *testing.T) {
	ch := loadFiles(t, map[string]string{
		"Chart.yaml":             "apiVersion: v2\nname: top\nversion: 0.1.0\ndependencies:\n  - name: sub\n    version: 0.1.0\n    import-values: [data]\n",
		"values.yaml":            "own: 1\n",
		"templates/cm.yaml":      cmTemplate,
		"charts/sub/Chart.yaml":  "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
		"charts/sub/values.yaml": "exports:\n  data:\n    imported: from-sub\n",
	})
	r, err := Render(ch, nil, RenderOptions{ReleaseName: "r", Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	tc, err := BuildTempChart(r, r.Documents, TempChartOptions{Source: "./top"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"own": float64(1)}, map[string]any(tc.Values)); diff != "" {
		t.Errorf("the temporary chart's values (-values.yaml +stored):\n%s", diff)
	}
}

// TestTempChartRecordsOverTheChartsAnnotations: a chart that already
// carries helm-inject's annotations (one kept with --keep-chart and
// applied again) gets this run's source, rendered digest and injector
// records; its other annotations stay. A user would otherwise see status,
// diff and --reconcile with-chart read the old run's records.
func TestTempChartRecordsOverTheChartsAnnotations(t *testing.T) {
	ch := loadFiles(t, map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: kept\nversion: 0.1.0\nannotations:\n  team: payments\n  helm-inject.io/source: ./old\n  helm-inject.io/rendered-digest: sha256:old\n  helm-inject.io/injectors: '[{\"name\":\"old\"}]'\n",
		"templates/cm.yaml": cmTemplate,
	})
	r, err := Render(ch, nil, RenderOptions{ReleaseName: "r", Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	tc, err := BuildTempChart(r, r.Documents, TempChartOptions{Source: "./kept", RenderedDigest: "sha256:new",
		Annotations: map[string]string{"helm-inject.io/injectors": `[{"name":"new"}]`}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"team":                           "payments",
		"helm-inject.io/source":          "./kept",
		"helm-inject.io/rendered-digest": "sha256:new",
		"helm-inject.io/injectors":       `[{"name":"new"}]`,
	}
	if diff := cmp.Diff(want, tc.Metadata.Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
}

// TestTempChartInstallsEachCRDOnce: a CRD that the chart and a subchart
// both define is in the temporary chart once, the first definition (the
// top chart's); a subchart file left with other CRDs keeps only those. A
// user would otherwise see helm install fail on a CRD that already
// exists, or the subchart's definition of it win.
func TestTempChartInstallsEachCRDOnce(t *testing.T) {
	crd := func(name, marker string) string {
		return "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: " + name + "\n  labels: {from: " + marker + "}\n"
	}
	ch := loadFiles(t, map[string]string{
		"Chart.yaml":                 "apiVersion: v2\nname: top\nversion: 0.1.0\ndependencies:\n  - name: sub\n    version: 0.1.0\n",
		"crds/widgets.yaml":          crd("widgets.example.com", "top"),
		"templates/cm.yaml":          cmTemplate,
		"charts/sub/Chart.yaml":      "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
		"charts/sub/crds/same.yaml":  crd("widgets.example.com", "sub"),
		"charts/sub/crds/mixed.yaml": crd("widgets.example.com", "sub") + "---\n" + crd("gadgets.example.com", "sub"),
	})
	r, err := Render(ch, nil, RenderOptions{ReleaseName: "r", Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	tc, err := BuildTempChart(r, r.Documents, TempChartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range tc.Files {
		got[f.Name] = string(f.Data)
	}
	want := map[string]string{
		"crds/widgets.yaml":          crd("widgets.example.com", "top"),
		"crds/charts/sub/mixed.yaml": crd("gadgets.example.com", "sub"),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CRD files of the temporary chart (-want +got):\n%s", diff)
	}
}

// TestTempChartKeepsNotesVerbatim: notes that print template delimiters
// (a NOTES.txt showing a templating example) come back byte for byte when
// the release's chart is rendered. A user would otherwise see the install
// fail on them or print other notes than `template` did.
func TestTempChartKeepsNotesVerbatim(t *testing.T) {
	ch := loadFiles(t, map[string]string{
		"Chart.yaml":          "apiVersion: v2\nname: notes\nversion: 0.1.0\n",
		"templates/cm.yaml":   cmTemplate,
		"templates/NOTES.txt": `Set it with {{ "{{ .Values.greeting }}" }} in your own chart.`,
	})
	r, err := Render(ch, nil, RenderOptions{ReleaseName: "r", Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	const want = "Set it with {{ .Values.greeting }} in your own chart."
	if r.Notes != want {
		t.Fatalf("the source chart's notes %q, want %q", r.Notes, want)
	}
	_, _, again := buildWriteLoadRender(t, r, r.Documents, TempChartOptions{}, RenderOptions{ReleaseName: "r", Namespace: "ns"})
	if again.Notes != want {
		t.Errorf("the temporary chart's notes %q, want %q", again.Notes, want)
	}
}

// TestSchemaLoadsNothingInSubcharts: under SchemaLoadsNothing (Argo CD's
// generate) an enabled subchart's values.schema.json is checked against
// its values, as Helm checks it; a disabled subchart's is not. A user
// would otherwise see Argo CD accept values helm refuses.
func TestSchemaLoadsNothingInSubcharts(t *testing.T) {
	files := map[string]string{
		"Chart.yaml":                    "apiVersion: v2\nname: top\nversion: 0.1.0\ndependencies:\n  - name: sub\n    version: 0.1.0\n    condition: sub.enabled\n",
		"values.yaml":                   "sub:\n  enabled: true\n",
		"templates/cm.yaml":             cmTemplate,
		"charts/sub/Chart.yaml":         "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
		"charts/sub/values.schema.json": `{"type": "object", "properties": {"replicas": {"type": "integer"}}}`,
	}
	for _, tt := range []struct {
		name    string
		vals    map[string]any
		wantErr string
	}{
		{"a valid value", map[string]any{"sub": map[string]any{"replicas": 2}}, ""},
		{"a wrong value", map[string]any{"sub": map[string]any{"replicas": "two"}}, "values don't meet the specifications of the schema(s) in the following chart(s):\nsub:\n- at '/replicas': got string, want integer"},
		{"a wrong value in a disabled subchart", map[string]any{"sub": map[string]any{"enabled": false, "replicas": "two"}}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Render(loadFiles(t, files), tt.vals, RenderOptions{ReleaseName: "r", Namespace: "ns", SchemaLoadsNothing: true})
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// TestRenderRevisionDefaultsToOne: a render without a revision (a new
// release, `template`) sees .Release.Revision 1, as helm install does, and
// one with a revision sees it. A user would otherwise see a chart that
// names things after the revision render differently from helm.
func TestRenderRevisionDefaultsToOne(t *testing.T) {
	ch := func() *chart.Chart {
		return loadFiles(t, map[string]string{
			"Chart.yaml":        "apiVersion: v2\nname: rev\nversion: 0.1.0\n",
			"templates/cm.yaml": cmTemplate + "data:\n  revision: \"{{ .Release.Revision }}\"\n  install: \"{{ .Release.IsInstall }}\"\n",
		})
	}
	for _, tt := range []struct {
		opts RenderOptions
		want string
	}{
		{RenderOptions{ReleaseName: "r", Namespace: "ns"}, "revision: \"1\"\n  install: \"true\""},
		{RenderOptions{ReleaseName: "r", Namespace: "ns", Revision: 4, IsUpgrade: true}, "revision: \"4\"\n  install: \"false\""},
	} {
		r, err := Render(ch(), nil, tt.opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Documents) != 1 || !strings.Contains(r.Documents[0].Content, tt.want) {
			t.Errorf("revision %d: rendered %v, want it to hold %q", tt.opts.Revision, r.Documents, tt.want)
		}
	}
}

// TestWithChartCRDs: a first install renders with the API versions of
// the chart's crds/ (subcharts' included), as Helm's install, which
// creates them first, does: group/version and group/version/Kind of each
// served version; a version not served, a file that is no CRD and the
// caller's capabilities stay as they were.
func TestWithChartCRDs(t *testing.T) {
	crd := func(group, kind string, versions string) string {
		return "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: x\nspec:\n  group: " + group + "\n  names:\n    kind: " + kind + "\n  versions:\n" + versions
	}
	ch := loadFiles(t, map[string]string{
		"Chart.yaml":                 "apiVersion: v2\nname: top\nversion: 0.1.0\ndependencies:\n  - name: sub\n    version: 0.1.0\n",
		"crds/widgets.yaml":          crd("example.com", "Widget", "  - name: v1\n    served: true\n  - name: v2alpha1\n    served: false\n"),
		"crds/notes.txt":             "not yaml: [",
		"templates/cm.yaml":          cmTemplate,
		"charts/sub/Chart.yaml":      "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
		"charts/sub/crds/mixed.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n---\n" + crd("other.io", "Gadget", "  - name: v1beta1\n    served: true\n"),
	})
	caps := OfflineCapabilities("", []string{"example.com/v1"})
	before := slices.Clone(caps.APIVersions)
	got := WithChartCRDs(caps, ch)
	for _, want := range []string{"example.com/v1", "example.com/v1/Widget", "other.io/v1beta1", "other.io/v1beta1/Gadget", "apps/v1"} {
		if !got.APIVersions.Has(want) {
			t.Errorf("the capabilities lack %s", want)
		}
	}
	for _, lacks := range []string{"example.com/v2alpha1", "example.com/v2alpha1/Widget", "v1/ConfigMap/x"} {
		if got.APIVersions.Has(lacks) {
			t.Errorf("the capabilities have %s", lacks)
		}
	}
	if n := len(got.APIVersions) - len(before); n != 3 {
		t.Errorf("%d versions added, want 3 (example.com/v1 was there)", n)
	}
	if !slices.Equal(caps.APIVersions, before) {
		t.Errorf("the caller's capabilities changed")
	}
	if plain := loadFiles(t, map[string]string{"Chart.yaml": "apiVersion: v2\nname: p\nversion: 0.1.0\n", "templates/cm.yaml": cmTemplate}); WithChartCRDs(caps, plain) != caps {
		t.Errorf("a chart without crds/ changed the capabilities")
	}
}
