package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/yaml"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/release/common"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"

	"github.com/helm-inject/helm-inject/chartify"
	"github.com/helm-inject/helm-inject/inject"
)

// fakeCluster is an API server for status and list: the discovery a
// client needs, helm's release records (Secrets labelled owner=helm,
// written by helm's own Secrets driver) and ConfigMaps, answered as an API
// server answers, with the path of every request kept.
type fakeCluster struct {
	t          *testing.T
	srv        *httptest.Server
	mu         sync.Mutex
	records    []corev1.Secret
	configMaps map[string]map[string]any // namespace/name → the object
	paths      []string
}

func newFakeCluster(t *testing.T) *fakeCluster {
	t.Helper()
	c := &fakeCluster{t: t, configMaps: map[string]map[string]any{}}
	c.srv = httptest.NewServer(http.HandlerFunc(c.serve))
	t.Cleanup(c.srv.Close)
	// The discovery cache goes where the test says, not to ~/.kube.
	t.Setenv("KUBECACHEDIR", t.TempDir())
	t.Setenv("HELM_DRIVER", "")
	return c
}

// kubeconfig writes a kubeconfig naming the server and returns its path.
func (c *fakeCluster) kubeconfig() string {
	c.t.Helper()
	p := filepath.Join(c.t.TempDir(), "kubeconfig")
	kc := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: \"" + c.srv.URL + "\"}\n" +
		"users:\n- name: u\n  user: {token: t}\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\ncurrent-context: c\n"
	if err := os.WriteFile(p, []byte(kc), 0o600); err != nil {
		c.t.Fatal(err)
	}
	return p
}

// addRelease stores rel as helm stores it: a Secret written by helm's
// Secrets driver.
func (c *fakeCluster) addRelease(rel *helmrelease.Release) {
	c.t.Helper()
	cs := k8sfake.NewClientset()
	d := driver.NewSecrets(cs.CoreV1().Secrets(rel.Namespace))
	if err := d.Create(fmt.Sprintf("sh.helm.release.v1.%s.v%d", rel.Name, rel.Version), rel); err != nil {
		c.t.Fatal(err)
	}
	list, err := cs.CoreV1().Secrets(rel.Namespace).List(c.t.Context(), metav1.ListOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.records = append(c.records, list.Items...)
}

// addConfigMap makes a ConfigMap the release owns (helm's ownership
// label and annotations) with data.
func (c *fakeCluster) addConfigMap(release, namespace, name string, data map[string]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.configMaps[namespace+"/"+name] = map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{
			"name": name, "namespace": namespace, "resourceVersion": "1",
			"labels":      map[string]string{"app.kubernetes.io/managed-by": "Helm"},
			"annotations": map[string]string{"meta.helm.sh/release-name": release, "meta.helm.sh/release-namespace": namespace},
		},
		"data": data,
	}
}

// requested reports whether a request's path was p.
func (c *fakeCluster) requested(p string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, q := range c.paths {
		if q == p {
			return true
		}
	}
	return false
}

