package release

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/yaml"

	release "helm.sh/helm/v4/pkg/release/v1"

	"github.com/helm-inject/helm-inject/chartify"
	"github.com/helm-inject/helm-inject/drift"
	"github.com/helm-inject/helm-inject/inject"
	"github.com/helm-inject/helm-inject/manifest"
)

// These tests run the live view's logic on client-go's in-memory
// clientsets; e2e/live_test.go runs it on the real control plane with
// controllers and kwok.

var controller = true

func owner(name string, uid types.UID) []metav1.OwnerReference {
	return []metav1.OwnerReference{{Name: name, UID: uid, Controller: &controller}}
}

func containers(specs ...string) []corev1.Container {
	var out []corev1.Container
	for _, s := range specs {
		name, image, _ := strings.Cut(s, "=")
		out = append(out, corev1.Container{Name: name, Image: image})
	}
	return out
}

func pod(name, ns string, refs []metav1.OwnerReference, ready bool, status string, labels map[string]string, spec corev1.PodSpec) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels, OwnerReferences: refs,
		Annotations: map[string]string{}}, Spec: spec}
	if status != "" {
		p.Annotations[inject.StatusAnnotation] = status
	}
	if ready {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	}
	return p
}

func unstructuredFrom(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(y), &obj); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: obj}
}

const (
	v100 = `{"injectors":[{"name":"log-shipper","version":"1.0.0"}]}`
	v110 = `{"injectors":[{"name":"log-shipper","version":"1.1.0"}]}`
)

// TestWorkloadPodsOfADeployment: pods are grouped by the ReplicaSet that
// made them, the newest revision current and first; readiness, injector
// versions, images, and a container the ReplicaSet's template lacks (a
// webhook's) are shown; pods and ReplicaSets of another owner are not.
func TestWorkloadPodsOfADeployment(t *testing.T) {
	const ns = "shop"
	sel := map[string]string{"app": "web"}
	rs := func(name string, uid types.UID, rev string, ownerUID types.UID, spec corev1.PodSpec) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: uid, Labels: sel,
			Annotations: map[string]string{"deployment.kubernetes.io/revision": rev}, OwnerReferences: owner("web", ownerUID)},
			Spec: appsv1.ReplicaSetSpec{Template: corev1.PodTemplateSpec{Spec: spec}}}
	}
	oldSpec := corev1.PodSpec{Containers: containers("web=web:1", "log-shipper=fluent-bit:2.2.0")}
	newSpec := corev1.PodSpec{InitContainers: containers("log-shipper=fluent-bit:3.0.4"), Containers: containers("web=web:1")}
	webhooked := oldSpec
	webhooked.Containers = append(containers("web=web:1", "log-shipper=fluent-bit:2.2.0"), containers("istio-proxy=proxyv2:1.27.1")...)
	cs := kubefake.NewClientset(
		rs("web-old", "rs-old", "1", "dep", oldSpec),
		rs("web-new", "rs-new", "2", "dep", newSpec),
		rs("web-other", "rs-other", "9", "someone-else", oldSpec),
		pod("web-old-a", ns, owner("web-old", "rs-old"), true, v100, sel, webhooked),
		pod("web-new-a", ns, owner("web-new", "rs-new"), false, v110, sel, newSpec),
		pod("web-new-b", ns, owner("web-new", "rs-new"), true, v110, sel, newSpec),
		pod("web-other-a", ns, owner("web-other", "rs-other"), true, v100, sel, oldSpec),
		// Same name, another ReplicaSet (recreated): not this one's.
		pod("web-new-impostor", ns, owner("web-new", "rs-gone"), true, v100, sel, oldSpec),
		pod("unselected", ns, owner("web-new", "rs-new"), true, v100, map[string]string{"app": "other"}, oldSpec),
	)
	dep := unstructuredFrom(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop, uid: dep}\nspec:\n  selector: {matchLabels: {app: web}}\n")
	got, err := workloadPods(t.Context(), cs, dep)
	if err != nil {
		t.Fatal(err)
	}
	want := LiveWorkload{Kind: "Deployment", Name: "web", Templates: []PodTemplate{
		{Name: "web-new", Revision: 2, Current: true, Pods: 2, Ready: 1, Injectors: []string{"log-shipper@1.1.0"}, Containers: []string{"init:log-shipper=fluent-bit:3.0.4", "web=web:1"}},
		{Name: "web-old", Revision: 1, Pods: 1, Ready: 1, Injectors: []string{"log-shipper@1.0.0"}, Containers: []string{"web=web:1", "log-shipper=fluent-bit:2.2.0", "istio-proxy=proxyv2:1.27.1"}, NotInTemplate: []string{"istio-proxy"}},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pods by template (-want +got):\n%s", diff)
	}

	// A Deployment's first ReplicaSet is its current one.
	cs = kubefake.NewClientset(rs("web-first", "rs-first", "1", "dep", oldSpec), pod("web-first-a", ns, owner("web-first", "rs-first"), true, v100, sel, oldSpec))
	got, err = workloadPods(t.Context(), cs, dep)
	if err != nil || len(got.Templates) != 1 || !got.Templates[0].Current || got.Templates[0].Revision != 1 {
		t.Errorf("one ReplicaSet: %+v, %v; want it current", got.Templates, err)
	}
}

