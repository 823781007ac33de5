package progress

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
)

func TestParseMode(t *testing.T) {
	tests := []struct {
		flag     string
		terminal bool
		want     Mode
		err      string
	}{
		{"auto", true, Live, ""},
		{"auto", false, Plain, ""},
		{"plain", true, Plain, ""},
		{"none", true, None, ""},
		{"live", true, "", `unknown --progress "live" (want auto, plain or none)`},
		{"", false, "", `unknown --progress "" (want auto, plain or none)`},
	}
	for _, tt := range tests {
		got, err := ParseMode(tt.flag, tt.terminal)
		if got != tt.want || (err == nil) != (tt.err == "") || err != nil && err.Error() != tt.err {
			t.Errorf("ParseMode(%q, %v) = %q, %v; want %q, %s", tt.flag, tt.terminal, got, err, tt.want, tt.err)
		}
	}
	if New(&bytes.Buffer{}, None) != nil {
		t.Errorf("New(None) is not nil: it would show progress")
	}
}

func TestSlowShowsOnlyLongSteps(t *testing.T) {
	out := &lockedBuffer{}
	r := New(out, Plain)
	// A step that ends before the threshold (a minute: however loaded
	// the machine) shows nothing.
	r.SlowAfter = time.Minute
	r.Slow(`injector "quick"`)()
	if out.String() != "" {
		t.Errorf("a quick step was shown: %q", out.String())
	}
	r.SlowAfter = 50 * time.Millisecond
	done := r.Slow(`injector "slow"`)
	waitFor(t, out, "is running")
	done()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || lines[0] != `progress: injector "slow" is running (50ms so far)` || !strings.HasPrefix(lines[1], `progress: injector "slow" finished after `) {
		t.Errorf("slow step shown as:\n%s", out.String())
	}
	var nilReporter *Reporter
	nilReporter.Slow("x")()
	nilReporter.Line("x")
}

func int32p(i int32) *int32 { return &i }

func TestResourceStates(t *testing.T) {
	ns := "shop"
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	cs := fake.NewClientset(
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, Generation: 2},
			Spec:   appsv1.DeploymentSpec{Replicas: int32p(2), Selector: sel},
			Status: appsv1.DeploymentStatus{ObservedGeneration: 2, UpdatedReplicas: 2, ReadyReplicas: 1}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: ns, Labels: map[string]string{"app": "web"}},
			Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{
				{Name: "web", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "rolling", Namespace: ns, Generation: 3},
			Spec:   appsv1.DeploymentSpec{Replicas: int32p(3), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "none"}}},
			Status: appsv1.DeploymentStatus{ObservedGeneration: 3, UpdatedReplicas: 1, ReadyReplicas: 3}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "rolled", Namespace: ns},
			Spec:   appsv1.DeploymentSpec{Replicas: int32p(1), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "none"}}},
			Status: appsv1.DeploymentStatus{Replicas: 2, UpdatedReplicas: 1, ReadyReplicas: 1}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "stale", Namespace: ns, Generation: 3},
			Status: appsv1.DeploymentStatus{ObservedGeneration: 2}},
		&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns},
			Spec:   appsv1.StatefulSetSpec{Replicas: int32p(1)},
			Status: appsv1.StatefulSetStatus{Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, CurrentReplicas: 1}},
		// Ready pods, but not yet available: helm 4's watcher (kstatus)
		// waits on.
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "unavailable", Namespace: ns},
			Spec:   appsv1.DeploymentSpec{Replicas: int32p(1), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "none"}}},
			Status: appsv1.DeploymentStatus{Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1}},
		&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "migrate", Namespace: ns},
			Status: batchv1.JobStatus{Active: 1}},
		&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "done", Namespace: ns},
			Status: batchv1.JobStatus{Succeeded: 1, Conditions: []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}}},
		&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "broken", Namespace: ns},
			Status: batchv1.JobStatus{Failed: 1, Conditions: []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue}}}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "smoke", Namespace: ns},
			Status: corev1.PodStatus{Phase: corev1.PodSucceeded}},
	)
	tests := []struct {
		res  Resource
		want State
	}{
		{Resource{Kind: "Deployment", Namespace: ns, Name: "web"}, State{Text: "1/2 ready; pod web-1 pending (container web ContainerCreating)"}},
		{Resource{Kind: "Deployment", Namespace: ns, Name: "rolling"}, State{Text: "1/3 updated, 3/3 ready"}},
		{Resource{Kind: "Deployment", Namespace: ns, Name: "rolled"}, State{Text: "1/1 updated, 1/1 ready, 1 old still running"}},
		{Resource{Kind: "Deployment", Namespace: ns, Name: "stale"}, State{Text: "rollout not started yet"}},
		{Resource{Kind: "Deployment", Namespace: ns, Name: "absent"}, State{}},
		{Resource{Kind: "StatefulSet", Namespace: ns, Name: "db"}, State{Text: "ready (1/1)", Ready: true}},
		{Resource{Kind: "Deployment", Namespace: ns, Name: "unavailable"}, State{Text: "ready (1/1); not yet current: Available: 0/1"}},
		{Resource{Kind: "Job", Namespace: ns, Name: "migrate", Hook: true}, State{Text: "1 active, 0/1 succeeded"}},
		{Resource{Kind: "Job", Namespace: ns, Name: "done", Hook: true}, State{Text: "complete (1/1 succeeded)", Ready: true}},
		{Resource{Kind: "Job", Namespace: ns, Name: "broken"}, State{Text: "failed (1 failed)"}},
		{Resource{Kind: "Pod", Namespace: ns, Name: "smoke", Hook: true}, State{Text: "succeeded", Ready: true}},
	}
	for _, tt := range tests {
		got, err := tt.res.read(context.Background(), Clients{Typed: cs})
		if err != nil || got != tt.want {
			t.Errorf("%s: %+v, %v; want %+v", tt.res, got, err, tt.want)
		}
	}
}