func (c *fakeCluster) serve(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.paths = append(c.paths, r.URL.Path)
	w.Header().Set("Content-Type", "application/json")
	reply := func(v any) {
		if err := json.NewEncoder(w).Encode(v); err != nil {
			c.t.Error(err)
		}
	}
	notFound := func(resource, name string) {
		w.WriteHeader(http.StatusNotFound)
		reply(map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404,
			"message": fmt.Sprintf("%s %q not found", resource, name), "details": map[string]any{"name": name, "kind": resource}})
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case r.URL.Path == "/version":
		reply(map[string]string{"major": "1", "minor": "33", "gitVersion": "v1.33.0", "platform": "linux/amd64"})
	case r.URL.Path == "/api":
		reply(map[string]any{"kind": "APIVersions", "versions": []string{"v1"},
			"serverAddressByClientCIDRs": []map[string]string{{"clientCIDR": "0.0.0.0/0", "serverAddress": r.Host}}})
	case r.URL.Path == "/apis":
		reply(map[string]any{"kind": "APIGroupList", "apiVersion": "v1", "groups": []any{}})
	case r.URL.Path == "/api/v1":
		reply(map[string]any{"kind": "APIResourceList", "groupVersion": "v1", "resources": []map[string]any{
			{"name": "configmaps", "singularName": "configmap", "namespaced": true, "kind": "ConfigMap", "verbs": []string{"get", "list"}},
			{"name": "secrets", "singularName": "secret", "namespaced": true, "kind": "Secret", "verbs": []string{"get", "list"}},
		}})
	case r.URL.Path == "/api/v1/secrets" || len(parts) == 5 && parts[2] == "namespaces" && parts[4] == "secrets":
		sel, err := labels.Parse(r.URL.Query().Get("labelSelector"))
		if err != nil {
			c.t.Errorf("label selector %q: %v", r.URL.Query().Get("labelSelector"), err)
		}
		items := []corev1.Secret{}
		for _, s := range c.records {
			if (len(parts) == 3 || s.Namespace == parts[3]) && sel.Matches(labels.Set(s.Labels)) {
				items = append(items, s)
			}
		}
		reply(corev1.SecretList{TypeMeta: metav1.TypeMeta{Kind: "SecretList", APIVersion: "v1"}, Items: items})
	case len(parts) == 6 && parts[2] == "namespaces" && parts[4] == "configmaps":
		obj, ok := c.configMaps[parts[3]+"/"+parts[5]]
		switch {
		case !ok:
			notFound("configmaps", parts[5])
		case strings.Contains(r.Header.Get("Accept"), "as=PartialObjectMetadata"):
			reply(map[string]any{"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj["metadata"]})
		default:
			reply(obj)
		}
	default:
		notFound("", r.URL.Path)
	}
}

// shopRelease is revision 1 of a release helm-inject made in namespace
// ns, with log-shipper 1.0.0 recorded and one ConfigMap, shop-config,
// whose data.level is info.
func shopRelease(name, ns string) *helmrelease.Release {
	return &helmrelease.Release{
		Name: name, Namespace: ns, Version: 1,
		Info: &helmrelease.Info{Status: common.StatusDeployed},
		Chart: &chart.Chart{Metadata: &chart.Metadata{Name: "api", Version: "0.9.0", APIVersion: "v2", Annotations: map[string]string{
			chartify.AnnotationSource: "./api", inject.RecordsAnnotation: `[{"name":"log-shipper","version":"1.0.0"}]`,
		}}},
		Manifest: "---\n# Source: api/templates/config.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shop-config\ndata:\n  level: info\n",
	}
}

// shopCluster is a cluster with release shop in prod whose ConfigMap's
// level is live in the cluster: "info" is in sync, another value drift.
func shopCluster(t *testing.T, live string) (*fakeCluster, string) {
	t.Helper()
	c := newFakeCluster(t)
	c.addRelease(shopRelease("shop", "prod"))
	c.addConfigMap("shop", "prod", "shop-config", map[string]string{"level": live})
	return c, c.kubeconfig()
}

// liveJSON is the part of status's and list's -o json this file reads.
type liveJSON struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Outdated  bool   `json:"outdated"`
	Error     string `json:"error"`
	Injectors []struct {
		Name     string `json:"name"`
		Version  string `json:"version"`
		Newest   string `json:"newest"`
		Outdated bool   `json:"outdated"`
	} `json:"injectors"`
	Live *struct {
		Drifted bool `json:"drifted"`
		Objects []struct {
			Kind string `json:"kind"`
			Name string `json:"name"`
		} `json:"objects"`
	} `json:"live"`
}