// TestWorkloadPodsOfStatefulSetsAndDaemonSets: pods are grouped by the
// controller revision their controller-revision-hash label names (a
// StatefulSet's pods carry the revision's name, a DaemonSet's its hash);
// the StatefulSet's updateRevision is current, else the newest revision.
func TestWorkloadPodsOfStatefulSetsAndDaemonSets(t *testing.T) {
	const ns = "shop"
	data := func(spec string) runtime.RawExtension {
		return runtime.RawExtension{Raw: []byte(`{"spec":{"template":{"spec":` + spec + `,"$patch":"replace"}}}`)}
	}
	cr := func(name, hash string, rev int64, ownerUID types.UID, spec string) *appsv1.ControllerRevision {
		return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": "db", appsv1.DefaultDaemonSetUniqueLabelKey: hash},
			OwnerReferences: owner("db", ownerUID)}, Revision: rev, Data: data(spec)}
	}
	withHash := func(h string) map[string]string {
		return map[string]string{"app": "db", appsv1.ControllerRevisionHashLabelKey: h}
	}
	spec := corev1.PodSpec{Containers: containers("db=db:1")}
	cs := kubefake.NewClientset(
		cr("db-aaa", "aaa", 1, "sts", `{"containers":[{"name":"db"}]}`),
		cr("db-bbb", "bbb", 2, "sts", `{"containers":[{"name":"db"}]}`),
		cr("db-ccc", "ccc", 1, "ds", `{"containers":[{"name":"db"}]}`),
		cr("db-ddd", "ddd", 2, "ds", `{"containers":[{"name":"db"}]}`),
		pod("db-0", ns, owner("db", "sts"), true, "", withHash("db-aaa"), spec),
		pod("db-1", ns, owner("db", "sts"), true, "", withHash("db-bbb"), corev1.PodSpec{Containers: containers("db=db:1", "istio-proxy=proxyv2")}),
		pod("db-x", ns, owner("db", "ds"), true, "", withHash("ccc"), spec),
		pod("db-y", ns, owner("db", "ds"), false, "", withHash("ddd"), spec),
	)
	// The StatefulSet's update is still at the older revision (a rollback).
	sts := unstructuredFrom(t, "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db, namespace: shop, uid: sts}\nspec:\n  selector: {matchLabels: {app: db}}\nstatus: {updateRevision: db-aaa}\n")
	got, err := workloadPods(t.Context(), cs, sts)
	if err != nil {
		t.Fatal(err)
	}
	want := []PodTemplate{
		{Name: "db-aaa", Revision: 1, Current: true, Pods: 1, Ready: 1, Containers: []string{"db=db:1"}},
		{Name: "db-bbb", Revision: 2, Pods: 1, Ready: 1, Containers: []string{"db=db:1", "istio-proxy=proxyv2"}, NotInTemplate: []string{"istio-proxy"}},
	}
	if diff := cmp.Diff(want, got.Templates); diff != "" {
		t.Errorf("StatefulSet (-want +got):\n%s", diff)
	}
	ds := unstructuredFrom(t, "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: db, namespace: shop, uid: ds}\nspec:\n  selector: {matchLabels: {app: db}}\n")
	got, err = workloadPods(t.Context(), cs, ds)
	if err != nil {
		t.Fatal(err)
	}
	want = []PodTemplate{
		{Name: "db-ddd", Revision: 2, Current: true, Pods: 1, Containers: []string{"db=db:1"}},
		{Name: "db-ccc", Revision: 1, Pods: 1, Ready: 1, Containers: []string{"db=db:1"}},
	}
	if diff := cmp.Diff(want, got.Templates); diff != "" {
		t.Errorf("DaemonSet (-want +got):\n%s", diff)
	}
}

