package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"github.com/helm-inject/helm-inject/internal/benchchart"
	"github.com/helm-inject/helm-inject/internal/testfs"
)

// TestApplyWritesWhatHelm4Writes: an install and an upgrade by
// helm-inject apply (one cluster view, parallel writes) leave the cluster
// as helm 4's own `upgrade --install` leaves it: the same stored manifest,
// and every object of the release with the same content and the same
// managed fields (manager, operation, API version and fields), on the
// benchmark chart and on the e2e suite's charts. The two releases share a
// name and live in two namespaces; the namespaces' names are the only
// difference allowed.
func TestApplyWritesWhatHelm4Writes(t *testing.T) {
	bench := filepath.Join(t.TempDir(), "bench")
	if err := benchchart.Write(bench, 30); err != nil {
		t.Fatal(err)
	}
	dc, err := dynamic.NewForConfig(cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	groups, err := restmapper.GetAPIGroupResources(disc)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDiscoveryRESTMapper(groups)
	fixtures := filepath.Join(repoRoot(t), "fixtures", "charts")
	h4 := command{}
	for _, c := range []struct {
		name, chart string
		first, then []string
	}{
		{"bench", bench, []string{"--set", "level=r1"}, []string{"--set", "level=r2", "--set", "replicas=2"}},
		{"api", filepath.Join(fixtures, "api"), nil, []string{"--set", "logLevel=debug"}},
		{"webapp", filepath.Join(fixtures, "webapp"), nil, []string{"--set", "replicas=3", "--set", "cache.enabled=false"}},
		{"whitespace", filepath.Join(fixtures, "whitespace"), nil, []string{"--set", "unused=1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			nsHelm, nsInject := namespace(t), namespace(t)
			for _, step := range [][]string{c.first, c.then} {
				h4.mustRun(t, helm4Bin(t), append([]string{"upgrade", "--install", "same", c.chart, "-n", nsHelm, "--no-hooks"}, step...)...)
				mustHelmInject(t, append([]string{"apply", "same", c.chart, "-n", nsInject, "--no-hooks"}, step...)...)
			}
			want := h4.mustRun(t, helm4Bin(t), "get", "manifest", "same", "-n", nsHelm).stdout
			got := h4.mustRun(t, helm4Bin(t), "get", "manifest", "same", "-n", nsInject).stdout
			if strings.ReplaceAll(got, nsInject, "NS") != strings.ReplaceAll(want, nsHelm, "NS") {
				t.Errorf("stored manifests differ:\n%s", firstDifference(strings.ReplaceAll(want, nsHelm, "NS"), strings.ReplaceAll(got, nsInject, "NS")))
			}
			objs := objectsOf(t, want)
			if len(objs) == 0 {
				t.Fatal("the release has no objects: the case tests nothing")
			}
			for _, key := range slices.Sorted(maps.Keys(objs)) {
				o := unstructured.Unstructured{Object: objs[key]}
				m, err := mapper.RESTMapping(o.GroupVersionKind().GroupKind(), o.GroupVersionKind().Version)
				if err != nil {
					t.Fatalf("%s: %v", key, err)
				}
				live := func(ns string) string {
					t.Helper()
					r := dc.Resource(m.Resource).Namespace(ns)
					if m.Scope.Name() != "namespace" {
						r = dc.Resource(m.Resource)
					}
					obj, err := r.Get(t.Context(), o.GetName(), metav1.GetOptions{})
					if err != nil {
						t.Fatalf("%s in %s: %v", key, ns, err)
					}
					return normalizedObject(t, obj, m.Resource, ns)
				}
				if w, g := live(nsHelm), live(nsInject); w != g {
					t.Errorf("%s after helm 4's upgrade and after helm-inject's apply:\n%s", key, firstDifference(w, g))
				}
			}
		})
	}
}

// normalizedObject is obj as JSON without what the API server and the
// suite's controllers write (uid and where it is copied, resource version,
// times, status and its managers, a Service's cluster IPs), and with its
// namespace's name replaced by NS: what helm's writes decide.
func normalizedObject(t *testing.T, obj *unstructured.Unstructured, gvr schema.GroupVersionResource, ns string) string {
	t.Helper()
	o := obj.DeepCopy().Object
	uid := string(obj.GetUID())
	md := o["metadata"].(map[string]any)
	for _, k := range []string{"uid", "resourceVersion", "creationTimestamp", "generation"} {
		delete(md, k)
	}
	delete(o, "status")
	// The deployment controller's revision, written when it gets to it.
	if a, ok := md["annotations"].(map[string]any); ok {
		delete(a, "deployment.kubernetes.io/revision")
	}
	if mf, ok := md["managedFields"].([]any); ok {
		var helms []any
		for _, e := range mf {
			entry := e.(map[string]any)
			if entry["manager"] == "helm" {
				delete(entry, "time")
				helms = append(helms, entry)
			}
		}
		md["managedFields"] = helms
	}
	if gvr.Resource == "services" {
		if spec, ok := o["spec"].(map[string]any); ok && spec["clusterIP"] != "None" {
			delete(spec, "clusterIP")
			delete(spec, "clusterIPs")
		}
	}
	b, err := json.MarshalIndent(o, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	out := strings.ReplaceAll(strings.ReplaceAll(string(b), ns, "NS"), uid, "UID")
	// The API server's service account token volume of a pod: a random name.
	return tokenVolume.ReplaceAllString(out, "kube-api-access-XXXXX")
}

var tokenVolume = regexp.MustCompile(`kube-api-access-[a-z0-9]{5}`)

// TestApplyRefusesUnknownFieldsAsHelm4: on an API server that validates
// fields itself (1.27 and newer, where apply keeps no client-side
// validator), an object with a field its schema does not have is refused
// by the server's strict validation, for apply as for helm 4, with the
// same message, and nothing is created.
func TestApplyRefusesUnknownFieldsAsHelm4(t *testing.T) {
	chart := t.TempDir()
	testfs.Write(t, chart, map[string]string{
		"Chart.yaml":         "apiVersion: v2\nname: badf\nversion: 0.1.0\n",
		"templates/cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: badf-a\nbogusField: 1\ndata:\n  a: b\n",
		"templates/cm2.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: badf-b\ndata:\n  a: b\n",
	})
	ns := namespace(t)
	h4 := command{}.run(t, helm4Bin(t), "upgrade", "--install", "badf", chart, "-n", ns)
	hi := helmInject(t, "apply", "badf", chart, "-n", ns)
	if h4.code == 0 || hi.code == 0 {
		t.Fatalf("an unknown field accepted:\nhelm 4: %s\nhelm-inject: %s", h4, hi)
	}
	const server = `.bogusField: field not declared in schema`
	if !strings.Contains(h4.stderr, server) || !strings.Contains(hi.stderr, server) {
		t.Errorf("want the server's %q from both:\nhelm 4: %s\nhelm-inject: %s", server, h4.stderr, hi.stderr)
	}
}

// TestApplyRefusesAnUnownedObjectAsHelm4: an install whose chart has an
// object that already exists outside any release stops before writing
// anything, with helm 4's own error, now that helm-inject reads the
// objects for that check at once (release/readahead.go); with
// --take-ownership both adopt it.
func TestApplyRefusesAnUnownedObjectAsHelm4(t *testing.T) {
	chart := t.TempDir()
	testfs.Write(t, chart, map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: unowned\nversion: 0.1.0\n",
		"templates/cm.yaml": "{{ range until 5 }}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ $.Release.Name }}-{{ . }}\ndata:\n  a: b\n{{ end }}\n",
	})
	ns := namespace(t)
	for _, name := range []string{"h4-3", "hi-3"} {
		if _, err := clientset(t).CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string]string{"pre": "existing"},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	h4 := command{}.run(t, helm4Bin(t), "upgrade", "--install", "h4", chart, "-n", ns)
	hi := helmInject(t, "apply", "hi", chart, "-n", ns)
	if h4.code == 0 || hi.code == 0 {
		t.Fatalf("an object outside the release adopted:\nhelm 4: %s\nhelm-inject: %s", h4, hi)
	}
	refusal := func(r result, release string) string {
		_, after, _ := strings.Cut(r.stderr, fmt.Sprintf(`ConfigMap "%s-3" in namespace %q exists and cannot be imported`, release, ns))
		return strings.ReplaceAll(strings.TrimSpace(after), `"`+release+`"`, `"RELEASE"`)
	}
	if got, want := refusal(hi, "hi"), refusal(h4, "h4"); want == "" || got != want {
		t.Errorf("helm-inject's refusal %q, want helm 4's %q\nhelm 4: %s\nhelm-inject: %s", got, want, h4, hi)
	}
	cms, err := clientset(t).CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cm := range cms.Items {
		if strings.HasPrefix(cm.Name, "hi-") && cm.Name != "hi-3" || cm.Name == "hi-3" && cm.Labels["app.kubernetes.io/managed-by"] != "" {
			t.Errorf("a refused install wrote ConfigMap %s", cm.Name)
		}
	}

	mustHelmInject(t, "apply", "hi", chart, "-n", ns, "--take-ownership")
	cm, err := clientset(t).CoreV1().ConfigMaps(ns).Get(t.Context(), "hi-3", metav1.GetOptions{})
	if err != nil || cm.Annotations["meta.helm.sh/release-name"] != "hi" {
		t.Errorf("--take-ownership did not adopt hi-3: %v %v", err, cm.Annotations)
	}
}
