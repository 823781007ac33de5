package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

const webappChart = "fixtures/charts/webapp"

// webappWorkloads are the pod-bearing resources of the webapp fixture for a
// release named rel: manifests, the subchart's Deployment, and both hooks.
func webappWorkloads(rel string) (manifests, hooks []string) {
	return []string{
			"Deployment/" + rel + "-web", "Deployment/" + rel + "-cache", "StatefulSet/" + rel + "-db",
			"DaemonSet/" + rel + "-agent", "Job/" + rel + "-migrate-r1", "CronJob/" + rel + "-report", "Pod/" + rel + "-debug",
		}, []string{
			"Job/" + rel + "-setup", "Pod/" + rel + "-test-connection",
		}
}

func configMapData(t *testing.T, ns, name string) map[string]string {
	t.Helper()
	cm, err := clientset(t).CoreV1().ConfigMaps(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm.Data
}

func linesIn(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// TestApplyIsARealHelmRelease covers the core promise end to end: every
// workload, hook and test pod is injected by one injector run; the release
// is an ordinary Helm release for list, get, status, test, history,
// rollback and uninstall; rendering sees the real revision, the server's
// capabilities and lookup.
func TestApplyIsARealHelmRelease(t *testing.T) {
	ns := namespace(t)
	_, err := clientset(t).CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "webapp-existing"}, Data: map[string]string{"owner": "team-a"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	count := filepath.Join(t.TempDir(), "runs")
	injector := "sidecar-injector f=FILE,count-file=" + count
	apply := func(greeting string) result {
		return mustHelmInject(t, "apply", "shop", webappChart, "-n", ns, "--injector", injector,
			"--set", "greeting="+greeting, "--wait", "--timeout", "2m")
	}

	out := apply("hi")
	if !strings.Contains(out.stdout, `Release "shop" has been installed.`) || !strings.Contains(out.stdout, "REVISION: 1") {
		t.Errorf("apply output:\n%s", out.stdout)
	}
	if n := linesIn(t, count); n != 1 {
		t.Errorf("the injector ran %d times for one release, want 1", n)
	}

	// helm list shows the source chart, not a generated one.
	var list []struct {
		Name, Chart, Status, Revision string
		AppVersion                    string `json:"app_version"`
	}
	if err := json.Unmarshal([]byte(mustHelm(t, "list", "-n", ns, "-o", "json").stdout), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Chart != "webapp-1.4.2" || list[0].AppVersion != "2.7.0" || list[0].Status != "deployed" {
		t.Fatalf("helm list = %+v", list)
	}

	// Every workload and hook carries the sidecar, injected for this release.
	manifests, hooks := webappWorkloads("shop")
	got := workloads(t, mustHelm(t, "get", "manifest", "shop", "-n", ns).stdout)
	gotHooks := workloads(t, mustHelm(t, "get", "hooks", "shop", "-n", ns).stdout)
	for _, list := range []struct {
		names []string
		from  map[string]workload
		what  string
	}{{manifests, got, "helm get manifest"}, {hooks, gotHooks, "helm get hooks"}} {
		for _, name := range list.names {
			w, ok := list.from[name]
			if !ok {
				t.Errorf("%s has no %s", list.what, name)
				continue
			}
			if !contains(w.containers, "sidecar") {
				t.Errorf("%s: %s has containers %v, want a sidecar", list.what, name, w.containers)
			}
			if w.annotations["fixtures.helm-inject.io/injected-for"] != "shop."+ns {
				t.Errorf("%s: %s was not injected with HELM_INJECT_RELEASE/NAMESPACE: %v", list.what, name, w.annotations)
			}
		}
	}

	// helm get values is exactly what the user set.
	var values map[string]any
	if err := json.Unmarshal([]byte(mustHelm(t, "get", "values", "shop", "-n", ns, "-o", "json").stdout), &values); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(values, map[string]any{"greeting": "hi"}) {
		t.Errorf("helm get values = %v, want {greeting: hi}", values)
	}
	if status := mustHelm(t, "status", "shop", "-n", ns).stdout; !strings.Contains(status, "webapp 2.7.0 is installed as shop in "+ns) {
		t.Errorf("helm status shows no notes:\n%s", status)
	}

	// Rendering used the real cluster: revision, server version, lookup.
	data := configMapData(t, ns, "shop-info")
	want := map[string]string{"revision": "1", "isUpgrade": "false", "lookedUpOwner": "team-a", "kubeVersion": "v1.37.2", "template": "{{ .Values.literal }}"}
	for k, v := range want {
		if data[k] != v {
			t.Errorf("ConfigMap shop-info %s = %q, want %q", k, data[k], v)
		}
	}

	// The CRDs of the chart and its subchart are installed, once.
	res, err := clientset(t).Discovery().ServerResourcesForGroupVersion("fixtures.helm-inject.io/v1")
	if err != nil {
		t.Fatal(err)
	}
	var crds []string
	for _, r := range res.APIResources {
		crds = append(crds, r.Name)
	}
	sort.Strings(crds)
	if !reflect.DeepEqual(crds, []string{"caches", "widgets"}) {
		t.Errorf("installed CRDs = %v, want caches and widgets", crds)
	}

	// helm test runs the injected test pod, which succeeds.
	if test := mustHelm(t, "test", "shop", "-n", ns, "--timeout", "2m").stdout; !strings.Contains(test, "Phase:          Succeeded") {
		t.Errorf("helm test:\n%s", test)
	}
	pod, err := clientset(t).CoreV1().Pods(ns).Get(t.Context(), "shop-test-connection", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pod.Spec.Containers) != 2 || pod.Spec.Containers[1].Name != "sidecar" {
		t.Errorf("the test pod that ran has containers %v", pod.Spec.Containers)
	}

	// A second apply is revision 2 and renders as an upgrade.
	rev1 := mustHelm(t, "get", "manifest", "shop", "-n", ns).stdout
	apply("bye")
	data = configMapData(t, ns, "shop-info")
	if data["revision"] != "2" || data["isUpgrade"] != "true" || data["greeting"] != "bye" {
		t.Errorf("after the second apply ConfigMap shop-info = %v", data)
	}
	if n := linesIn(t, count); n != 2 {
		t.Errorf("the injector ran %d times for two applies, want 2", n)
	}
	history := mustHelm(t, "history", "shop", "-n", ns, "-o", "json").stdout
	var revs []struct {
		Revision int
		Status   string
	}
	if err := json.Unmarshal([]byte(history), &revs); err != nil {
		t.Fatal(err)
	}
	if len(revs) != 2 || revs[0].Status != "superseded" || revs[1].Status != "deployed" {
		t.Errorf("helm history = %+v", revs)
	}

	// Rollback restores revision 1's injected manifest.
	mustHelm(t, "rollback", "shop", "1", "-n", ns, "--wait", "--timeout", "2m")
	if now := mustHelm(t, "get", "manifest", "shop", "-n", ns).stdout; now != rev1 {
		t.Errorf("after rollback the manifest differs from revision 1")
	}
	if data := configMapData(t, ns, "shop-info"); data["revision"] != "1" || data["greeting"] != "hi" {
		t.Errorf("after rollback ConfigMap shop-info = %v", data)
	}
	if w := workloads(t, mustHelm(t, "get", "manifest", "shop", "-n", ns).stdout)["Deployment/shop-web"]; !contains(w.containers, "sidecar") {
		t.Errorf("after rollback Deployment/shop-web has containers %v", w.containers)
	}

	// Uninstall removes everything the release created.
	mustHelm(t, "uninstall", "shop", "-n", ns, "--wait", "--timeout", "2m")
	err = wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		deps, err := clientset(t).AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(deps.Items) == 0, nil
	})
	if err != nil {
		t.Errorf("deployments remain after helm uninstall")
	}
}

// TestTemplateEqualsWhatApplyInstalls: template (offline, told the server's
// version) prints exactly the manifest apply stores in the release.
func TestTemplateEqualsWhatApplyInstalls(t *testing.T) {
	ns := namespace(t)
	args := []string{"-n", ns, "--injector", "sidecar-injector f=FILE,image=registry.example/proxy:2", "-f", "fixtures/values/webapp-prod.yaml"}
	mustHelmInject(t, append([]string{"apply", "same", webappChart}, args...)...)
	// helm template prints the manifest helm 4 stores without its
	// trailing white space (the blank line after its last document).
	installed := strings.TrimSpace(mustHelm(t, "get", "manifest", "same", "-n", ns).stdout) + "\n"
	printed := mustHelmInject(t, append([]string{"template", "same", webappChart, "--kube-version", "v1.37.2", "--no-hooks"}, args...)...).stdout
	if printed != installed {
		t.Errorf("template output differs from helm get manifest\n--- template:\n%s\n--- installed:\n%s", printed, installed)
	}
	hooks := mustHelm(t, "get", "hooks", "same", "-n", ns).stdout
	all := mustHelmInject(t, append([]string{"template", "same", webappChart, "--kube-version", "v1.37.2"}, args...)...).stdout
	if !strings.HasPrefix(all, installed) || !strings.Contains(hooks, "name: sidecar") {
		t.Errorf("template with hooks does not start with the installed manifest")
	}
}