// TestListLiveDetailedExitCode: list --live --detailed-exitcode exits 2
// when a release drifted and 0 when every release is in sync, in table,
// JSON and YAML alike (a user gating CI on "list -A --live -o json
// --detailed-exitcode" would otherwise see every check pass); without
// --detailed-exitcode drift exits 0; the table has its LIVE column with
// --live alone; a release it cannot read exits 1 in JSON too.
func TestListLiveDetailedExitCode(t *testing.T) {
	_, drifted := shopCluster(t, "debug")
	for _, format := range []string{"table", "json", "yaml"} {
		out, errOut, code := runCLI(t, "list", "-n", "prod", "--live", "--detailed-exitcode", "-o", format, "--kubeconfig", drifted)
		if code != 2 {
			t.Errorf("list --live --detailed-exitcode -o %s on drift: exit %d, want 2: %s%s", format, code, out, errOut)
		}
		if format == "table" {
			continue
		}
		var got []liveJSON
		if err := yaml.Unmarshal([]byte(out), &got); err != nil || len(got) != 1 || got[0].Name != "shop" || got[0].Live == nil || !got[0].Live.Drifted ||
			len(got[0].Live.Objects) != 1 || got[0].Live.Objects[0].Name != "shop-config" {
			t.Errorf("list --live -o %s on drift (%v): %s", format, err, out)
		}
	}
	if out, errOut, code := runCLI(t, "list", "-n", "prod", "--live", "-o", "json", "--kubeconfig", drifted); code != 0 {
		t.Errorf("list --live -o json on drift without --detailed-exitcode: exit %d, want 0: %s%s", code, out, errOut)
	}
	// The LIVE column is --live's, with or without --detailed-exitcode.
	out, errOut, code := runCLI(t, "list", "-n", "prod", "--live", "--kubeconfig", drifted)
	lines := strings.Split(out, "\n")
	if code != 0 || !strings.HasSuffix(strings.TrimSpace(lines[0]), "OUTDATED  LIVE") || !strings.HasSuffix(strings.TrimSpace(lines[1]), "1 object drifted") {
		t.Errorf("list --live: exit %d, want a LIVE column saying 1 object drifted:\n%s%s", code, out, errOut)
	}

	_, inSync := shopCluster(t, "info")
	for _, format := range []string{"table", "json", "yaml"} {
		if out, errOut, code := runCLI(t, "list", "-n", "prod", "--live", "--detailed-exitcode", "-o", format, "--kubeconfig", inSync); code != 0 {
			t.Errorf("list --live --detailed-exitcode -o %s in sync: exit %d, want 0: %s%s", format, code, out, errOut)
		}
	}

	// A release whose injector records do not decode: listed, and exit 1.
	c, kubeconfig := shopCluster(t, "info")
	broken := shopRelease("broken", "prod")
	broken.Chart.Metadata.Annotations[inject.RecordsAnnotation] = "{"
	c.addRelease(broken)
	out, errOut, code = runCLI(t, "list", "-n", "prod", "--live", "-o", "json", "--kubeconfig", kubeconfig)
	var got []liveJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != 1 || len(got) != 2 || got[0].Name != "broken" || got[0].Error == "" ||
		!strings.Contains(errOut, "could not read 1 of 2 releases; its row says why") {
		t.Errorf("list --live -o json with an unreadable release: exit %d (want 1), %v:\n%s%s", code, err, out, errOut)
	}
}

// TestStatusLiveDetailedExitCode: status --live --detailed-exitcode exits
// 2 on drift and 0 in sync, in table, JSON and YAML alike.
func TestStatusLiveDetailedExitCode(t *testing.T) {
	_, drifted := shopCluster(t, "debug")
	_, inSync := shopCluster(t, "info")
	for _, format := range []string{"table", "json", "yaml"} {
		out, errOut, code := runCLI(t, "status", "shop", "-n", "prod", "--live", "--detailed-exitcode", "-o", format, "--kubeconfig", drifted)
		if code != 2 {
			t.Errorf("status --live --detailed-exitcode -o %s on drift: exit %d, want 2: %s%s", format, code, out, errOut)
		}
		if format != "table" {
			var got liveJSON
			if err := yaml.Unmarshal([]byte(out), &got); err != nil || got.Live == nil || !got.Live.Drifted {
				t.Errorf("status --live -o %s on drift (%v): %s", format, err, out)
			}
		}
		if out, errOut, code := runCLI(t, "status", "shop", "-n", "prod", "--live", "--detailed-exitcode", "-o", format, "--kubeconfig", inSync); code != 0 {
			t.Errorf("status --live --detailed-exitcode -o %s in sync: exit %d, want 0: %s%s", format, code, out, errOut)
		}
	}
}

// TestLiveIgnoreDrift: a field --ignore-drift names is not drift: the
// ConfigMap whose data.level an operator changed shows in sync and
// --detailed-exitcode exits 0, in status and in list (a user ignoring
// an HPA's /spec/replicas would otherwise see drift forever).
func TestLiveIgnoreDrift(t *testing.T) {
	_, kubeconfig := shopCluster(t, "debug")
	out, errOut, code := runCLI(t, "status", "shop", "-n", "prod", "--live", "--detailed-exitcode", "--ignore-drift", "ConfigMap:/data/level", "--kubeconfig", kubeconfig)
	if code != 0 || !strings.Contains(out, "LIVE: in sync (no drift, every pod from its workload's current template)") {
		t.Errorf("status --ignore-drift ConfigMap:/data/level: exit %d, want 0 and in sync:\n%s%s", code, out, errOut)
	}
	out, errOut, code = runCLI(t, "list", "-n", "prod", "--live", "--detailed-exitcode", "--ignore-drift", "ConfigMap/shop-config:/data", "--kubeconfig", kubeconfig)
	if code != 0 || !strings.Contains(out, "in sync") {
		t.Errorf("list --ignore-drift ConfigMap/shop-config:/data: exit %d, want 0 and in sync:\n%s%s", code, out, errOut)
	}
	// Another object's rule leaves the drift.
	if out, errOut, code := runCLI(t, "list", "-n", "prod", "--live", "--detailed-exitcode", "--ignore-drift", "ConfigMap/other:/data", "--kubeconfig", kubeconfig); code != 2 {
		t.Errorf("list --ignore-drift for another object: exit %d, want 2:\n%s%s", code, out, errOut)
	}
}

