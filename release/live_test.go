package release

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"

	rcommon "helm.sh/helm/v4/pkg/release/common"
	release "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"

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
// dynamic and the metadata client, typed for pods and ReplicaSets.
func fakeClients(t *testing.T, typed []runtime.Object, objs ...*unstructured.Unstructured) liveClients {
	t.Helper()
	var meta []*unstructured.Unstructured
	for _, o := range objs {
		meta = append(meta, o)
	}
	return fakeClientsWithMetadata(t, typed, meta, objs...)
}

// fakeClientsWithMetadata is fakeClients whose metadata client has
// metadataOf, not objs: an object whose metadata changes between the two
// reads.
func fakeClientsWithMetadata(t *testing.T, typed []runtime.Object, metadataOf []*unstructured.Unstructured, objs ...*unstructured.Unstructured) liveClients {
	t.Helper()
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Service"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}, meta.RESTScopeRoot)
	var ro []runtime.Object
	for _, o := range objs {
		ro = append(ro, o)
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		{Group: "apps", Version: "v1", Resource: "deployments"}:                       "DeploymentList",
		{Version: "v1", Resource: "configmaps"}:                                       "ConfigMapList",
		{Version: "v1", Resource: "services"}:                                         "ServiceList",
		{Version: "v1", Resource: "secrets"}:                                          "SecretList",
		{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}: "ClusterRoleList",
	}, ro...)
	var mo []runtime.Object
	scheme := metadatafake.NewTestScheme()
	for _, o := range metadataOf {
		gvk := o.GroupVersionKind()
		scheme.AddKnownTypeWithName(gvk, &metav1.PartialObjectMetadata{})
		scheme.AddKnownTypeWithName(gvk.GroupVersion().WithKind(gvk.Kind+"List"), &metav1.PartialObjectMetadataList{})
		mo = append(mo, &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: o.GetAPIVersion(), Kind: o.GetKind()},
			ObjectMeta: metav1.ObjectMeta{Name: o.GetName(), Namespace: o.GetNamespace(), Labels: o.GetLabels(), Annotations: o.GetAnnotations()}})
	}
	md := metadatafake.NewSimpleMetadataClient(scheme, mo...)
	return liveClients{mapper: mapper, dynamic: dyn, typed: kubefake.NewClientset(typed...), metadata: md}
}