// fakeClients are liveClients over in-memory objects: objs for the
// dynamic client, typed for pods and ReplicaSets.
func fakeClients(t *testing.T, typed []runtime.Object, objs ...*unstructured.Unstructured) liveClients {
	t.Helper()
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Service"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}, meta.RESTScopeRoot)
	var ro []runtime.Object
	for _, o := range objs {
		ro = append(ro, o)
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		{Group: "apps", Version: "v1", Resource: "deployments"}:                       "DeploymentList",
		{Version: "v1", Resource: "configmaps"}:                                       "ConfigMapList",
		{Version: "v1", Resource: "services"}:                                         "ServiceList",
		{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}: "ClusterRoleList",
	}, ro...)
	return liveClients{mapper: mapper, dynamic: dyn, typed: kubefake.NewClientset(typed...)}
}

const liveManifest = `---
# Source: api/templates/all.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
data: {level: info}
---
# Source: api/templates/all.yaml
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  ports: [{port: 80}]
---
# Source: api/templates/all.yaml
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: web-reader
rules: []
---
# Source: api/templates/all.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - {name: web, image: "web:1"}
`

// TestLiveRun: every object of the release is read in the release's
// namespace (a cluster-scoped one without), compared, and reported:
// missing, drifted (an ignore rule applied), or in sync; a workload's
// pods are counted, old ones and per injector version.
func TestLiveRun(t *testing.T) {
	rel := &release.Release{Name: "web", Namespace: "shop", Manifest: liveManifest}
	cm := unstructuredFrom(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-config, namespace: shop}\ndata: {level: debug}\n")
	role := unstructuredFrom(t, "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: web-reader}\nrules: []\n")
	dep := unstructuredFrom(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop, uid: dep}\nspec:\n  replicas: 5\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers: [{name: web, image: 'web:1', terminationMessagePath: /dev/termination-log}]\n")
	sel := map[string]string{"app": "web"}
	spec := corev1.PodSpec{Containers: containers("web=web:1")}
	typed := []runtime.Object{
		&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "shop", UID: "rs1", Labels: sel, Annotations: map[string]string{"deployment.kubernetes.io/revision": "1"}, OwnerReferences: owner("web", "dep")}},
		&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-2", Namespace: "shop", UID: "rs2", Labels: sel, Annotations: map[string]string{"deployment.kubernetes.io/revision": "2"}, OwnerReferences: owner("web", "dep")}},
		pod("a", "shop", owner("web-1", "rs1"), true, v100, sel, spec),
		pod("b", "shop", owner("web-1", "rs1"), true, v100, sel, spec),
		pod("c", "shop", owner("web-2", "rs2"), true, v110, sel, spec),
	}
	c := fakeClients(t, typed, cm, role, dep)
	l := &Live{Ignore: []drift.Ignore{{Kind: "Deployment", Pointer: "/spec/replicas"}}}
	st, err := l.Run(t.Context(), c, rel)
	if err != nil {
		t.Fatal(err)
	}
	wantObjects := []ObjectDrift{
		{Kind: "ConfigMap", Name: "web-config", Namespace: "shop", Differences: []drift.Difference{{Path: "/data/level", Kind: drift.Changed, Want: `"info"`, Got: `"debug"`, Cause: "edited"}}},
		{Kind: "Service", Name: "web", Namespace: "shop", Missing: true},
	}
	if diff := cmp.Diff(wantObjects, st.Objects, cmpopts.IgnoreUnexported(drift.Difference{})); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	if !st.Drifted || st.OldPods != 2 || !cmp.Equal(st.InjectorPods, map[string]int{"log-shipper@1.0.0": 2, "log-shipper@1.1.0": 1}) || len(st.Workloads) != 1 {
		t.Errorf("drifted %v, old pods %d, per version %v, workloads %d; want true, 2, 1.0.0: 2 and 1.1.0: 1, 1", st.Drifted, st.OldPods, st.InjectorPods, len(st.Workloads))
	}

	// Without drift and old pods the release is in sync.
	inSync := &release.Release{Name: "web", Namespace: "shop", Manifest: "---\n# Source: a.yaml\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: web-reader\nrules: []\n"}
	st, err = l.Run(t.Context(), c, inSync)
	if err != nil || st.Drifted || st.OldPods != 0 || len(st.Objects) != 0 {
		t.Errorf("an unchanged release: %+v, %v", st, err)
	}
	// A kind the cluster does not serve is an error naming the object.
	unknown := &release.Release{Name: "web", Namespace: "shop", Manifest: "---\n# Source: a.yaml\napiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n"}
	if _, err := l.Run(t.Context(), c, unknown); err == nil || !strings.Contains(err.Error(), `release "web": example.com/v1 Widget w: the cluster does not serve example.com/v1, Kind=Widget`) {
		t.Errorf("an unserved kind: %v", err)
	}
}