// TestWatchPlainPrintsChangesInOrder: plain mode prints a line when a
// resource's state changes, nothing while it stays, and the final state
// when the watch stops.
func TestWatchPlainPrintsChangesInOrder(t *testing.T) {
	ns := "shop"
	cs := fake.NewClientset(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.DeploymentSpec{Replicas: int32p(1)}, Status: appsv1.DeploymentStatus{UpdatedReplicas: 1}})
	out := &lockedBuffer{}
	r := New(out, Plain)
	r.interval = 10 * time.Millisecond
	stop := r.Watch(context.Background(), Clients{Typed: cs}, []Resource{{Kind: "Deployment", Namespace: ns, Name: "web"}, {Kind: "Job", Namespace: ns, Name: "later", Hook: true}})
	waitFor(t, out, "Deployment/web: 0/1 ready")
	d, _ := cs.AppsV1().Deployments(ns).Get(context.Background(), "web", metav1.GetOptions{})
	d.Status.Replicas, d.Status.ReadyReplicas, d.Status.AvailableReplicas = 1, 1, 1
	d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue}}
	if _, err := cs.AppsV1().Deployments(ns).UpdateStatus(context.Background(), d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The Job appears only once the change is printed: a poll that read
	// the Deployment before the update and the Job after it would print
	// them the other way round (the order of events, not of the list).
	waitFor(t, out, "Deployment/web: ready (1/1)")
	if _, err := cs.BatchV1().Jobs(ns).Create(context.Background(), &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "later", Namespace: ns},
		Status: batchv1.JobStatus{Succeeded: 1, Conditions: []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	stop()
	want := "progress: Deployment/web: 0/1 ready\nprogress: Deployment/web: ready (1/1)\nprogress: Job/later (hook): complete (1/1 succeeded)\n"
	if out.String() != want {
		t.Errorf("plain progress:\n%s\nwant:\n%s", out.String(), want)
	}
}

// TestWatchLiveRedrawsInPlace: on a terminal the view of every resource is
// redrawn in place (cursor up over the lines drawn, then clear), a Line
// goes above it, and the final view stays on screen.
func TestWatchLiveRedrawsInPlace(t *testing.T) {
	ns := "shop"
	cs := fake.NewClientset(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.DeploymentSpec{Replicas: int32p(1)}, Status: appsv1.DeploymentStatus{UpdatedReplicas: 1}})
	out := &lockedBuffer{}
	r := New(out, Live)
	r.interval = 10 * time.Millisecond
	stop := r.Watch(context.Background(), Clients{Typed: cs}, []Resource{{Kind: "Deployment", Namespace: ns, Name: "web"}})
	waitFor(t, out, "Deployment/web: 0/1 ready")
	r.Line("a message")
	d, _ := cs.AppsV1().Deployments(ns).Get(context.Background(), "web", metav1.GetOptions{})
	d.Status.Replicas, d.Status.ReadyReplicas, d.Status.AvailableReplicas = 1, 1, 1
	d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue}}
	if _, err := cs.AppsV1().Deployments(ns).UpdateStatus(context.Background(), d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	stop()
	got := out.String()
	const redraw = "\x1b[1A\x1b[J"
	if !strings.HasPrefix(got, "  … Deployment/web: 0/1 ready\n") || strings.Contains(got, "ready\n  ") {
		t.Errorf("live view not redrawn in place (a view drawn below the last one):\n%q", got)
	}
	if !strings.Contains(got, redraw+"progress: a message\n") {
		t.Errorf("a line is not written above the cleared view:\n%q", got)
	}
	if !strings.HasSuffix(got, redraw+"  ✓ Deployment/web: ready (1/1)\n") {
		t.Errorf("the final view is not the last thing on screen:\n%q", got)
	}
}