// ownedByRelease gives u helm's ownership label and annotations of release name
// in namespace ns, as helm sets them when it applies an object.
func ownedByRelease(u *unstructured.Unstructured, name, ns string) *unstructured.Unstructured {
	u = u.DeepCopy()
	labels := u.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels["app.kubernetes.io/managed-by"] = "Helm"
	u.SetLabels(labels)
	annotations := u.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations["meta.helm.sh/release-name"], annotations["meta.helm.sh/release-namespace"] = name, ns
	u.SetAnnotations(annotations)
	return u
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
	c := fakeClients(t, typed, ownedByRelease(cm, "web", "shop"), ownedByRelease(role, "web", "shop"), ownedByRelease(dep, "web", "shop"))
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

// TestLiveReadsOnlyWhatTheReleaseOwns: a release record is a Secret
// anyone who may create Secrets in its namespace can write, naming any
// object. The live view reads an object's content only when its metadata,
// read alone, carries helm's ownership label and both annotations of this
// release, in any namespace (the release's own too) and of any scope;
// every other object is listed as not owned, counts as drift, and its
// content is never fetched: no get reaches the dynamic client for it, and
// nothing of it is in the state.
func TestLiveReadsOnlyWhatTheReleaseOwns(t *testing.T) {
	const secret = "hunter2-do-not-print"
	cm := func(ns, name string) *unstructured.Unstructured {
		return unstructuredFrom(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: "+name+", namespace: "+ns+"}\ndata: {password: "+secret+"}\n")
	}
	without := func(u *unstructured.Unstructured, key string) *unstructured.Unstructured {
		u = u.DeepCopy()
		l, a := u.GetLabels(), u.GetAnnotations()
		delete(l, key)
		delete(a, key)
		u.SetLabels(l)
		u.SetAnnotations(a)
		return u
	}
	with := func(u *unstructured.Unstructured, key, value string) *unstructured.Unstructured {
		u = u.DeepCopy()
		if key == "app.kubernetes.io/managed-by" {
			l := u.GetLabels()
			l[key] = value
			u.SetLabels(l)
			return u
		}
		a := u.GetAnnotations()
		a[key] = value
		u.SetAnnotations(a)
		return u
	}
	role := unstructuredFrom(t, "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: admin-ish}\nrules: [{verbs: ['*']}]\n")
	objs := []*unstructured.Unstructured{
		cm("payments", "db-config"),                                     // another namespace, no ownership
		ownedByRelease(cm("payments", "owned-by-db"), "db", "payments"), // another release's
		cm("tenant", "plain"),                                           // the release's namespace, no ownership
		with(ownedByRelease(cm("tenant", "other-ns"), "steal", "tenant"), "meta.helm.sh/release-namespace", "payments"), // same name, other namespace
		with(ownedByRelease(cm("tenant", "other-name"), "steal", "tenant"), "meta.helm.sh/release-name", "db"),
		without(ownedByRelease(cm("tenant", "no-label"), "steal", "tenant"), "app.kubernetes.io/managed-by"),
		with(ownedByRelease(cm("tenant", "other-manager"), "steal", "tenant"), "app.kubernetes.io/managed-by", "Tiller"),
		without(ownedByRelease(cm("tenant", "no-name"), "steal", "tenant"), "meta.helm.sh/release-name"),
		without(ownedByRelease(cm("tenant", "no-namespace"), "steal", "tenant"), "meta.helm.sh/release-namespace"),
		role, // cluster-scoped, no ownership
		ownedByRelease(cm("shared", "mine"), "steal", "tenant"), // another namespace, owned: read
		ownedByRelease(cm("tenant", "own"), "steal", "tenant"),  // read
	}
	var manifest strings.Builder
	doc := func(kind, ns, name, data string) {
		fmt.Fprintf(&manifest, "---\n# Source: steal/templates/all.yaml\napiVersion: v1\nkind: %s\nmetadata:\n  name: %s\n", kind, name)
		if ns != "" {
			fmt.Fprintf(&manifest, "  namespace: %s\n", ns)
		}
		manifest.WriteString(data)
	}
	for _, o := range objs[:len(objs)-3] {
		doc("ConfigMap", o.GetNamespace(), o.GetName(), "data: {password: guess}\n")
	}
	manifest.WriteString("---\n# Source: steal/templates/all.yaml\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: admin-ish\nrules: []\n")
	doc("ConfigMap", "shared", "mine", "data: {password: guess}\n")
	doc("ConfigMap", "", "own", "data: {password: guess}\n")
	doc("ConfigMap", "", "gone", "data: {password: guess}\n")
	rel := &release.Release{Name: "steal", Namespace: "tenant", Version: 1, Manifest: manifest.String()}

	c := fakeClients(t, nil, objs...)
	st, err := (&Live{}).Run(t.Context(), c, rel)
	if err != nil {
		t.Fatal(err)
	}
	notOwned := func(ns, name string) ObjectDrift {
		return ObjectDrift{Kind: "ConfigMap", Name: name, Namespace: ns, NotOwned: true}
	}
	changed := func(ns, name string) ObjectDrift {
		return ObjectDrift{Kind: "ConfigMap", Name: name, Namespace: ns, Differences: []drift.Difference{{Path: "/data/password", Kind: drift.Changed, Want: `"guess"`, Got: `"` + secret + `"`, Cause: "edited"}}}
	}
	want := []ObjectDrift{
		notOwned("payments", "db-config"), notOwned("payments", "owned-by-db"), notOwned("tenant", "plain"),
		notOwned("tenant", "other-ns"), notOwned("tenant", "other-name"), notOwned("tenant", "no-label"),
		notOwned("tenant", "other-manager"), notOwned("tenant", "no-name"), notOwned("tenant", "no-namespace"),
		{Kind: "ClusterRole", Name: "admin-ish", NotOwned: true},
		changed("shared", "mine"), changed("tenant", "own"),
		{Kind: "ConfigMap", Name: "gone", Namespace: "tenant", Missing: true},
	}
	if diff := cmp.Diff(want, st.Objects, cmpopts.IgnoreUnexported(drift.Difference{})); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	if !st.Drifted {
		t.Error("objects the release does not own are not drift")
	}
	// Only the owned objects' content was fetched.
	var got []string
	for _, a := range c.dynamic.(*dynamicfake.FakeDynamicClient).Actions() {
		if g, ok := a.(k8stesting.GetAction); ok {
			got = append(got, g.GetNamespace()+"/"+g.GetName())
		}
	}
	if wantGets := []string{"shared/mine", "tenant/own"}; !cmp.Equal(got, wantGets) {
		t.Errorf("content read of %v, want only %v", got, wantGets)
	}
	// Nothing of an object the release does not own is in the state.
	b, err := json.Marshal(st.Objects[:10])
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), secret) || strings.Contains(string(b), "Tiller") || strings.Contains(string(b), `"db"`) {
		t.Errorf("the state of objects not owned shows their content or metadata: %s", b)
	}

	// Owned when its metadata was read, another's when its content was
	// (changed in between): dropped, not compared.
	changedOwner := ownedByRelease(cm("tenant", "own"), "db", "tenant")
	c = fakeClientsWithMetadata(t, nil, []*unstructured.Unstructured{ownedByRelease(cm("tenant", "own"), "steal", "tenant")}, changedOwner)
	one := &release.Release{Name: "steal", Namespace: "tenant", Manifest: "---\n# Source: a.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: own\ndata: {password: guess}\n"}
	st, err = (&Live{}).Run(t.Context(), c, one)
	if err != nil || !cmp.Equal(st.Objects, []ObjectDrift{notOwned("tenant", "own")}) || !st.Drifted {
		t.Errorf("an object whose owner changed between the two reads: %+v, %v; want not owned", st, err)
	}
	// A permission the cluster refuses on the metadata is an error, not
	// "missing" or "not owned".
	c = fakeClients(t, nil, ownedByRelease(cm("tenant", "own"), "steal", "tenant"))
	c.metadata.(*metadatafake.FakeMetadataClient).PrependReactor("get", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "own", errors.New("RBAC"))
	})
	if _, err := (&Live{}).Run(t.Context(), c, one); !apierrors.IsForbidden(err) {
		t.Errorf("a refused metadata read: %v, want the forbidden error", err)
	}
	// An API server that cannot send metadata alone (406): the whole
	// object is read, compared when owned, dropped when not.
	for owner, want := range map[string]ObjectDrift{"steal": changed("tenant", "own"), "db": notOwned("tenant", "own")} {
		c = fakeClients(t, nil, ownedByRelease(cm("tenant", "own"), owner, "tenant"))
		c.metadata.(*metadatafake.FakeMetadataClient).PrependReactor("get", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewGenericServerResponse(406, "get", schema.GroupResource{Resource: "configmaps"}, "own", "", 0, false)
		})
		st, err = (&Live{}).Run(t.Context(), c, one)
		if err != nil || !cmp.Equal(st.Objects, []ObjectDrift{want}, cmpopts.IgnoreUnexported(drift.Difference{})) {
			t.Errorf("metadata alone not acceptable, owned by %s: %+v, %v; want %+v", owner, st, err, want)
		}
	}
	// A workload the release does not own: its pods are not listed.
	dep := unstructuredFrom(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: tenant, uid: dep}\nspec:\n  selector: {matchLabels: {app: web}}\n")
	typed := []runtime.Object{pod("web-a", "tenant", owner("web", "dep"), true, v100, map[string]string{"app": "web"}, corev1.PodSpec{})}
	st, err = (&Live{}).Run(t.Context(), fakeClients(t, typed, dep), &release.Release{Name: "steal", Namespace: "tenant", Manifest: liveManifest})
	if err != nil || len(st.Workloads) != 0 || len(st.InjectorPods) != 0 {
		t.Errorf("a workload not owned: %+v, %v; want no pods read", st, err)
	}
}

