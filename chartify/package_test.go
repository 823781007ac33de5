package chartify

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
)

// packageWebapp renders the webapp fixture for shop in prod, builds its
// temporary chart with the given injector records, and packages it.
func packageWebapp(t *testing.T, records string, o PackageOptions) (*chart.Chart, *Rendered) {
	t.Helper()
	r := renderWebapp(t, o.Values)
	tc, err := BuildTempChart(r, r.Documents, TempChartOptions{Source: webapp, Annotations: map[string]string{"helm-inject.io/injectors": records}})
	if err != nil {
		t.Fatal(err)
	}
	if o.Release == "" {
		o.Release, o.Namespace = "shop", "prod"
	}
	src, _, err := Load(webapp, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o.Source = src
	pc, err := PackageChart(tc, o)
	if err != nil {
		t.Fatal(err)
	}
	return pc, r
}

func archiveOf(t *testing.T, ch *chart.Chart, when time.Time) []byte {
	t.Helper()
	p, err := SaveArchive(ch, t.TempDir(), when)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPackageIsReproducible: the same inputs give the same bytes, dated
// the epoch (or SOURCE_DATE_EPOCH's time); another injector version gives
// another version and other bytes.
func TestPackageIsReproducible(t *testing.T) {
	v1 := `[{"name":"sidecar","version":"1.0.0","digest":"sha256:aa"}]`
	a, _ := packageWebapp(t, v1, PackageOptions{})
	b, _ := packageWebapp(t, v1, PackageOptions{})
	first, second := archiveOf(t, a, time.Time{}), archiveOf(t, b, time.Time{})
	if !bytes.Equal(first, second) {
		t.Fatal("two packages of the same inputs differ")
	}
	loaded, err := loader.LoadArchive(bytes.NewReader(first))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range loaded.Raw {
		if !f.ModTime.Equal(time.Unix(0, 0)) {
			t.Errorf("%s is dated %s, want the Unix epoch", f.Name, f.ModTime)
		}
	}
	dated := archiveOf(t, a, time.Unix(1700000000, 0))
	loaded, err = loader.LoadArchive(bytes.NewReader(dated))
	if err != nil {
		t.Fatal(err)
	}
	if got := loaded.Raw[0].ModTime; !got.Equal(time.Unix(1700000000, 0)) {
		t.Errorf("with a time, %s is dated %s", loaded.Raw[0].Name, got)
	}

	c, _ := packageWebapp(t, `[{"name":"sidecar","version":"1.1.0","digest":"sha256:bb"}]`, PackageOptions{})
	if c.Metadata.Version == a.Metadata.Version {
		t.Errorf("another injector version kept version %s", a.Metadata.Version)
	}
	if bytes.Equal(archiveOf(t, c, time.Time{}), first) {
		t.Error("another injector version gave the same archive")
	}
	if got := c.Metadata.Annotations["helm-inject.io/injectors"]; !strings.Contains(got, `"version":"1.1.0"`) {
		t.Errorf("injector records = %s", got)
	}
}

// TestPackageRecordsItsMaking: Chart.yaml says what the chart was made of.
func TestPackageRecordsItsMaking(t *testing.T) {
	pc, _ := packageWebapp(t, `[{"name":"sidecar","version":"1.0.0"}]`, PackageOptions{Values: map[string]any{"greeting": "hi"}, Version: "7.0.0"})
	src, _, err := Load(webapp, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ann := pc.Metadata.Annotations
	for key, want := range map[string]string{
		AnnotationRelease:          "shop",
		AnnotationNamespace:        "prod",
		AnnotationSourceChart:      "webapp 1.4.2 " + FilesDigest(src),
		AnnotationSource:           webapp,
		"helm-inject.io/injectors": `[{"name":"sidecar","version":"1.0.0"}]`,
	} {
		if ann[key] != want {
			t.Errorf("annotation %s = %q, want %q", key, ann[key], want)
		}
	}
	other, err := ValuesDigest(map[string]any{"greeting": "hello"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ann[AnnotationValues], "sha256:") || ann[AnnotationValues] == other {
		t.Errorf("values digest %q (another value's is %q)", ann[AnnotationValues], other)
	}
	if pc.Metadata.Version != "7.0.0" || pc.Metadata.AppVersion != "2.7.0" || pc.Name() != "webapp" {
		t.Errorf("metadata %s %s app %s", pc.Name(), pc.Metadata.Version, pc.Metadata.AppVersion)
	}
	// The CRDs travel with it, the defaults do not.
	var names []string
	for _, f := range pc.Files {
		names = append(names, f.Name)
	}
	if !slices.Contains(names, "crds/widgets.yaml") || !slices.Contains(names, "crds/charts/cache/caches.yaml") {
		t.Errorf("files %v lack the CRDs", names)
	}
	if len(pc.Raw) != 0 || pc.Values != nil {
		t.Errorf("packaged chart keeps values.yaml: raw %d, values %v", len(pc.Raw), pc.Values)
	}
}

// TestPackagedChartInstallsOnlyAsItsRelease renders the packaged chart as
// helm would: as its release it renders the injected documents and no
// more; another name or namespace, or any value, is refused with a
// message that says why.
func TestPackagedChartInstallsOnlyAsItsRelease(t *testing.T) {
	pc, r := packageWebapp(t, `[]`, PackageOptions{})
	got, err := Render(pc, nil, RenderOptions{ReleaseName: "shop", Namespace: "prod", Revision: 3, IsUpgrade: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Documents) != len(r.Documents) {
		t.Errorf("the packaged chart renders %d documents, the release %d", len(got.Documents), len(r.Documents))
	}
	for i := range min(len(got.Documents), len(r.Documents)) {
		if got.Documents[i].Content != r.Documents[i].Content {
			t.Errorf("document %d:\n%s\nwant\n%s", i, got.Documents[i].Content, r.Documents[i].Content)
		}
	}
	for _, tt := range []struct {
		name, release, namespace string
		vals                     map[string]any
		want                     []string
	}{
		{"another release", "web", "prod", nil, []string{"rendered by helm-inject for release shop in namespace prod", "this is release web in namespace prod"}},
		{"another namespace", "shop", "dev", nil, []string{"install it as release shop in namespace prod", "this is release shop in namespace dev"}},
		{"a value", "shop", "prod", map[string]any{"greeting": "hi"}, []string{"invalid propertyName 'greeting'", "values baked in", "run helm-inject package again"}},
		{"an empty map", "shop", "prod", map[string]any{"image": map[string]any{}}, []string{"invalid propertyName 'image'"}},
		{"a subchart's value", "shop", "prod", map[string]any{"cache": map[string]any{"replicas": 2}}, []string{"invalid propertyName 'replicas'", "values baked in"}},
		{"a global", "shop", "prod", map[string]any{"global": map[string]any{"x": 1}}, []string{"values baked in"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Render(pc, tt.vals, RenderOptions{ReleaseName: tt.release, Namespace: tt.namespace, Revision: 1})
			if err == nil {
				t.Fatal("rendered")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q: %v", w, err)
				}
			}
		})
	}
}

func TestPackageRefuses(t *testing.T) {
	r := renderWebapp(t, nil)
	src, _, err := Load(webapp, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tc, err := BuildTempChart(r, r.Documents, TempChartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o := PackageOptions{Release: "shop", Namespace: "prod", Source: src}
	for _, v := range []string{"1.0", "v1.0.0", "latest"} {
		o.Version = v
		if _, err := PackageChart(tc, o); err == nil || !strings.Contains(err.Error(), v) {
			t.Errorf("version %q: %v", v, err)
		}
	}
	o.Version = ""
	clash := *tc
	clash.Templates = append(slices.Clone(tc.Templates), &common.File{Name: GuardTemplate, Data: []byte("kind: x\n")})
	if _, err := PackageChart(&clash, o); err == nil || !strings.Contains(err.Error(), "guard template") {
		t.Errorf("a template named as the guard: %v", err)
	}
}

func TestDefaultPackageVersion(t *testing.T) {
	// sha256("abc") = ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad
	for _, tt := range []struct{ source, want string }{
		{"1.4.2", "1.4.2+inject.ba7816bf8f01"},
		{"0.1.0-rc.1", "0.1.0-rc.1+inject.ba7816bf8f01"},
		{"1.0.0+build.7", "1.0.0+build.7.inject.ba7816bf8f01"},
	} {
		if got := DefaultPackageVersion(tt.source, []byte("abc")); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.source, got, tt.want)
		}
	}
}

// TestDefaultVersionNamesTheContent: the default version's digest is the
// archive's written with the source chart's version.
func TestDefaultVersionNamesTheContent(t *testing.T) {
	pc, _ := packageWebapp(t, `[]`, PackageOptions{})
	withSource := *pc
	md := *pc.Metadata
	md.Version = "1.4.2"
	withSource.Metadata = &md
	// The schema names the version it was written for.
	withSource.Schema = valuesSchema("webapp", "1.4.2", "shop", "prod", []string{"cache"})
	sum := sha256.Sum256(archiveOf(t, &withSource, time.Time{}))
	if want := "1.4.2+inject." + hex.EncodeToString(sum[:])[:12]; pc.Metadata.Version != want {
		t.Errorf("version %s, want %s", pc.Metadata.Version, want)
	}
}

// TestFilesDigest: a chart folder and helm's archive of it have one
// digest; a byte or a name changed gives another.
func TestFilesDigest(t *testing.T) {
	dir, _, err := Load(webapp, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := chartutil.Save(dir, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	packed, err := loader.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if FilesDigest(dir) != FilesDigest(packed) {
		t.Errorf("folder %s, archive %s", FilesDigest(dir), FilesDigest(packed))
	}
	changed := func(name string, edit func(f *common.File)) string {
		c := *dir
		c.Raw = nil
		for _, f := range dir.Raw {
			g := *f
			if f.Name == name {
				edit(&g)
			}
			c.Raw = append(c.Raw, &g)
		}
		return FilesDigest(&c)
	}
	const cm = "templates/configmap.yaml"
	if changed(cm, func(f *common.File) {}) != FilesDigest(dir) {
		t.Error("a copy has another digest")
	}
	if changed(cm, func(f *common.File) { f.Data = append(slices.Clone(f.Data), ' ') }) == FilesDigest(dir) {
		t.Error("a changed byte kept the digest")
	}
	if changed(cm, func(f *common.File) { f.Name = "templates/configmap2.yaml" }) == FilesDigest(dir) {
		t.Error("a renamed file kept the digest")
	}
	for _, name := range []string{"Chart.yaml", "charts/cache/Chart.yaml"} {
		bumped := changed(name, func(f *common.File) {
			f.Data = []byte(strings.Replace(string(f.Data), "version: ", "version: 9", 1))
		})
		if bumped == FilesDigest(dir) {
			t.Errorf("another version in %s kept the digest", name)
		}
	}
	// Two files whose names and contents run together alike still differ.
	a := &chart.Chart{Raw: []*common.File{{Name: "a", Data: []byte("bc")}}}
	b := &chart.Chart{Raw: []*common.File{{Name: "ab", Data: []byte("c")}}}
	if FilesDigest(a) == FilesDigest(b) {
		t.Error("a/bc and ab/c have one digest")
	}
}

func TestValuesDigest(t *testing.T) {
	digest := func(v map[string]any) string {
		d, err := ValuesDigest(v)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if digest(nil) != digest(map[string]any{}) {
		t.Error("no values and empty values differ")
	}
	x := digest(map[string]any{"a": 1, "b": map[string]any{"c": "d"}})
	if x != digest(map[string]any{"b": map[string]any{"c": "d"}, "a": 1}) {
		t.Error("the same values differ")
	}
	if x == digest(map[string]any{"a": 1, "b": map[string]any{"c": "e"}}) {
		t.Error("a nested value changed and the digest did not")
	}
}

// TestSaveArchiveLeavesNothingBehind: the archive is written whole under
// its name, and nothing else stays in the folder.
func TestSaveArchiveLeavesNothingBehind(t *testing.T) {
	pc, _ := packageWebapp(t, `[]`, PackageOptions{Version: "2.0.0"})
	dir := t.TempDir()
	p, err := SaveArchive(pc, dir, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if p != filepath.Join(dir, "webapp-2.0.0.tgz") {
		t.Errorf("written to %s", p)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("the folder holds %d entries", len(entries))
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.ModTime().Equal(time.Unix(0, 0)) || fi.Mode().Perm() != 0o644 {
		t.Errorf("archive dated %s, mode %s", fi.ModTime(), fi.Mode())
	}
}
