package argocde2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"github.com/argoproj/argo-cd/v3/reposerver/apiclient"
	reposervercache "github.com/argoproj/argo-cd/v3/reposerver/cache"
	"github.com/argoproj/argo-cd/v3/reposerver/metrics"
	"github.com/argoproj/argo-cd/v3/reposerver/repository"
	cacheutil "github.com/argoproj/argo-cd/v3/util/cache"
	"github.com/argoproj/argo-cd/v3/util/git"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helm-inject/helm-inject/internal/testenv"
)

// repoServer is Argo CD's repo-server service layer as argocd-repo-server
// runs it: the real Git client (fetching from a local repository over
// file://), an in-memory cache, and the plugin sockets of
// serveShippedPlugin. With generatePaths it streams to plugins only the
// folders an application's manifest-generate-paths name
// (reposerver.plugin.use.manifest.generate.paths).
func repoServer(t *testing.T, generatePaths bool) *repository.Service {
	t.Helper()
	// No GnuPG here: Argo CD would verify each commit's signature with a
	// script of its image (and refuse every revision without it).
	t.Setenv("ARGOCD_GPG_ENABLED", "false")
	// Argo CD's image carries hack/git-verify-wrapper.sh on PATH, which
	// the repo-server runs for every revision.
	wrapper := t.TempDir()
	script, err := os.ReadFile(filepath.Join(argoCDModule(t), "hack", "git-verify-wrapper.sh"))
	if err != nil {
		t.Fatal(err)
	}
	// The module cache keeps it, as every file, not executable.
	if err := os.WriteFile(filepath.Join(wrapper, "git-verify-wrapper.sh"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	// Argo CD's Helm support runs the helm CLI from PATH: helm v3, as
	// Argo CD v3.6 ships.
	helm, err := testenv.Tool(cluster.ToolsBin, "helm")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", wrapper+string(os.PathListSeparator)+filepath.Dir(helm)+string(os.PathListSeparator)+os.Getenv("PATH"))
	for _, v := range []string{"HELM_CACHE_HOME", "HELM_CONFIG_HOME", "HELM_DATA_HOME"} {
		t.Setenv(v, t.TempDir())
	}
	c := reposervercache.NewCache(cacheutil.NewCache(cacheutil.NewInMemoryCache(time.Hour)), time.Hour, time.Hour, time.Minute)
	s := repository.NewService(metrics.NewMetricsServer(), c, repository.RepoServerInitConstants{
		ParallelismLimit:                  1,
		MaxCombinedDirectoryManifestsSize: resource.MustParse("10M"),
		CMPUseManifestGeneratePaths:       generatePaths,
		HelmManifestMaxExtractedSize:      1 << 30,
		HelmRegistryMaxIndexSize:          1 << 30,
		StreamedManifestMaxExtractedSize:  1 << 30,
		StreamedManifestMaxTarSize:        1 << 30,
		OCIManifestMaxExtractedSize:       1 << 30,
	}, &git.NoopCredsStore{}, t.TempDir())
	if err := s.Init(); err != nil {
		t.Fatal(err)
	}
	return s
}

// argoCDModule is the folder of Argo CD's module in the module cache: its
// manifests and scripts, as released.
func argoCDModule(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/argoproj/argo-cd/v3").Output()
	if err != nil {
		t.Fatalf("go list -m github.com/argoproj/argo-cd/v3: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// gitRepo turns the folder into a Git repository with one commit on main,
// and returns its file:// URL.
func gitRepo(t *testing.T, dir string) string {
	t.Helper()
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "-A"},
		{"-c", "user.name=test", "-c", "user.email=test@example.com", "commit", "-q", "-m", "fleet"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return "file://" + dir
}

// serviceRepo is fleetRepo with two more applications: apps/plain, a chart
// with neither pins nor built-in injectors, and apps/team/web, the webapp
// chart with a values file in apps/team/shared (outside its folder, inside
// what its manifest-generate-paths name); and an echo chart that prints
// its values, for --set parsing.
func serviceRepo(t *testing.T) (dir, url string) {
	t.Helper()
	dir = fleetRepo(t)
	for src, dst := range map[string]string{
		"fixtures/charts/webapp": "apps/plain",
	} {
		if err := os.CopyFS(filepath.Join(dir, dst), os.DirFS(filepath.Join(root, src))); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.CopyFS(filepath.Join(dir, "apps", "team", "web"), os.DirFS(filepath.Join(root, "fixtures", "charts", "webapp"))); err != nil {
		t.Fatal(err)
	}
	for path, content := range map[string]string{
		"apps/team/shared/values.yaml":    "replicas: 4\n",
		"apps/echo/Chart.yaml":            "apiVersion: v2\nname: echo\nversion: 0.1.0\n",
		"apps/echo/values.yaml":           "list: []\nname: default\n",
		"apps/echo/templates/values.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-values\ndata:\n  values: {{ toJson .Values | quote }}\n",
		// A chart whose dependency is a folder of the repository, not
		// vendored: Argo CD builds it.
		"apps/withdeps/Chart.yaml":           "apiVersion: v2\nname: withdeps\nversion: 0.1.0\ndependencies:\n  - name: lib\n    version: ^1\n    repository: file://../../libs/lib\n",
		"apps/withdeps/templates/app.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-app\ndata:\n  greeting: {{ .Values.lib.greeting | quote }}\n",
		"apps/withdeps/values.yaml":          "lib:\n  greeting: from-parent\n",
		"libs/lib/Chart.yaml":                "apiVersion: v2\nname: lib\nversion: 1.2.0\n",
		"libs/lib/values.yaml":               "greeting: from-lib\nreplicas: 2\n",
		"libs/lib/templates/deployment.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}-lib\nspec:\n  replicas: {{ .Values.replicas }}\n  selector:\n    matchLabels: {app: lib}\n  template:\n    metadata:\n      labels: {app: lib}\n    spec:\n      containers:\n        - name: lib\n          image: registry.example/lib:1\n          env:\n            - name: GREETING\n              value: {{ .Values.greeting | quote }}\n",
	} {
		p := filepath.Join(dir, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, gitRepo(t, dir)
}

// manifestRequest is what Argo CD's application controller sends the
// repo-server for an application.
func manifestRequest(url, app, path string, src v1alpha1.ApplicationSource) *apiclient.ManifestRequest {
	src.RepoURL, src.Path, src.TargetRevision = url, path, "main"
	return &apiclient.ManifestRequest{
		Repo:               &v1alpha1.Repository{Repo: url},
		Revision:           "main",
		AppName:            app,
		Namespace:          "shop",
		ProjectName:        "default",
		ProjectSourceRepos: []string{"*"},
		KubeVersion:        "1.31.4",
		ApiVersions:        []string{"v1", "apps/v1", "batch/v1"},
		AppLabelKey:        "app.kubernetes.io/instance",
		TrackingMethod:     string(v1alpha1.TrackingMethodAnnotation),
		NoCache:            true,
		ApplicationSource:  &src,
	}
}

func objects(t *testing.T, manifests []string) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	for _, m := range manifests {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON([]byte(m)); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, u)
	}
	return objs
}

func containerNames(t *testing.T, objs []*unstructured.Unstructured, deployment string) []string {
	t.Helper()
	d := find(objs, "Deployment", deployment)
	if d == nil {
		var have []string
		for _, o := range objs {
			have = append(have, o.GetKind()+"/"+o.GetName())
		}
		t.Fatalf("no Deployment %s among %v", deployment, have)
	}
	cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	var names []string
	for _, c := range cs {
		names = append(names, c.(map[string]any)["name"].(string))
	}
	return names
}

// TestRepoServerFindsThePlugin: through the repo-server's GenerateManifest,
// an application that names the plugin renders with or without a pins
// file, one that does not name it is found by its plugin section or its
// pins file, in Argo CD's namespace or another, and a chart with neither
// is left to Argo CD's own Helm support.
func TestRepoServerFindsThePlugin(t *testing.T) {
	repoDir, url := serviceRepo(t)
	// The operator's library (here the repository's) is on generate's
	// command line, as plugin.yaml gives it.
	serveShippedPlugin(t, "--injector-library="+filepath.Join(repoDir, "injectors"))
	s := repoServer(t, false)
	builtin := v1alpha1.ApplicationSourcePluginParameters{
		{Name: "with", OptionalArray: &v1alpha1.OptionalArray{Array: []string{"sidecar@^1"}}},
		{Name: "injector-library", String_: str("../../injectors")},
	}
	external := v1alpha1.ApplicationSourcePluginParameters{
		{Name: "inject", OptionalArray: &v1alpha1.OptionalArray{Array: []string{"sidecar-injector --name mesh-proxy FILE"}}},
	}
	for _, pinned := range []bool{true, false} {
		for _, named := range []bool{true, false} {
			for _, app := range []string{"web", "team-a_web"} {
				path, params, sidecar := "apps/plain", external, "mesh-proxy"
				if pinned {
					path, params, sidecar = "apps/web", builtin, "sidecar"
				}
				plugin := &v1alpha1.ApplicationSourcePlugin{Parameters: params}
				if named {
					plugin.Name = "helm-inject"
				}
				t.Run(fmt.Sprintf("pins=%v named=%v app=%s", pinned, named, app), func(t *testing.T) {
					res, err := s.GenerateManifest(t.Context(), manifestRequest(url, app, path, v1alpha1.ApplicationSource{Plugin: plugin}))
					if err != nil {
						t.Fatalf("GenerateManifest: %v", err)
					}
					if res.SourceType != string(v1alpha1.ApplicationSourceTypePlugin) {
						t.Errorf("source type %s, want Plugin", res.SourceType)
					}
					if names := containerNames(t, objects(t, res.Manifests), "web-web"); !slices.Contains(names, sidecar) {
						t.Errorf("containers %v, want %s", names, sidecar)
					}
				})
			}
		}
	}
	t.Run("no plugin section, a pins file", func(t *testing.T) {
		// Discovered by its pins file, which says which injectors: the
		// library is the plugin's own (the operator's, here the
		// repository's through plugin.yaml's --injector-library).
		res, err := s.GenerateManifest(t.Context(), manifestRequest(url, "web", "apps/web", v1alpha1.ApplicationSource{}))
		if err != nil {
			t.Fatalf("GenerateManifest: %v", err)
		}
		if res.SourceType != string(v1alpha1.ApplicationSourceTypePlugin) {
			t.Errorf("source type %s, want Plugin", res.SourceType)
		}
		if names := containerNames(t, objects(t, res.Manifests), "web-web"); !slices.Contains(names, "sidecar") {
			t.Errorf("containers %v, want the pinned sidecar", names)
		}
	})
	t.Run("explicitly no built-in injector, a pins file", func(t *testing.T) {
		q := manifestRequest(url, "web", "apps/web", v1alpha1.ApplicationSource{Plugin: &v1alpha1.ApplicationSourcePlugin{
			Parameters: v1alpha1.ApplicationSourcePluginParameters{{Name: "with", OptionalArray: &v1alpha1.OptionalArray{}}},
		}})
		// The pins file is not dropped silently.
		if _, err := s.GenerateManifest(t.Context(), q); err == nil || !strings.Contains(err.Error(), `helm-inject-pins.yaml pins the built-in injector sidecar, which the "with" parameter does not name`) {
			t.Errorf("GenerateManifest: %v", err)
		}
	})
	t.Run("no plugin section, no pins file", func(t *testing.T) {
		res, err := s.GenerateManifest(t.Context(), manifestRequest(url, "plain", "apps/plain", v1alpha1.ApplicationSource{}))
		if err != nil {
			t.Fatalf("GenerateManifest: %v", err)
		}
		if res.SourceType != string(v1alpha1.ApplicationSourceTypeHelm) {
			t.Errorf("source type %s, want Helm (Argo CD's own)", res.SourceType)
		}
	})
	t.Run("another plugin's section", func(t *testing.T) {
		q := manifestRequest(url, "plain", "apps/plain", v1alpha1.ApplicationSource{Plugin: &v1alpha1.ApplicationSourcePlugin{
			Parameters: v1alpha1.ApplicationSourcePluginParameters{{Name: "overlay", String_: str("prod")}},
		}})
		if _, err := s.GenerateManifest(t.Context(), q); err == nil || !strings.Contains(err.Error(), "could not find plugin supporting the given repository") {
			t.Errorf("GenerateManifest: %v, want no plugin found", err)
		}
	})
}

// TestRepoServerParameterForms: explicitly empty parameters render as
// none given, and set values with braces and escaped commas reach the
// chart as Argo CD's Helm support gives them, whether the repo-server
// streams the repository or only the application's folder
// (manifest-generate-paths).
func TestRepoServerParameterForms(t *testing.T) {
	serveShippedPlugin(t)
	_, url := serviceRepo(t)
	for _, generatePaths := range []bool{false, true} {
		t.Run(fmt.Sprintf("generate-paths=%v", generatePaths), func(t *testing.T) {
			s := repoServer(t, generatePaths)
			params := v1alpha1.ApplicationSourcePluginParameters{
				{Name: "values-files", OptionalArray: &v1alpha1.OptionalArray{}},
				{Name: "set-string", OptionalMap: &v1alpha1.OptionalMap{}},
				{Name: "values", String_: str("")},
				{Name: "skip-tests", String_: str("")},
				{Name: "set", OptionalMap: &v1alpha1.OptionalMap{Map: map[string]string{"list": "{a,b}", "name": `a\,b`, "plain": "x,y"}}},
			}
			q := manifestRequest(url, "echo", "apps/echo", v1alpha1.ApplicationSource{Plugin: &v1alpha1.ApplicationSourcePlugin{Name: "helm-inject", Parameters: params}})
			q.AnnotationManifestGeneratePaths = "."
			res, err := s.GenerateManifest(t.Context(), q)
			if err != nil {
				t.Fatalf("GenerateManifest: %v", err)
			}
			cm := find(objects(t, res.Manifests), "ConfigMap", "echo-values")
			if cm == nil {
				t.Fatalf("no ConfigMap echo-values in %v", res.Manifests)
			}
			var vals map[string]any
			if err := json.Unmarshal([]byte(cm.Object["data"].(map[string]any)["values"].(string)), &vals); err != nil {
				t.Fatal(err)
			}
			want := map[string]any{"list": []any{"a", "b"}, "name": "a,b", "plain": "x,y"}
			for k, v := range want {
				if fmt.Sprint(vals[k]) != fmt.Sprint(v) {
					t.Errorf("%s = %#v, want %#v (values %v)", k, vals[k], v, vals)
				}
			}
		})
	}

	// An application whose values file is beside its folder: the
	// repo-server streams the folders its manifest-generate-paths name,
	// from their common root (apps/team), so generate runs in a folder
	// that does not end with the source path apps/team/web.
	s := repoServer(t, true)
	q := manifestRequest(url, "web", "apps/team/web", v1alpha1.ApplicationSource{Plugin: &v1alpha1.ApplicationSourcePlugin{Name: "helm-inject", Parameters: v1alpha1.ApplicationSourcePluginParameters{
		{Name: "values-files", OptionalArray: &v1alpha1.OptionalArray{Array: []string{"../shared/values.yaml"}}},
		{Name: "inject", OptionalArray: &v1alpha1.OptionalArray{Array: []string{"sidecar-injector FILE"}}},
	}}})
	q.AnnotationManifestGeneratePaths = ".;../shared"
	res, err := s.GenerateManifest(t.Context(), q)
	if err != nil {
		t.Fatalf("GenerateManifest with manifest-generate-paths: %v", err)
	}
	d := find(objects(t, res.Manifests), "Deployment", "web-web")
	if r, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); r != 4 {
		t.Errorf("replicas %d, want 4 from ../shared/values.yaml", r)
	}
	// What the annotation does not name is not there.
	q.AnnotationManifestGeneratePaths = "."
	if _, err := s.GenerateManifest(t.Context(), q); err == nil || !strings.Contains(err.Error(), `values file "../shared/values.yaml"`) {
		t.Errorf("a values file outside what was streamed: %v", err)
	}
}

// TestRepoServerAppDetails: the repo-server's GetAppDetails, which Argo
// CD's UI calls for the parameters panel, answers for an application
// without a name yet (the New App panel) and with one: the static
// parameters and the chart's values as chart-values.
func TestRepoServerAppDetails(t *testing.T) {
	serveShippedPlugin(t)
	_, url := serviceRepo(t)
	s := repoServer(t, false)
	for _, app := range []string{"", "web"} {
		t.Run(fmt.Sprintf("app=%q", app), func(t *testing.T) {
			res, err := s.GetAppDetails(t.Context(), &apiclient.RepoServerAppDetailsQuery{
				Repo:    &v1alpha1.Repository{Repo: url},
				AppName: app,
				NoCache: true,
				Source: &v1alpha1.ApplicationSource{RepoURL: url, Path: "apps/plain", TargetRevision: "main",
					Plugin: &v1alpha1.ApplicationSourcePlugin{Name: "helm-inject"}},
			})
			if err != nil {
				t.Fatalf("GetAppDetails: %v", err)
			}
			if res.Type != string(v1alpha1.ApplicationSourceTypePlugin) || res.Plugin == nil {
				t.Fatalf("type %s, plugin %v: want the plugin's details", res.Type, res.Plugin)
			}
			byName := map[string]*apiclient.ParameterAnnouncement{}
			for _, a := range res.Plugin.ParametersAnnouncement {
				byName[a.Name] = a
			}
			cv := byName["chart-values"]
			if cv == nil || cv.Map["replicas"] != "1" || cv.Map["image"] != "registry.example/webapp:2.7.0" {
				t.Errorf("chart-values %+v, want the chart's values", cv)
			}
			if set := byName["set"]; set == nil || len(set.Map) != 0 {
				t.Errorf("set %+v: want it announced with no defaults (the UI would save them)", set)
			}
		})
	}
}

// TestPluginEqualsArgoCDHelm: with no injector, the plugin's objects are
// the objects Argo CD's own Helm source type renders for the same chart,
// release name, namespace, versions, values files and parameters; Argo
// CD's repo-server computes both.
func TestPluginEqualsArgoCDHelm(t *testing.T) {
	serveShippedPlugin(t)
	_, url := serviceRepo(t)
	s := repoServer(t, false)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()

	helmRes, err := s.GenerateManifest(ctx, manifestRequest(url, "team-a_web", "apps/plain", v1alpha1.ApplicationSource{Helm: &v1alpha1.ApplicationSourceHelm{
		ReleaseName: "shop",
		ValueFiles:  []string{"../../envs/prod.yaml", "missing.yaml"},
		Parameters: []v1alpha1.HelmParameter{
			{Name: "greeting", Value: "a,b"},
			{Name: "cache.enabled", Value: "false"},
			{Name: "image", Value: "registry.example/webapp:3", ForceString: true},
		},
		IgnoreMissingValueFiles: true,
		SkipTests:               true,
	}}))
	if err != nil {
		t.Fatalf("Argo CD's Helm: %v", err)
	}
	pluginRes, err := s.GenerateManifest(ctx, manifestRequest(url, "team-a_web", "apps/plain", v1alpha1.ApplicationSource{Plugin: &v1alpha1.ApplicationSourcePlugin{
		Name: "helm-inject",
		Parameters: v1alpha1.ApplicationSourcePluginParameters{
			{Name: "release-name", String_: str("shop")},
			{Name: "values-files", OptionalArray: &v1alpha1.OptionalArray{Array: []string{"../../envs/prod.yaml", "missing.yaml"}}},
			{Name: "set", OptionalMap: &v1alpha1.OptionalMap{Map: map[string]string{"greeting": "a,b", "cache.enabled": "false"}}},
			{Name: "set-string", OptionalMap: &v1alpha1.OptionalMap{Map: map[string]string{"image": "registry.example/webapp:3"}}},
			{Name: "ignore-missing-value-files", String_: str("true")},
			{Name: "skip-tests", String_: str("true")},
		},
	}}))
	if err != nil {
		t.Fatalf("the plugin: %v", err)
	}
	sameObjects(t, helmRes.Manifests, pluginRes.Manifests)
	if n := len(helmRes.Manifests); n < 5 || find(objects(t, helmRes.Manifests), "Deployment", "shop-web") == nil {
		t.Errorf("Argo CD's Helm rendered %d objects, without Deployment shop-web: the comparison proves little", n)
	}

	// A dependency in a folder of the repository, not vendored: both
	// build it. The plugin first: Argo CD's Helm builds it into the
	// repo-server's checkout, which the plugin is then streamed.
	pluginRes, err = s.GenerateManifest(ctx, manifestRequest(url, "deps", "apps/withdeps", v1alpha1.ApplicationSource{Plugin: &v1alpha1.ApplicationSourcePlugin{Name: "helm-inject"}}))
	if err != nil {
		t.Fatalf("the plugin, a local dependency: %v", err)
	}
	helmRes, err = s.GenerateManifest(ctx, manifestRequest(url, "deps", "apps/withdeps", v1alpha1.ApplicationSource{Helm: &v1alpha1.ApplicationSourceHelm{}}))
	if err != nil {
		t.Fatalf("Argo CD's Helm, a local dependency: %v", err)
	}
	sameObjects(t, helmRes.Manifests, pluginRes.Manifests)
	if find(objects(t, pluginRes.Manifests), "Deployment", "deps-lib") == nil {
		t.Errorf("the dependency's Deployment deps-lib is missing: %v", pluginRes.Manifests)
	}
}

// sameObjects fails on each object only one of the two renders has.
func sameObjects(t *testing.T, fromHelm, fromPlugin []string) {
	t.Helper()
	canonical := func(ms []string) []string {
		var out []string
		for _, o := range objects(t, ms) {
			b, err := json.Marshal(o.Object)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, string(b))
		}
		slices.Sort(out)
		return out
	}
	want, got := canonical(fromHelm), canonical(fromPlugin)
	if !slices.Equal(want, got) {
		for _, w := range want {
			if !slices.Contains(got, w) {
				t.Errorf("only Argo CD's Helm renders:\n%s", w)
			}
		}
		for _, g := range got {
			if !slices.Contains(want, g) {
				t.Errorf("only the plugin renders:\n%s", g)
			}
		}
	}
}