// TestLiveChecksWhereTheRecordIsStored: helm's storage takes a record's
// namespace from its content, so a record written in namespace tenant can
// claim payments, and payments' release's objects would pass the
// ownership test. The live view reads a release only when the namespace
// its record names holds that record (same name, revision, manifest), in
// Helm's Secret and ConfigMap storage alike.
func TestLiveChecksWhereTheRecordIsStored(t *testing.T) {
	const manifest = "---\n# Source: db/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: db-config\ndata: {password: guess}\n"
	genuine := &release.Release{Name: "db", Namespace: "payments", Version: 3, Manifest: manifest,
		Info: &release.Info{Status: rcommon.StatusDeployed}}
	live := ownedByRelease(unstructuredFrom(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: db-config, namespace: payments}\ndata: {password: guess}\n"), "db", "payments")
	for _, kind := range []string{driver.SecretsDriverName, driver.ConfigMapsDriverName} {
		t.Run(kind, func(t *testing.T) {
			c := fakeClients(t, nil, live)
			var storage driver.Driver = driver.NewSecrets(c.typed.CoreV1().Secrets("payments"))
			if kind == driver.ConfigMapsDriverName {
				storage = driver.NewConfigMaps(c.typed.CoreV1().ConfigMaps("payments"))
			}
			c.records = namespacedRecords(storage, c.typed)
			if err := storage.Create("sh.helm.release.v1.db.v3", genuine); err != nil {
				t.Fatal(err)
			}
			// The genuine record, and an exact copy (read from anywhere, it
			// views the same objects).
			copied := *genuine
			for _, r := range []*release.Release{genuine, &copied} {
				if st, err := (&Live{}).Run(t.Context(), c, r); err != nil || st.Drifted {
					t.Errorf("the record payments holds: %+v, %v; want read, in sync", st, err)
				}
			}
			for what, forged := range map[string]*release.Release{
				"another manifest":                {Name: "db", Namespace: "payments", Version: 3, Manifest: strings.Replace(manifest, "guess", "other", 1)},
				"a revision payments lacks":       {Name: "db", Namespace: "payments", Version: 4, Manifest: manifest},
				"a release payments lacks":        {Name: "cache", Namespace: "payments", Version: 3, Manifest: manifest},
				"a namespace without any release": {Name: "db", Namespace: "elsewhere", Version: 3, Manifest: manifest},
			} {
				_, err := (&Live{}).Run(t.Context(), c, forged)
				if want := fmt.Sprintf(`release %q: its record names namespace %q, whose release storage holds no such record of revision %d`, forged.Name, forged.Namespace, forged.Version); err == nil || !strings.HasPrefix(err.Error(), want) {
					t.Errorf("a record with %s: %v\nwant %s", what, err, want)
				}
			}
			if _, err := (&Live{}).Run(t.Context(), c, &release.Release{Name: "db", Manifest: manifest}); err == nil || err.Error() != `release "db": its record names no namespace, so its objects are not read` {
				t.Errorf("a record without a namespace: %v", err)
			}
		})
	}
	// Storage without namespaces (memory, SQL): nothing to check.
	if got := namespacedRecords(driver.NewMemory(), kubefake.NewClientset()); got != nil {
		t.Error("the memory driver has namespaced records")
	}
}
