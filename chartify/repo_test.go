package chartify

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"

	"github.com/helm-inject/helm-inject/internal/repofs"
	"github.com/helm-inject/helm-inject/internal/testfs"
)

// helmTestdata is the folder of Helm's own loader test charts in the
// module cache (charts nobody here wrote: .helmignore rules, vendored
// subcharts as folders and archives, a byte order mark, symbolic links).
func helmTestdata(t *testing.T, pkg string) string {
	t.Helper()
	dir := filepath.Join(helmModuleDir(t), filepath.FromSlash(pkg), "testdata")
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("Helm's test charts: %v", err)
	}
	return dir
}

// flatChart is what a loaded chart holds, as comparable text: every
// field the loader fills, subcharts included.
func flatChart(ch *chart.Chart) []string {
	var out []string
	var walk func(prefix string, c *chart.Chart)
	walk = func(prefix string, c *chart.Chart) {
		js := func(v any) string {
			b, err := json.Marshal(v)
			if err != nil {
				return err.Error()
			}
			return string(b)
		}
		out = append(out, prefix+"metadata "+js(c.Metadata), prefix+"values "+js(c.Values), prefix+"schema "+string(c.Schema), prefix+"lock "+js(c.Lock))
		for _, f := range c.Templates {
			out = append(out, prefix+"template "+f.Name+"\n"+string(f.Data))
		}
		for _, f := range c.Files {
			out = append(out, prefix+"file "+f.Name+"\n"+string(f.Data))
		}
		for _, f := range c.Raw {
			out = append(out, prefix+"raw "+f.Name+"\n"+string(f.Data))
		}
		deps := c.Dependencies()
		slices.SortFunc(deps, func(a, b *chart.Chart) int { return strings.Compare(a.Name(), b.Name()) })
		for _, d := range deps {
			walk(prefix+d.Name()+"/", d)
		}
	}
	walk("", ch)
	slices.Sort(out)
	return out
}

// TestLoadFromRepoMatchesHelm: a chart folder read through the
// repository's root loads to exactly what Helm's directory loader makes
// of it, for Helm's own test charts and this project's.
func TestLoadFromRepoMatchesHelm(t *testing.T) {
	loaderData := helmTestdata(t, "pkg/chart/v2/loader")
	utilData := helmTestdata(t, "pkg/chart/v2/util")
	for _, dir := range []string{
		filepath.Join(loaderData, "frobnitz"),
		filepath.Join(loaderData, "frobnitz_with_bom"),
		filepath.Join(loaderData, "frobnitz_with_symlink"),
		filepath.Join(loaderData, "frobnitz_backslash"),
		filepath.Join(loaderData, "frobnitz.v1"),
		filepath.Join(loaderData, "albatross"),
		filepath.Join(utilData, "dependent-chart-helmignore"),
		filepath.Join(utilData, "three-level-dependent-chart", "umbrella"),
		filepath.Join(utilData, "subpop"),
		webapp,
		"../fixtures/charts/api",
	} {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			want, err := loader.LoadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			// The repository is the folder above the chart, as an
			// application's repository holds its chart; a link in the
			// chart may lead anywhere inside it.
			repo, err := repofs.Open(filepath.Dir(dir))
			if err != nil {
				t.Fatal(err)
			}
			defer repo.Close()
			got, err := LoadChartFromRepo(repo, filepath.Base(dir))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(flatChart(want), flatChart(got)); diff != "" {
				t.Errorf("(-helm +repo)\n%s", diff)
			}
		})
	}
}