// TestListAllNamespaces: list shows the releases of its namespace (-n),
// list -A those of every namespace, read from every namespace's release
// storage.
func TestListAllNamespaces(t *testing.T) {
	c := newFakeCluster(t)
	c.addRelease(shopRelease("shop", "prod"))
	c.addRelease(shopRelease("web", "stage"))
	kubeconfig := c.kubeconfig()
	names := func(args ...string) string {
		t.Helper()
		out, errOut, code := runCLI(t, append([]string{"list", "-o", "json", "--kubeconfig", kubeconfig}, args...)...)
		var got []liveJSON
		if err := json.Unmarshal([]byte(out), &got); err != nil || code != 0 {
			t.Fatalf("list %v: exit %d, %v: %s%s", args, code, err, out, errOut)
		}
		var s []string
		for _, r := range got {
			s = append(s, r.Namespace+"/"+r.Name)
		}
		return strings.Join(s, " ")
	}
	if got := names("-n", "stage"); got != "stage/web" {
		t.Errorf("list -n stage: %s", got)
	}
	if got := names("-A"); got != "prod/shop stage/web" {
		t.Errorf("list -A: %q, want prod/shop stage/web", got)
	}
	if !c.requested("/api/v1/secrets") {
		t.Error("list -A did not read the release storage of every namespace")
	}
}

// TestStatusAndListShowOutdated: with --injector-library, status shows
// the library's newest version of a recorded built-in injector and says
// OUTDATED, and list says the release is outdated (the shop release
// records log-shipper 1.0.0; examples/injectors has 1.1.0). Without a
// library folder both still work and say nothing is outdated.
func TestStatusAndListShowOutdated(t *testing.T) {
	c := newFakeCluster(t)
	c.addRelease(shopRelease("shop", "prod"))
	kubeconfig := c.kubeconfig()
	lib := "../../examples/injectors"

	out, errOut, code := runCLI(t, "status", "shop", "-n", "prod", "-o", "json", "--injector-library", lib, "--kubeconfig", kubeconfig)
	var st liveJSON
	if err := json.Unmarshal([]byte(out), &st); err != nil || code != 0 || len(st.Injectors) != 1 ||
		st.Injectors[0].Name != "log-shipper" || st.Injectors[0].Version != "1.0.0" || st.Injectors[0].Newest != "1.1.0" || !st.Injectors[0].Outdated || !st.Outdated {
		t.Errorf("status --injector-library: exit %d, %v: want log-shipper 1.0.0, newest 1.1.0, outdated:\n%s%s", code, err, out, errOut)
	}
	out, errOut, code = runCLI(t, "status", "shop", "-n", "prod", "--injector-library", lib, "--kubeconfig", kubeconfig)
	if code != 0 || !regexp.MustCompile(`(?m)^log-shipper +1\.0\.0 +- +1\.1\.0 +yes$`).MatchString(out) {
		t.Errorf("status --injector-library table: exit %d, want NEWEST 1.1.0 and OUTDATED yes:\n%s%s", code, out, errOut)
	}

	out, errOut, code = runCLI(t, "list", "-n", "prod", "-o", "json", "--injector-library", lib, "--kubeconfig", kubeconfig)
	var ls []liveJSON
	if err := json.Unmarshal([]byte(out), &ls); err != nil || code != 0 || len(ls) != 1 || !ls[0].Outdated {
		t.Errorf("list --injector-library: exit %d, %v: want shop outdated:\n%s%s", code, err, out, errOut)
	}

	// No library folder (internal/cli has no ./injectors): nothing outdated.
	out, errOut, code = runCLI(t, "list", "-n", "prod", "-o", "json", "--kubeconfig", kubeconfig)
	ls = nil
	if err := json.Unmarshal([]byte(out), &ls); err != nil || code != 0 || len(ls) != 1 || ls[0].Outdated {
		t.Errorf("list without a library: exit %d, %v: want shop, not outdated:\n%s%s", code, err, out, errOut)
	}
}