// TestWatchedKinds: the workloads Helm waits for and custom resources are
// followed; Kubernetes' own other kinds are not.
func TestWatchedKinds(t *testing.T) {
	for _, tt := range []struct {
		apiVersion, kind string
		want             bool
	}{
		{"apps/v1", "Deployment", true},
		{"batch/v1", "Job", true},
		{"v1", "Pod", true},
		{"v1", "ConfigMap", false},
		{"networking.k8s.io/v1", "Ingress", false},
		{"apiextensions.k8s.io/v1", "CustomResourceDefinition", false},
		{"example.com/v1", "Widget", true},
		{"cert-manager.io/v1", "Certificate", true},
	} {
		if got := Watched(tt.apiVersion, tt.kind); got != tt.want {
			t.Errorf("Watched(%s, %s) = %v, want %v", tt.apiVersion, tt.kind, got, tt.want)
		}
	}
}

// TestCustomResourceState: a custom resource is shown as kstatus (helm
// 4's watcher) sees it: in progress until its Ready condition is True,
// then current and ready.
func TestCustomResourceState(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(gvk, meta.RESTScopeNamespace)
	widget := func(ready string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": "w", "namespace": "shop", "generation": int64(1)},
			"status": map[string]any{"observedGeneration": int64(1), "conditions": []any{
				map[string]any{"type": "Ready", "status": ready, "reason": "Building", "message": "building the widget"},
			}},
		}}
		return u
	}
	res := Resource{APIVersion: "example.com/v1", Kind: "Widget", Namespace: "shop", Name: "w"}
	for _, tt := range []struct {
		obj  *unstructured.Unstructured
		want State
	}{
		{widget("False"), State{Text: "inprogress: building the widget"}},
		{widget("True"), State{Text: "current: Resource is Ready", Ready: true}},
		{nil, State{}},
	} {
		var objs []runtime.Object
		if tt.obj != nil {
			objs = append(objs, tt.obj)
		}
		dc := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{{Group: "example.com", Version: "v1", Resource: "widgets"}: "WidgetList"}, objs...)
		got, err := res.read(context.Background(), Clients{Typed: fake.NewClientset(), Dynamic: dc, Mapper: mapper})
		if err != nil || got != tt.want {
			t.Errorf("%+v, %v; want %+v", got, err, tt.want)
		}
	}
	// Without a dynamic client, a custom resource is not shown.
	if got, err := res.read(context.Background(), Clients{Typed: fake.NewClientset()}); err != nil || got != (State{}) {
		t.Errorf("without a dynamic client: %+v, %v", got, err)
	}
}

// lockedBuffer is a bytes.Buffer the watch writes while the test reads.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor waits until the output holds want (a watch polls on its own
// clock); it fails after a minute, however slow the machine.
func waitFor(t *testing.T, out *lockedBuffer, want string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !strings.Contains(out.String(), want); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in:\n%s", want, out.String())
		}
	}
}