// TestLoadFromRepoKinds: a packaged chart, a kustomization and a folder
// of plain manifests load from the repository as Load loads them from a
// local path, named after their folder and described by their repository
// path (never the server's folder); a link out of the repository fails.
func TestLoadFromRepoKinds(t *testing.T) {
	top := t.TempDir()
	repo := filepath.Join(top, "repo")
	testfs.Write(t, top, map[string]string{
		"outside/secret.yaml":                   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: secret\n",
		"repo/apps/plain/cm.yaml":               "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n",
		"repo/apps/plain/.hidden/x.yaml":        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hidden\n",
		"repo/apps/kust/kustomization.yaml":     "resources: [cm.yaml, ../../base]\nnamePrefix: k-\n",
		"repo/apps/kust/cm.yaml":                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n",
		"repo/base/kustomization.yaml":          "resources: [svc.yaml]\n",
		"repo/base/svc.yaml":                    "apiVersion: v1\nkind: Service\nmetadata:\n  name: svc\n",
		"repo/apps/leaky/kustomization.yaml":    "resources: [secret.yaml]\n",
		"repo/apps/leakyplain/placeholder.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: p\n",
		// .helmignore leaves out a link that leads out: it is not followed.
		"repo/apps/ignoring/Chart.yaml":        "apiVersion: v2\nname: ignoring\nversion: 0.1.0\ndescription: ignores a link\n",
		"repo/apps/ignoring/.helmignore":       "leak\n",
		"repo/apps/ignoring/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n",
	})
	for link, target := range map[string]string{
		"apps/leaky/secret.yaml":      filepath.Join(top, "outside", "secret.yaml"),
		"apps/leakyplain/secret.yaml": "../../../outside/secret.yaml",
		"apps/ignoring/leak":          "../../../outside",
	} {
		if err := os.Symlink(target, filepath.Join(repo, filepath.FromSlash(link))); err != nil {
			t.Fatal(err)
		}
	}
	tgz, err := os.ReadFile(filepath.Join(helmTestdata(t, "pkg/chart/v2/loader"), "frobnitz-1.2.3.tgz"))
	if err != nil {
		t.Fatal(err)
	}
	testfs.Write(t, repo, map[string]string{"charts/frobnitz-1.2.3.tgz": string(tgz)})
	r, err := repofs.Open(repo)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	names := func(ch *chart.Chart) []string {
		var out []string
		for _, f := range ch.Templates {
			out = append(out, f.Name)
		}
		return out
	}
	for _, tt := range []struct {
		dir, kind, name, description string
		templates                    []string
	}{
		{"apps/plain", "manifests", "plain", "plain manifests from apps/plain, wrapped by helm-inject", []string{"templates/cm.yaml"}},
		{"apps/kust", "kustomize", "kust", "kustomization from apps/kust, wrapped by helm-inject", []string{"templates/000-configmap-k-cm.yaml", "templates/001-service-k-svc.yaml"}},
		{"charts/frobnitz-1.2.3.tgz", "chart", "frobnitz", "This is a frobnitz.", nil},
		{"apps/ignoring", "chart", "ignoring", "ignores a link", []string{"templates/cm.yaml"}},
	} {
		ch, kind, err := LoadFromRepo(r, tt.dir, nil)
		if err != nil {
			t.Errorf("%s: %v", tt.dir, err)
			continue
		}
		got := []any{string(kind), ch.Name(), ch.Metadata.Description}
		if diff := cmp.Diff([]any{tt.kind, tt.name, tt.description}, got); diff != "" {
			t.Errorf("%s (-want +got)\n%s", tt.dir, diff)
		}
		if tt.templates != nil && !slices.Equal(names(ch), tt.templates) {
			t.Errorf("%s: templates %v, want %v", tt.dir, names(ch), tt.templates)
		}
	}
	for dir, want := range map[string]string{
		"apps/leaky":      "kustomize build apps/leaky",
		"apps/leakyplain": "reading manifests in apps/leakyplain",
	} {
		_, _, err := LoadFromRepo(r, dir, nil)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), top) {
			t.Errorf("%s: %v, want an error saying %q without the server's folders", dir, err, want)
		}
	}
}

// TestSchemaLoadsNothing: under SchemaLoadsNothing a chart's
// values.schema.json validates the values as Helm's does (a wrong value
// is refused with Helm's message, a "$ref" inside the schema works), but
// a "$ref" to a URL or a file is an error and no request is made.
func TestSchemaLoadsNothing(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		fmt.Fprint(w, `{"type": "integer"}`)
	}))
	defer srv.Close()
	schema := func(ref string) string {
		return `{"type": "object", "properties": {"replicas": {"$ref": "` + ref + `"}}, "$defs": {"count": {"type": "integer"}}}`
	}
	load := func(schemaJSON string) *chart.Chart {
		dir := t.TempDir()
		testfs.Write(t, dir, map[string]string{
			"Chart.yaml":          "apiVersion: v2\nname: web\nversion: 0.1.0\n",
			"values.schema.json":  schemaJSON,
			"templates/cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n",
			"templates/NOTES.txt": "",
		})
		ch, err := loader.LoadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		return ch
	}
	for _, tt := range []struct {
		name, ref string
		vals      map[string]any
		wantErr   string
	}{
		{"a ref inside the schema", "#/$defs/count", map[string]any{"replicas": 2}, ""},
		// Helm answers an unresolved urn: reference with a schema that
		// accepts anything; so does this validator.
		{"a urn", "urn:example:count", map[string]any{"replicas": "two"}, ""},
		{"a wrong value", "#/$defs/count", map[string]any{"replicas": "two"}, "values don't meet the specifications of the schema(s) in the following chart(s):\nweb:\n- at '/replicas': got string, want integer"},
		{"a URL", srv.URL + "/count.json", map[string]any{"replicas": 2}, "values.schema.json refers to " + srv.URL + "/count.json: the schema is read from the chart only"},
		{"a file", "file:///etc/hostname", map[string]any{"replicas": 2}, "values.schema.json refers to file:///etc/hostname"},
		{"a relative file", "count.json", map[string]any{"replicas": 2}, "values.schema.json refers to file:///count.json"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Render(load(schema(tt.ref)), tt.vals, RenderOptions{ReleaseName: "web", SchemaLoadsNothing: true})
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
	if n := requests.Load(); n != 0 {
		t.Errorf("the schema's URL was fetched %d times", n)
	}
	// Skipped validation loads nothing either.
	if _, err := Render(load(schema(srv.URL+"/count.json")), nil, RenderOptions{ReleaseName: "web", SchemaLoadsNothing: true, SkipSchemaValidation: true}); err != nil {
		t.Errorf("skipped validation: %v", err)
	}
	// Helm's own validation, without the option, does fetch: the test
	// server is a real one.
	if _, err := Render(load(schema(srv.URL+"/count.json")), map[string]any{"replicas": 2}, RenderOptions{ReleaseName: "web"}); err != nil || requests.Load() == 0 {
		t.Errorf("Helm's validation: %v, %d requests; want the URL fetched", err, requests.Load())
	}
}

// helmModuleDir is the module cache's copy of the Helm SDK this module
// builds with.
func helmModuleDir(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "helm.sh/helm/v4").Output()
	if err != nil {
		t.Fatalf("go list -m helm.sh/helm/v4: %v", err)
	}
	return strings.TrimSpace(string(out))
}