// TestThreeWay: diff --three-way-merge's sides: the live object through
// the new manifest (an edited field and an added container show, the
// API server's defaults do not), an object the apply removes as the
// cluster has it, one the cluster lacks as added, hooks against the
// release record.
func TestThreeWay(t *testing.T) {
	parse := func(source, content string) manifest.Document {
		d, err := manifest.Parse(source, content)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	deploy := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - name: web\n        image: web:2\n"
	hook := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: smoke\n  annotations:\n    helm.sh/hook: test\nspec:\n  containers: [{name: t, image: 'curl:2'}]"
	p := &plan{namespace: "shop", rendered: &chartify.Rendered{Documents: []manifest.Document{
		parse("t/deploy.yaml", deploy),
		parse("t/svc.yaml", "apiVersion: v1\nkind: Service\nmetadata:\n  name: new\nspec:\n  ports: [{port: 80}]"),
		parse("t/hook.yaml", hook),
	}}}
	recorded := []manifest.Document{
		parse("t/deploy.yaml", deploy),
		parse("t/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: old\ndata: {a: b}"),
		parse("t/hook.yaml", strings.Replace(hook, "curl:2", "curl:1", 1)),
	}
	live := unstructuredFrom(t, `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 1
  template:
    spec:
      dnsPolicy: ClusterFirst
      containers:
      - {name: web, image: 'web:1', terminationMessagePath: /dev/termination-log}
      - {name: debug, image: 'busybox:1.36'}
`)
	oldCM := unstructuredFrom(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: old, namespace: shop}\ndata: {a: b}\n")
	changes, notes, err := threeWay(t.Context(), fakeClients(t, nil, live, oldCM), p, recorded)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range changes {
		got = append(got, string(c.Type)+" "+c.ID.Kind+"/"+c.ID.Name+"\n"+c.Before+"\n=>\n"+c.After)
	}
	want := []string{
		"changed Deployment/web\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - image: web:1\n        name: web\n      - image: busybox:1.36\n        name: debug\n" +
			"=>\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - image: web:2\n        name: web",
		"added Service/new\n\n=>\napiVersion: v1\nkind: Service\nmetadata:\n  name: new\nspec:\n  ports:\n  - port: 80",
		"changed Pod/smoke\n" + strings.Replace(hook, "curl:2", "curl:1", 1) + "\n=>\n" + hook,
		"removed ConfigMap/old\napiVersion: v1\ndata:\n  a: b\nkind: ConfigMap\nmetadata:\n  name: old\n=>\n",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	wantNotes := []string{"apps/v1 Deployment web: /spec/template/spec/containers/1 added in the cluster; an apply keeps it (see docs/live.md to restore the release's state)"}
	if diff := cmp.Diff(wantNotes, notes); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
}
