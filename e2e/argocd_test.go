package e2e

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"gopkg.in/yaml.v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/helm-inject/helm-inject/internal/testfs"
)

// Argo CD runs a plugin's commands in the application's folder of a copy of
// the repository, which it unpacks with 0644 files and 0755 folders, with
// the repo-server's environment. These tests do the same with the shipped
// deploy/argocd/plugin.yaml; e2e-argocd/ runs the same through Argo CD's own
// cmp-server and repo-server code.

// argoRepo is a Git repository as Argo CD hands it to a plugin: two
// applications of the webapp chart, a values file outside them, and an
// injector library.
func argoRepo(t *testing.T) string {
	t.Helper()
	root := repoRoot(t)
	repo := filepath.Join(t.TempDir(), "repo")
	for src, dst := range map[string]string{
		"fixtures/charts/webapp":     "apps/web",
		"fixtures/injectors/library": "injectors",
	} {
		copyArgoModes(t, filepath.Join(root, src), filepath.Join(repo, dst))
	}
	copyArgoModes(t, filepath.Join(root, "fixtures/charts/webapp"), filepath.Join(repo, "apps/shop"))
	testfs.Write(t, filepath.Join(repo, "apps", "only-tests"), map[string]string{
		"Chart.yaml":              "apiVersion: v2\nname: only-tests\nversion: 0.1.0\n",
		"templates/test-pod.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: check\n  annotations:\n    helm.sh/hook: test\nspec:\n  containers:\n    - name: c\n      image: busybox\n",
	})
	if err := os.MkdirAll(filepath.Join(repo, "envs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "envs", "prod.yaml"), []byte("replicas: 3\ngreeting: from-prod\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return repo
}

// copyArgoModes copies a tree with the modes Argo CD's repo stream gives.
func copyArgoModes(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// pluginSpec is the part of plugin.yaml the repo-server and cmp-server
// read.
type pluginSpec struct {
	Kind string `yaml:"kind"`
	Spec struct {
		Discover struct {
			FileName string `yaml:"fileName"`
			Find     struct {
				Command []string `yaml:"command"`
			} `yaml:"find"`
		} `yaml:"discover"`
		Generate struct {
			Command []string `yaml:"command"`
		} `yaml:"generate"`
		Parameters struct {
			Static []struct {
				Name string `yaml:"name"`
			} `yaml:"static"`
			Dynamic struct {
				Command []string `yaml:"command"`
			} `yaml:"dynamic"`
		} `yaml:"parameters"`
	} `yaml:"spec"`
}

func shippedPlugin(t *testing.T) pluginSpec {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy", "argocd", "plugin.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var p pluginSpec
	if err := yaml.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	if p.Kind != "ConfigManagementPlugin" || len(p.Spec.Generate.Command) == 0 {
		t.Fatalf("plugin.yaml is not a ConfigManagementPlugin with a generate command:\n%s", b)
	}
	return p
}

// argoParam is one Application plugin parameter, as Argo CD marshals it.
type argoParam struct {
	Name   string            `json:"name"`
	String *string           `json:"string,omitempty"`
	Array  []string          `json:"array,omitempty"`
	Map    map[string]string `json:"map,omitempty"`
}

func str(s string) *string { return &s }

// argoEnv is the environment the repo-server gives the plugin for an
// application (Argo CD's newEnv, getPluginEnvs and
// ApplicationSourcePluginParameters.Environ), after the sidecar's own.
func argoEnv(t *testing.T, app, sourcePath string, params []argoParam, env map[string]string) []string {
	t.Helper()
	js, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	out := []string{
		"ARGOCD_APP_NAME=argocd_" + app, // an application outside Argo CD's namespace
		"ARGOCD_APP_NAMESPACE=shop",
		"ARGOCD_APP_PROJECT_NAME=default",
		"ARGOCD_APP_REVISION=0123456789abcdef0123456789abcdef01234567",
		"ARGOCD_APP_REVISION_SHORT=0123456",
		"ARGOCD_APP_REVISION_SHORT_8=01234567",
		"ARGOCD_APP_SOURCE_REPO_URL=https://git.example/fleet.git",
		"ARGOCD_APP_SOURCE_PATH=" + sourcePath,
		"ARGOCD_APP_SOURCE_TARGET_REVISION=main",
		"KUBE_VERSION=1.31.4",
		"KUBE_API_VERSIONS=v1,apps/v1,batch/v1,monitoring.coreos.com/v1,monitoring.coreos.com/v1/ServiceMonitor",
		"ARGOCD_APP_PARAMETERS=" + string(js),
	}
	escape := regexp.MustCompile("[^A-Z0-9_]")
	for _, p := range params {
		base := "PARAM_" + escape.ReplaceAllString(strings.ToUpper(p.Name), "_")
		if p.String != nil {
			out = append(out, base+"="+*p.String)
		}
		for k, v := range p.Map {
			out = append(out, base+"_"+escape.ReplaceAllString(strings.ToUpper(k), "_")+"="+v)
		}
		for i, v := range p.Array {
			out = append(out, fmt.Sprintf("%s_%d=%s", base, i, v))
		}
	}
	for k, v := range env {
		out = append(out, "ARGOCD_ENV_"+k+"="+v)
	}
	return out
}

// runPluginCommand runs one of plugin.yaml's commands as the cmp-server
// does: argv as given, no shell, in the application's folder, with the
// operator's policy on its command line as plugin.yaml gives it. Every
// Argo CD test runs confined (--confine=required), so the allowed set is
// proven complete for real use; generate allows sidecar-injector, and
// operator adds to (or, given again, replaces) what the operator says.
func runPluginCommand(t *testing.T, argv []string, dir string, env []string, operator ...string) result {
	t.Helper()
	argv = append(slices.Clone(argv), "--confine=required")
	if slices.Contains(argv, "generate") {
		// The shipped library folder is the sidecar's, not this
		// machine's: none unless operator names one.
		argv = append(argv, "--allowed-commands=sidecar-injector", "--injector-library=")
	}
	argv = append(argv, operator...)
	bin := argv[0]
	if bin == "helm-inject" {
		bin = filepath.Join(binDir, "helm-inject")
	}
	return command{dir: dir, env: env}.run(t, bin, argv[1:]...)
}

// webParams are the parameters of the "web" application.
func webParams() []argoParam {
	return []argoParam{
		{Name: "values-files", Array: []string{"../../envs/prod.yaml"}},
		{Name: "values", String: str("image: registry.example/webapp:2.8.0\n")},
		{Name: "set", Map: map[string]string{"greeting": "a,b"}},
		{Name: "inject", Array: []string{"sidecar-injector --name mesh-proxy FILE"}},
		{Name: "with", Array: []string{"sidecar@^1"}},
		{Name: "with-set", Map: map[string]string{"sidecar.image": "registry.example/sidecar:1.0.1"}},
		{Name: "injector-library", String: str("../../injectors")},
	}
}

func pinApp(t *testing.T, repo, app string, extra ...string) {
	t.Helper()
	args := append([]string{"argocd", "pin", "--injector-library", filepath.Join(repo, "injectors"), "--with", "sidecar@^1"}, extra...)
	mustHelmInject(t, append(args, filepath.Join(repo, "apps", app))...)
}

// TestArgoCDGenerate: the shipped plugin's generate, run as Argo CD runs it,
// prints exactly what helm-inject template prints for the same inputs, with
// both injectors, the hooks, the CRDs once and the cluster's versions; a
// broken or forbidden injector prints nothing and fails.
func TestArgoCDGenerate(t *testing.T) {
	plugin := shippedPlugin(t)
	repo := argoRepo(t)
	app := filepath.Join(repo, "apps", "web")
	pinApp(t, repo, "web")

	// Discovery: the cmp-server runs discover.find.command in the app's
	// folder, without a plugin section's parameters when the Application
	// has none; any output is a match.
	noSection := slices.DeleteFunc(argoEnv(t, "web", "apps/web", nil, nil), func(kv string) bool { return strings.HasPrefix(kv, "ARGOCD_APP_PARAMETERS=") })
	if plugin.Spec.Discover.FileName != "" {
		t.Fatalf("discover.fileName %q: Argo CD would ask it before a named plugin too", plugin.Spec.Discover.FileName)
	}
	if r := runPluginCommand(t, plugin.Spec.Discover.Find.Command, app, noSection); r.code != 0 || strings.TrimSpace(r.stdout) != "helm-inject" {
		t.Fatalf("discovery of a pinned application's folder:\n%s", r)
	}
	if r := runPluginCommand(t, plugin.Spec.Discover.Find.Command, filepath.Join(repo, "envs"), noSection); r.code != 0 || r.stdout != "" {
		t.Fatalf("discovery of a folder that is no application:\n%s", r)
	}

	gen := runPluginCommand(t, plugin.Spec.Generate.Command, app, argoEnv(t, "web", "apps/web", webParams(), nil))
	if gen.code != 0 {
		t.Fatalf("generate failed:\n%s", gen)
	}
	inline := filepath.Join(t.TempDir(), "inline.yaml")
	if err := os.WriteFile(inline, []byte("image: registry.example/webapp:2.8.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tmpl := command{dir: app}.mustRun(t, filepath.Join(binDir, "helm-inject"), "template", "web", ".",
		"--namespace", "shop", "--include-crds", "--kube-version", "1.31.4",
		"--api-versions", "v1,apps/v1,batch/v1,monitoring.coreos.com/v1,monitoring.coreos.com/v1/ServiceMonitor",
		"--values", "../../envs/prod.yaml", "--values", inline, "--set", `greeting=a\,b`,
		"--inject", "sidecar-injector --name mesh-proxy FILE",
		"--injector-library", "../../injectors", "--with", "sidecar@^1", "--with-set", "sidecar.image=registry.example/sidecar:1.0.1",
		"--injector-pins", "helm-inject-pins.yaml")
	if gen.stdout != tmpl.stdout {
		t.Fatalf("generate and template differ\ngenerate:\n%s\ntemplate:\n%s", gen.stdout, tmpl.stdout)
	}

	ws := workloads(t, gen.stdout)
	d, ok := ws["Deployment/web-web"]
	if !ok {
		t.Fatalf("no Deployment web-web (release name without Argo CD's namespace prefix):\n%s", gen.stdout)
	}
	if !contains(d.containers, "mesh-proxy") || !contains(d.containers, "sidecar") {
		t.Errorf("Deployment containers %v: want both injectors' sidecars", d.containers)
	}
	if hook, ok := ws["Job/web-setup"]; !ok || !contains(hook.containers, "sidecar") {
		t.Errorf("the pre-install hook Job is missing or not injected: %+v", hook)
	}
	for _, want := range []string{
		`"helm.sh/hook": pre-install`,   // hooks keep their annotations
		`kubeVersion: "v1.31.4"`,        // KUBE_VERSION reaches .Capabilities
		"registry.example/webapp:2.8.0", // inline values over the values file
		"replicas: 3",                   // the values file outside the app folder
		"registry.example/sidecar:1.0.1",
	} {
		if !strings.Contains(gen.stdout, want) {
			t.Errorf("generate output lacks %q", want)
		}
	}
	if n := strings.Count(gen.stdout, "kind: CustomResourceDefinition"); n != 2 {
		t.Errorf("%d CRDs in the output; want the chart's and its subchart's, once each", n)
	}

	// The app is pinned: every case names its built-in injector.
	pinned := func(ps ...argoParam) []argoParam {
		return append(ps, argoParam{Name: "with", Array: []string{"sidecar@^1"}}, argoParam{Name: "injector-library", String: str("../../injectors")})
	}
	for name, tc := range map[string]struct {
		params  []argoParam
		message string
	}{
		"broken injector": {
			params:  pinned(argoParam{Name: "inject", Array: []string{"sidecar-injector --fail invalid-yaml FILE"}}),
			message: "sidecar-injector --fail invalid-yaml FILE",
		},
		"forbidden program": {
			params:  []argoParam{{Name: "inject", Array: []string{"sh -c 'cat FILE'"}}},
			message: `runs "sh", which this plugin does not allow`,
		},
		"values file outside the repository": {
			params:  []argoParam{{Name: "values-files", Array: []string{"/etc/passwd"}}},
			message: `values file "/etc/passwd": give a path relative to the application's folder`,
		},
		"nothing to print": {
			// A chart of test hooks only, with tests left out.
			params:  pinned(argoParam{Name: "chart", String: str("../only-tests")}, argoParam{Name: "skip-tests", String: str("true")}),
			message: "refusing to print nothing",
		},
		"unknown parameter": {
			params:  []argoParam{{Name: "valuesFiles", Array: []string{"x.yaml"}}},
			message: `unknown plugin parameter "valuesFiles"`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			r := runPluginCommand(t, plugin.Spec.Generate.Command, app, argoEnv(t, "web", "apps/web", tc.params, nil))
			if r.code == 0 || r.stdout != "" {
				t.Fatalf("want a failure with nothing on stdout:\n%s", r)
			}
			if !strings.Contains(r.stderr, tc.message) || !strings.Contains(r.stderr, "web") {
				t.Errorf("stderr does not name the application and say %q:\n%s", tc.message, r.stderr)
			}
		})
	}
}

// TestArgoCDEnvAndParameters: the Application's plugin env entries give
// the same inputs as parameters, and the dynamic parameters command
// announces the chart's values.
func TestArgoCDEnvAndParameters(t *testing.T) {
	plugin := shippedPlugin(t)
	repo := argoRepo(t)
	app := filepath.Join(repo, "apps", "web")
	byParams := runPluginCommand(t, plugin.Spec.Generate.Command, app, argoEnv(t, "web", "apps/web",
		[]argoParam{{Name: "values-files", Array: []string{"../../envs/prod.yaml"}}, {Name: "inject", Array: []string{"sidecar-injector FILE"}}}, nil))
	byEnv := runPluginCommand(t, plugin.Spec.Generate.Command, app, argoEnv(t, "web", "apps/web", nil,
		map[string]string{"VALUES_FILES": "../../envs/prod.yaml", "INJECT": "sidecar-injector FILE"}))
	if byParams.code != 0 || byEnv.code != 0 {
		t.Fatalf("generate failed:\n%s\n%s", byParams, byEnv)
	}
	if byParams.stdout != byEnv.stdout || !strings.Contains(byEnv.stdout, "replicas: 3") {
		t.Errorf("env entries and parameters give different output\nparameters:\n%s\nenv:\n%s", byParams.stdout, byEnv.stdout)
	}

	r := runPluginCommand(t, plugin.Spec.Parameters.Dynamic.Command, app, argoEnv(t, "web", "apps/web", nil, nil))
	if r.code != 0 {
		t.Fatalf("parameters failed:\n%s", r)
	}
	var ann []struct {
		Name           string            `json:"name"`
		CollectionType string            `json:"collectionType"`
		Map            map[string]string `json:"map"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &ann); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if len(ann) != 1 || ann[0].Name != "chart-values" || ann[0].CollectionType != "map" || ann[0].Map["image"] != "registry.example/webapp:2.7.0" || ann[0].Map["cache.enabled"] != "true" {
		t.Errorf("dynamic announcement: %+v", ann)
	}
	static := make([]string, 0, len(plugin.Spec.Parameters.Static))
	for _, p := range plugin.Spec.Parameters.Static {
		static = append(static, p.Name)
	}
	if slices.Contains(static, "chart-values") || !slices.Contains(static, "with") || !slices.Contains(static, "set") {
		t.Errorf("static parameters %v: want every parameter but chart-values", static)
	}
}

// TestArgoCDPinning: the library gaining a version changes no byte of any
// application's output; `pin --update` moves exactly the applications it
// names; an application without pins is refused, never given the newest.
func TestArgoCDPinning(t *testing.T) {
	plugin := shippedPlugin(t)
	repo := argoRepo(t)
	pinApp(t, repo, "web")
	pinApp(t, repo, "shop")
	generate := func(app string) result {
		t.Helper()
		params := []argoParam{{Name: "with", Array: []string{"sidecar@^1"}}, {Name: "injector-library", String: str("../../injectors")}}
		r := runPluginCommand(t, plugin.Spec.Generate.Command, filepath.Join(repo, "apps", app), argoEnv(t, app, "apps/"+app, params, nil))
		if r.code != 0 {
			t.Fatalf("generate %s failed:\n%s", app, r)
		}
		return r
	}
	read := func(path string) string {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	before := map[string]string{"web": generate("web").stdout, "shop": generate("shop").stdout}
	shopPins := read(filepath.Join(repo, "apps", "shop", "helm-inject-pins.yaml"))

	// The library gains sidecar 1.1.0 (another image), locked as a release.
	lib := filepath.Join(repo, "injectors")
	v100 := read(filepath.Join(lib, "sidecar", "1.0.0.yaml"))
	v110 := strings.Replace(strings.Replace(v100, "version: 1.0.0", "version: 1.1.0", 1), "registry.example/sidecar:1.0", "registry.example/sidecar:1.1", 1)
	if err := os.WriteFile(filepath.Join(lib, "sidecar", "1.1.0.yaml"), []byte(v110), 0o644); err != nil {
		t.Fatal(err)
	}
	mustHelmInject(t, "injectors", "lock", "--injector-library", lib)
	for app, want := range before {
		if got := generate(app).stdout; got != want {
			t.Errorf("%s: the library gaining a version changed the generated output", app)
		}
	}

	// Moving one application is a change of its own pins file only.
	moved := mustHelmInject(t, "argocd", "pin", "--update", "--injector-library", lib, filepath.Join(repo, "apps", "web"))
	if !strings.Contains(moved.stdout, "sidecar 1.0.0 -> 1.1.0") {
		t.Errorf("pin --update does not say what moved:\n%s", moved)
	}
	if again := mustHelmInject(t, "argocd", "pin", "--update", "--injector-library", lib, filepath.Join(repo, "apps", "web")); !strings.Contains(again.stdout, "unchanged") {
		t.Errorf("a second pin --update does not say it changed nothing:\n%s", again)
	}
	if got := read(filepath.Join(repo, "apps", "shop", "helm-inject-pins.yaml")); got != shopPins {
		t.Errorf("pin --update apps/web changed apps/shop's pins")
	}
	if !strings.Contains(read(filepath.Join(repo, "apps", "web", "helm-inject-pins.yaml")), "version: 1.1.0") {
		t.Errorf("pin --update did not move web to 1.1.0")
	}
	if got := generate("shop").stdout; got != before["shop"] {
		t.Errorf("shop's output changed, though only web was re-pinned")
	}
	web := generate("web").stdout
	if web == before["web"] || !strings.Contains(web, "registry.example/sidecar:1.1") {
		t.Errorf("web's output does not carry sidecar 1.1.0 after its pin moved")
	}

	// No pins file: refused, with the command that writes it.
	if err := os.Remove(filepath.Join(repo, "apps", "shop", "helm-inject-pins.yaml")); err != nil {
		t.Fatal(err)
	}
	params := []argoParam{{Name: "with", Array: []string{"sidecar@^1"}}, {Name: "injector-library", String: str("../../injectors")}}
	r := runPluginCommand(t, plugin.Spec.Generate.Command, filepath.Join(repo, "apps", "shop"), argoEnv(t, "shop", "apps/shop", params, nil))
	if r.code == 0 || r.stdout != "" || !strings.Contains(r.stderr, "helm-inject argocd pin") || !strings.Contains(r.stderr, "apps/shop") {
		t.Errorf("an application without pins: want a refusal that says how to pin it:\n%s", r)
	}
}

// TestArgoCDStaysInTheRepository: an Application cannot make generate read
// a file outside its repository or reach the network, by any of the ways a
// security review found: an in-repository link followed by "..", a link
// in the chart that leads out, or a kustomization with a remote resource. Each is refused, naming the
// application and the entry; the outside file's content is never printed
// and the remote resource is never fetched. A comma in a values file
// entry (helm splits --values on commas) is part of one path in the
// repository.
func TestArgoCDStaysInTheRepository(t *testing.T) {
	plugin := shippedPlugin(t)
	repo := argoRepo(t)
	app := filepath.Join(repo, "apps", "web")
	const secret = "tenant-b-password-4711"
	outside := filepath.Join(filepath.Dir(repo), "outside")
	testfs.Write(t, outside, map[string]string{"secret.yaml": "greeting: " + secret + "\n"})
	// A folder named like the entry, so the entry exists as one path.
	testfs.Write(t, app, map[string]string{"v.yaml," + outside + "/secret.yaml": "x: 1\n"})
	// envs/s leads to apps: "envs/s/../.." is, lexically, the repository's
	// top (where a decoy lies), and, as the kernel resolves it, the folder
	// above the repository. (A link in the chart's own folder would make
	// the chart a loop helm cannot load either.)
	testfs.Write(t, repo, map[string]string{"outside/secret.yaml": "greeting: decoy\n"})
	if err := os.Symlink("../apps", filepath.Join(repo, "envs", "s")); err != nil {
		t.Fatal(err)
	}
	var fetched atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fetched.Add(1)
		fmt.Fprint(w, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: remote\ndata:\n  leaked: "+secret+"\n")
	}))
	defer srv.Close()
	testfs.Write(t, repo, map[string]string{
		"apps/kust/kustomization.yaml": "resources:\n- cm.yaml\n- " + srv.URL + "/cm.yaml\n",
		"apps/kust/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: local\n",
	})
	// A chart whose template is a link to a manifest outside (Argo CD's
	// untar refuses such links; a checkout unpacked by anything else,
	// as in CI, keeps them).
	testfs.Write(t, outside, map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: leak\ndata:\n  password: " + secret + "\n"})
	testfs.Write(t, repo, map[string]string{"apps/leaky/Chart.yaml": "apiVersion: v2\nname: leaky\nversion: 0.1.0\n"})
	if err := os.MkdirAll(filepath.Join(repo, "apps", "leaky", "templates"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "cm.yaml"), filepath.Join(repo, "apps", "leaky", "templates", "cm.yaml")); err != nil {
		t.Fatal(err)
	}

	for name, tc := range map[string]struct {
		app     string
		params  []argoParam
		message string
	}{
		"values file through a link and ..": {
			app:     "web",
			params:  []argoParam{{Name: "values-files", Array: []string{"../../envs/s/../../outside/secret.yaml"}}},
			message: `values file "../../envs/s/../../outside/secret.yaml" is outside the repository`,
		},
		"chart through a link and ..": {
			app:     "web",
			params:  []argoParam{{Name: "chart", String: str("../../envs/s/../../outside")}},
			message: `chart "../../envs/s/../../outside" is outside the repository`,
		},
		"a link in the chart to a file outside": {
			app:     "leaky",
			message: `chart apps/leaky: templates/cm.yaml: outside the repository`,
		},
		"kustomization with a remote resource": {
			app:     "kust",
			message: `resources entry "` + srv.URL + `/cm.yaml" is remote`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			r := runPluginCommand(t, plugin.Spec.Generate.Command, filepath.Join(repo, "apps", tc.app), argoEnv(t, tc.app, "apps/"+tc.app, tc.params, nil))
			if r.code == 0 || r.stdout != "" {
				t.Fatalf("want a refusal with nothing on stdout:\n%s", r)
			}
			if !strings.Contains(r.stderr, tc.message) || !strings.Contains(r.stderr, "application "+tc.app) {
				t.Errorf("stderr does not name the application and say %q:\n%s", tc.message, r.stderr)
			}
			if strings.Contains(r.stdout+r.stderr, secret) {
				t.Errorf("the outside file's content was printed:\n%s", r)
			}
			// Errors name paths as the Application wrote them, never the
			// sidecar's folders.
			if strings.Contains(r.stderr, filepath.Dir(repo)) {
				t.Errorf("the error names the sidecar's folders:\n%s", r.stderr)
			}
		})
	}
	if n := fetched.Load(); n != 0 {
		t.Errorf("the remote kustomize resource was fetched %d times", n)
	}

	// A comma is part of a values file's path, not helm's separator of two
	// files: the entry is the file of that name in the repository.
	comma := runPluginCommand(t, plugin.Spec.Generate.Command, app, argoEnv(t, "web", "apps/web",
		[]argoParam{{Name: "values-files", Array: []string{"v.yaml," + outside + "/secret.yaml"}}, {Name: "set", Map: map[string]string{"greeting": "x"}}}, nil))
	if comma.code != 0 || strings.Contains(comma.stdout+comma.stderr, secret) || !strings.Contains(comma.stdout, "kind: Deployment") {
		t.Errorf("a values file with a comma:\n%s", comma)
	}

	// The sidecar may hold credentials for a cluster (here the test's
	// KUBECONFIG is in generate's environment): a chart's lookup still
	// reaches no cluster, so another namespace's data is not rendered.
	ns := namespace(t)
	if _, err := clientset(t).CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "tenant-b"}, Data: map[string]string{"password": secret},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testfs.Write(t, repo, map[string]string{
		"apps/peek/Chart.yaml":        "apiVersion: v2\nname: peek\nversion: 0.1.0\n",
		"apps/peek/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: peek\ndata:\n  seen: {{ (lookup \"v1\" \"ConfigMap\" \"" + ns + "\" \"tenant-b\").data | toJson | quote }}\n",
	})
	if os.Getenv("KUBECONFIG") == "" {
		t.Fatal("the test's environment has no KUBECONFIG to withhold")
	}
	peek := runPluginCommand(t, plugin.Spec.Generate.Command, filepath.Join(repo, "apps", "peek"), argoEnv(t, "peek", "apps/peek", nil, nil))
	if peek.code != 0 || !strings.Contains(peek.stdout, `seen: "null"`) || strings.Contains(peek.stdout+peek.stderr, secret) {
		t.Errorf("a chart's lookup under generate:\n%s", peek)
	}
}

// TestArgoCDOperatorInjectors: with the operator's file of named
// injectors, an Application picks one by name and sets an exposed
// parameter; the output is what template prints for the operator's
// command line. A program the operator only allows by name cannot be
// given a file-reading flag through a named injector's parameter, and an
// undefined name is refused.
func TestArgoCDOperatorInjectors(t *testing.T) {
	plugin := shippedPlugin(t)
	repo := argoRepo(t)
	app := filepath.Join(repo, "apps", "web")
	operator := filepath.Join(t.TempDir(), "injectors.yaml")
	testfs.Write(t, filepath.Dir(operator), map[string]string{"injectors.yaml": `injectors:
  - name: mesh
    command: [sidecar-injector, --name, "{{proxy}}", FILE]
    parameters:
      - name: proxy
        pattern: '[a-z-]{1,30}'
        default: mesh-proxy
`})
	env := func(params []argoParam) []string { return argoEnv(t, "web", "apps/web", params, nil) }
	// The operator allows no program by name: only the named injector.
	policy := []string{"--allowed-commands=", "--operator-injectors=" + operator}
	gen := runPluginCommand(t, plugin.Spec.Generate.Command, app, env([]argoParam{
		{Name: "operator-injector", Array: []string{"mesh"}},
		{Name: "operator-injector-set", Map: map[string]string{"mesh.proxy": "edge-proxy"}},
	}), policy...)
	if gen.code != 0 {
		t.Fatalf("generate failed:\n%s", gen)
	}
	tmpl := command{dir: app}.mustRun(t, filepath.Join(binDir, "helm-inject"), "template", "web", ".",
		"--namespace", "shop", "--include-crds", "--kube-version", "1.31.4",
		"--api-versions", "v1,apps/v1,batch/v1,monitoring.coreos.com/v1,monitoring.coreos.com/v1/ServiceMonitor",
		"--inject", "sidecar-injector --name edge-proxy FILE")
	if gen.stdout != tmpl.stdout {
		t.Fatalf("generate and template differ\ngenerate:\n%s\ntemplate:\n%s", gen.stdout, tmpl.stdout)
	}
	if d := workloads(t, gen.stdout)["Deployment/web-web"]; !contains(d.containers, "edge-proxy") {
		t.Errorf("Deployment containers %v: want edge-proxy", d.containers)
	}

	for name, tc := range map[string]struct {
		params  []argoParam
		message string
	}{
		"a value outside the pattern": {
			params: []argoParam{{Name: "operator-injector", Array: []string{"mesh"}},
				{Name: "operator-injector-set", Map: map[string]string{"mesh.proxy": "x --values=/etc/passwd"}}},
			message: `injector "mesh": parameter "proxy": "x --values=/etc/passwd" does not match the operator's pattern`,
		},
		"an injector the operator did not define": {
			params:  []argoParam{{Name: "operator-injector", Array: []string{"sed"}}},
			message: `the operator defines no injector "sed" (defined: mesh;`,
		},
		"an own command line, no program allowed": {
			params:  []argoParam{{Name: "inject", Array: []string{"sidecar-injector FILE"}}},
			message: `runs "sidecar-injector", which this plugin does not allow (allowed: none;`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			r := runPluginCommand(t, plugin.Spec.Generate.Command, app, env(tc.params), policy...)
			if r.code == 0 || r.stdout != "" || !strings.Contains(r.stderr, tc.message) || !strings.Contains(r.stderr, "application web") {
				t.Errorf("want a refusal naming the application and saying %q:\n%s", tc.message, r)
			}
		})
	}
}
