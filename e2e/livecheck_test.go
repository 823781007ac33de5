package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/helm-inject/helm-inject/internal/testenv"
	"github.com/helm-inject/helm-inject/internal/testfs"
)

// requestLog is a proxy in front of the test control plane that records
// every request it forwards, as "METHOD path".
type requestLog struct {
	mu       sync.Mutex
	requests []string
}

// Writes are the requests that are not reads (GET).
func (l *requestLog) Writes() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, r := range l.requests {
		if !strings.HasPrefix(r, "GET ") {
			out = append(out, r)
		}
	}
	return out
}

// Count is how many requests since the first skip were exactly r.
func (l *requestLog) Count(skip int, r string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, q := range l.requests[skip:] {
		if q == r {
			n++
		}
	}
	return n
}

func (l *requestLog) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.requests)
}

// countingKubeconfig starts the proxy and writes a kubeconfig that
// reaches the cluster through it (the proxy adds the admin credentials).
func countingKubeconfig(t *testing.T) (string, *requestLog) {
	t.Helper()
	upstream, err := url.Parse(cluster.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := rest.TransportFor(cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(upstream)
	proxy.Transport, proxy.FlushInterval = tr, -1
	log := &requestLog{}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.mu.Lock()
		log.requests = append(log.requests, r.Method+" "+r.URL.Path)
		log.mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["counted"] = &clientcmdapi.Cluster{Server: srv.URL, InsecureSkipTLSVerify: true}
	cfg.AuthInfos["counted"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["counted"] = &clientcmdapi.Context{Cluster: "counted", AuthInfo: "counted"}
	cfg.CurrentContext = "counted"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path, log
}

// revisionsOf lists a release's revisions as helm history does.
func revisionsOf(t *testing.T, rel, ns string) int {
	t.Helper()
	return strings.Count(mustHelm(t, "history", rel, "-n", ns).stdout, "\n") - 1
}

// TestApplyChecksTheCluster: apply of an unchanged chart reads the
// cluster, and ends where helm 4's `upgrade --install` of the same chart
// ends in another namespace. In sync (a controller's defaults, another
// manager's annotation): no revision and not one write. A deleted
// ConfigMap: a new revision creates it, as helm 4's does. An image
// changed with kubectl set image: refused, naming the field, as helm 4's
// server-side apply refuses it, and nothing written; with
// --force-conflicts taken back, as helm 4's. diff tells the same.
func TestApplyChecksTheCluster(t *testing.T) {
	chart := filepath.Join(repoRoot(t), "fixtures", "charts", "api")
	nsHelm, nsInject := namespace(t), namespace(t)
	h4 := command{}
	helm4Upgrade := func(extra ...string) result {
		return h4.run(t, helm4Bin(t), append([]string{"upgrade", "--install", "drift", chart, "-n", nsHelm}, extra...)...)
	}
	kubeconfig, requests := countingKubeconfig(t)
	counted := command{env: []string{"KUBECONFIG=" + kubeconfig}}
	apply := func(extra ...string) result {
		return counted.run(t, filepath.Join(binDir, "helm-inject"), append([]string{"apply", "drift", chart, "-n", nsInject}, extra...)...)
	}
	diff := func() result {
		return counted.run(t, filepath.Join(binDir, "helm-inject"), "diff", "drift", chart, "-n", nsInject, "--detailed-exitcode")
	}
	if r := helm4Upgrade(); r.code != 0 {
		t.Fatal(r)
	}
	if r := apply(); r.code != 0 {
		t.Fatal(r)
	}

	// In sync: the API server's defaults, kwok's status and an
	// annotation another manager added are not drift.
	for _, ns := range []string{nsHelm, nsInject} {
		kubectl(t, "-n", ns, "annotate", "deployment", "drift", "team.example/owner=payments")
	}
	before, all := len(requests.Writes()), requests.Len()
	if r := apply(); r.code != 0 || !strings.Contains(r.stdout, `Release "drift" has no changes; the cluster matches revision 1.`) {
		t.Fatalf("apply of the unchanged chart over a cluster in sync:\n%s", r)
	}
	if w := requests.Writes()[before:]; len(w) != 0 {
		t.Errorf("apply of an unchanged release in sync wrote to the cluster: %v", w)
	}
	// One round trip per object of the release.
	for _, object := range []string{"/api/v1/namespaces/" + nsInject + "/secrets/drift-db", "/api/v1/namespaces/" + nsInject + "/configmaps/drift-config",
		"/apis/apps/v1/namespaces/" + nsInject + "/deployments/drift"} {
		if n := requests.Count(all, "GET "+object); n != 1 {
			t.Errorf("the unchanged apply read %s %d times, want once", object, n)
		}
	}
	if r := diff(); r.code != 0 || r.stdout != "" {
		t.Errorf("diff of the release in sync: %s; want exit 0 and nothing", r)
	}
	if n := revisionsOf(t, "drift", nsInject); n != 1 {
		t.Errorf("%d revisions after an unchanged apply, want 1", n)
	}

	// A ConfigMap deleted with kubectl.
	for _, ns := range []string{nsHelm, nsInject} {
		kubectl(t, "-n", ns, "delete", "configmap", "drift-config")
	}
	if r := diff(); r.code != 2 || !strings.Contains(r.stdout, "drift: ConfigMap drift-config (namespace "+nsInject+"): missing from the cluster; apply creates it again") {
		t.Errorf("diff after the ConfigMap was deleted: %s; want exit 2 and the drift", r)
	}
	if r := helm4Upgrade(); r.code != 0 {
		t.Fatalf("helm 4 over the deleted ConfigMap: %s", r)
	}
	r := apply()
	if r.code != 0 || !strings.Contains(r.stdout, "ConfigMap drift-config (namespace "+nsInject+"): missing from the cluster; apply creates it again") || !strings.Contains(r.stdout, `Release "drift" has been upgraded.`) {
		t.Fatalf("apply over the deleted ConfigMap: %s", r)
	}
	for _, ns := range []string{nsHelm, nsInject} {
		if _, err := clientset(t).CoreV1().ConfigMaps(ns).Get(t.Context(), "drift-config", metav1.GetOptions{}); err != nil {
			t.Errorf("namespace %s (helm 4's is %s): the deleted ConfigMap: %v", ns, nsHelm, err)
		}
	}

	// The image changed with kubectl set image: another field manager's.
	image := func(ns string) string {
		d, err := clientset(t).AppsV1().Deployments(ns).Get(t.Context(), "drift", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return d.Spec.Template.Spec.Containers[0].Image
	}
	for _, ns := range []string{nsHelm, nsInject} {
		kubectl(t, "-n", ns, "set", "image", "deployment/drift", "api=registry.example/api:edited")
	}
	h := helm4Upgrade()
	if h.code == 0 || !strings.Contains(h.stderr, `conflict with "kubectl-set"`) {
		t.Fatalf("helm 4 over the edited image: %s; want its conflict", h)
	}
	revisions := revisionsOf(t, "drift", nsInject)
	before = len(requests.Writes())
	r = apply()
	for _, w := range []string{`release "drift"`, "apps/v1 Deployment " + nsInject + "/drift: .spec.template.spec.containers[name=\"api\"].image", `conflict with "kubectl-set"`, "Nothing was written", "--force-conflicts"} {
		if r.code == 0 || !strings.Contains(r.stderr, w) {
			t.Errorf("apply over the edited image lacks %q: %s", w, r)
		}
	}
	for _, w := range requests.Writes()[before:] {
		// The check's dry runs are the only requests that are not reads.
		if !strings.HasPrefix(w, "PATCH ") {
			t.Errorf("the refused apply wrote %s", w)
		}
	}
	if n := revisionsOf(t, "drift", nsInject); n != revisions {
		t.Errorf("the refused apply left %d revisions, want %d", n, revisions)
	}
	if got := image(nsInject); got != "registry.example/api:edited" {
		t.Errorf("the refused apply changed the image to %s", got)
	}
	if r := diff(); r.code != 2 || !strings.Contains(r.stdout, "/spec/template/spec/containers/0/image edited by kubectl-set") {
		t.Errorf("diff over the edited image: %s; want exit 2 and the edit", r)
	}

	if h := helm4Upgrade("--force-conflicts"); h.code != 0 {
		t.Fatalf("helm 4 --force-conflicts: %s", h)
	}
	if r := apply("--force-conflicts"); r.code != 0 || !strings.Contains(r.stdout, "/spec/template/spec/containers/0/image edited by kubectl-set") {
		t.Fatalf("apply --force-conflicts: %s", r)
	}
	for _, ns := range []string{nsHelm, nsInject} {
		if got := image(ns); got != "registry.example/api:3.1" {
			t.Errorf("namespace %s (helm 4's is %s) after --force-conflicts: image %s, want the chart's", ns, nsHelm, got)
		}
	}
	before = len(requests.Writes())
	if r := apply(); r.code != 0 || !strings.Contains(r.stdout, "the cluster matches revision") {
		t.Errorf("apply after the drift was taken back: %s", r)
	}
	if w := requests.Writes()[before:]; len(w) != 0 {
		t.Errorf("apply after the drift was taken back wrote %v", w)
	}
	if r := apply("--skip-live-check"); r.code != 0 || !strings.Contains(r.stdout, "the cluster was not read: --skip-live-check") {
		t.Errorf("apply --skip-live-check: %s", r)
	}
}

// crdYAML is a namespaced CustomResourceDefinition of kind in group,
// serving v1 with any content.
func crdYAML(group, kind, plural string) string {
	return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: ` + plural + `.` + group + `
spec:
  group: ` + group + `
  names: {kind: ` + kind + `, plural: ` + plural + `, singular: ` + strings.ToLower(kind) + `, listKind: ` + kind + `List}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`
}

// TestApplyLearnsKindsMidApply: a chart whose templates/ hold a CRD and
// whose post-install hook is a custom resource of it installs with
// --wait, as with helm 4: the kind that appears during the apply is
// learned.
func TestApplyLearnsKindsMidApply(t *testing.T) {
	chart := filepath.Join(t.TempDir(), "widgets")
	testfs.Write(t, chart, map[string]string{
		"Chart.yaml":         "apiVersion: v2\nname: widgets\nversion: 0.1.0\n",
		"templates/crd.yaml": crdYAML("{{ .Values.group }}", "Widget", "widgets"),
		"templates/hook.yaml": `apiVersion: {{ .Values.group }}/v1
kind: Widget
metadata:
  name: first
  annotations:
    helm.sh/hook: post-install
spec:
  size: 3
`,
	})
	nsHelm, nsInject := namespace(t), namespace(t)
	command{}.mustRun(t, helm4Bin(t), "upgrade", "--install", "widgets", chart, "-n", nsHelm, "--wait", "--timeout", "2m", "--set", "group="+nsHelm+".example.com")
	r := helmInject(t, "apply", "widgets", chart, "-n", nsInject, "--wait", "--timeout", "2m", "--set", "group="+nsInject+".example.com")
	if r.code != 0 {
		t.Fatalf("apply of a CRD in templates/ with a post-install hook of its kind: %s", r)
	}
	for _, ns := range []string{nsHelm, nsInject} {
		kubectl(t, "-n", ns, "get", "widgets."+ns+".example.com", "first")
		// The CRDs, cluster-wide, go with the releases.
		t.Cleanup(func() { afterTest(helm4Bin(t), "uninstall", "widgets", "-n", ns) })
	}
}

// TestFirstInstallRendersWithItsCRDs: a template gated on
// .Capabilities.APIVersions.Has of the chart's own crds/ CRD is part of
// the first install, as helm 4's first install (which creates crds/
// before it renders) stores it; each tool installs the chart's CRD first,
// in a group of its own.
func TestFirstInstallRendersWithItsCRDs(t *testing.T) {
	chart := func(group string) string {
		dir := filepath.Join(t.TempDir(), "gated")
		testfs.Write(t, dir, map[string]string{
			"Chart.yaml":        "apiVersion: v2\nname: gated\nversion: 0.1.0\n",
			"crds/gadgets.yaml": crdYAML(group, "Gadget", "gadgets"),
			"templates/gated.yaml": `{{- if .Capabilities.APIVersions.Has "` + group + `/v1/Gadget" }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: gated
data:
  gadgets: served
{{- end }}
`,
			"templates/always.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: always\n",
		})
		return dir
	}
	nsHelm, nsInject := namespace(t), namespace(t)
	groupHelm, groupInject := nsHelm+".example.com", nsInject+".example.com"
	kubectlBin, err := testenv.Tool(cluster.ToolsBin, "kubectl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		afterTest(kubectlBin, "delete", "crd", "gadgets."+groupHelm, "gadgets."+groupInject, "--ignore-not-found")
	})
	injectChart := chart(groupInject)
	command{}.mustRun(t, helm4Bin(t), "upgrade", "--install", "gated", chart(groupHelm), "-n", nsHelm)
	mustHelmInject(t, "apply", "gated", injectChart, "-n", nsInject)
	want := command{}.mustRun(t, helm4Bin(t), "get", "manifest", "gated", "-n", nsHelm).stdout
	got := command{}.mustRun(t, helm4Bin(t), "get", "manifest", "gated", "-n", nsInject).stdout
	if !strings.Contains(want, "name: gated") {
		t.Fatalf("helm 4's first install lacks the gated ConfigMap: the test shows nothing:\n%s", want)
	}
	if got != want {
		t.Errorf("the first install stored:\n%s\nhelm 4's stored:\n%s", got, want)
	}
	if r := helmInject(t, "diff", "gated", injectChart, "-n", nsInject, "--detailed-exitcode"); r.code != 0 {
		t.Errorf("diff after the first install: %s; want no changes", r)
	}
}

// afterTest runs a clean-up command once the test's context is gone,
// ignoring its outcome.
func afterTest(bin string, args ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = exec.CommandContext(ctx, bin, args...).Run()
}

// TestApplyWaitsWithNothingChanged: apply --wait of an unchanged chart
// whose pods are not ready waits for them, as helm 4's upgrade --wait
// does, and makes no revision.
func TestApplyWaitsWithNothingChanged(t *testing.T) {
	chart := filepath.Join(repoRoot(t), slowstartChart)
	nsHelm, nsInject := namespace(t), namespace(t)
	args := []string{"--no-hooks", "--set", "readyDelay=12s"}
	command{}.mustRun(t, helm4Bin(t), append([]string{"upgrade", "--install", "late", chart, "-n", nsHelm}, args...)...)
	mustHelmInject(t, append([]string{"apply", "late", chart, "-n", nsInject}, args...)...)
	ready := func(ns string) int32 {
		d, err := clientset(t).AppsV1().Deployments(ns).Get(t.Context(), "late-web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return d.Status.ReadyReplicas
	}
	if ready(nsInject) != 0 {
		t.Fatal("the pods are ready before the wait: the test shows nothing")
	}
	var wg sync.WaitGroup
	var h4 result
	wg.Go(func() {
		h4 = command{}.run(t, helm4Bin(t), append([]string{"upgrade", "--install", "late", chart, "-n", nsHelm, "--wait", "--timeout", "2m"}, args...)...)
	})
	start := time.Now()
	r := helmInject(t, append([]string{"apply", "late", chart, "-n", nsInject, "--wait", "--timeout", "2m"}, args...)...)
	took := time.Since(start)
	wg.Wait()
	if h4.code != 0 || ready(nsHelm) == 0 {
		t.Fatalf("helm 4's upgrade --wait: %s, %d ready", h4, ready(nsHelm))
	}
	if r.code != 0 || !strings.Contains(r.stdout, "the cluster matches revision 1, and its resources are ready") {
		t.Fatalf("apply --wait with nothing changed: %s", r)
	}
	if n := ready(nsInject); n == 0 {
		t.Errorf("apply --wait returned after %s with no pod ready", took)
	}
	if n := revisionsOf(t, "late", nsInject); n != 1 {
		t.Errorf("%d revisions, want 1", n)
	}
}

// TestInterruptAtomicInstallOnce: Ctrl-C during an --atomic install is
// reported once and truly: Helm's install uninstalls the release itself
// (as helm 4's CLI does on the same signal), and helm-inject says so
// without trying again.
func TestInterruptAtomicInstallOnce(t *testing.T) {
	chart := stuckChart(t)
	nsHelm, nsInject := namespace(t), namespace(t)
	pending := func(c command, rel string) func(context.Context) (bool, error) {
		return func(context.Context) (bool, error) {
			v, s := releaseState(t, c, rel)
			return v == 1 && s == "pending-install", nil
		}
	}
	args := []string{"--set-string", "nodeSelector.nowhere=true", "--wait", "--timeout", "5m", "--atomic"}
	p := startHelmInject(t, nil, t.TempDir(), append([]string{"apply", "atomic", chart, "-n", nsInject}, args...)...)
	cInject := command{env: []string{"HELM_NAMESPACE=" + nsInject}}
	if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, pending(cInject, "atomic")); err != nil {
		t.Fatalf("never pending-install:\n%s", p.stderr)
	}
	p.stop(t, syscall.SIGINT)
	out := p.stderr.String()
	if strings.Count(out, "uninstalled it (--rollback-on-failure)") != 1 || strings.Contains(out, "could not uninstall") || strings.Contains(out, "not found") {
		t.Errorf("helm-inject after Ctrl-C during an --atomic install:\n%s\nwant one report that it was uninstalled", out)
	}

	h := startProgram(t, helm4Bin(t), nil, t.TempDir(), append([]string{"upgrade", "--install", "atomic", chart, "-n", nsHelm}, args...)...)
	cHelm := command{env: []string{"HELM_NAMESPACE=" + nsHelm}}
	if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, pending(cHelm, "atomic")); err != nil {
		t.Fatalf("helm 4 never pending-install:\n%s", h.stderr)
	}
	h.stop(t, syscall.SIGINT)
	for _, c := range []command{cHelm, cInject} {
		if v, s := releaseState(t, c, "atomic"); v != 0 {
			t.Errorf("%v: after Ctrl-C the release is %d %s, want uninstalled (helm 4 said %q)", c.env, v, s, h.stderr.String())
		}
	}
}
