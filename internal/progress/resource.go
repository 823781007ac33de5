package progress

import (
	"context"
	"fmt"
	"slices"
	"strings"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// Resource is one resource an apply waits for.
type Resource struct {
	// APIVersion is needed for custom resources only (read through the
	// dynamic client); the workload kinds are known.
	APIVersion            string
	Kind, Namespace, Name string
	// Hook is true for a hook (created, waited for and usually deleted by
	// Helm during the apply).
	Hook bool
}

func (r Resource) String() string {
	s := r.Kind + "/" + r.Name
	if r.Hook {
		s += " (hook)"
	}
	return s
}

// Watched reports whether apply's progress follows resources of kind:
// the workloads Helm's wait and hook handling wait for, and custom
// resources (a group of its own, not Kubernetes'), which helm 4's watcher
// waits on until kstatus calls them current (a Ready condition, say).
func Watched(apiVersion, kind string) bool {
	switch kind {
	case "Deployment", "StatefulSet", "DaemonSet", "Job", "Pod":
		return true
	}
	group, _, found := strings.Cut(apiVersion, "/")
	return found && strings.Contains(group, ".") && !strings.HasSuffix(group, ".k8s.io")
}

// Clients are what progress reads resources with; Dynamic and Mapper
// read custom resources (without them those are not shown).
type Clients struct {
	Typed   kubernetes.Interface
	Dynamic dynamic.Interface
	Mapper  meta.RESTMapper
}

// State is what a resource is doing, in words; Text is empty while it does
// not exist.
type State struct {
	Text  string
	Ready bool
}

func (r Resource) read(ctx context.Context, c Clients) (State, error) {
	if !typedKind(r.Kind) {
		return r.readCustom(ctx, c)
	}
	obj, st, err := r.readTyped(ctx, c.Typed)
	if apierrors.IsNotFound(err) {
		return State{}, nil
	}
	if err != nil {
		return st, err
	}
	// Ready is what helm 4's watcher waits for: kstatus' Current. The
	// text above says why not yet, in the words of each kind.
	ready, why, err := current(obj, r.Kind)
	if err != nil {
		return State{}, fmt.Errorf("%s: %w", r, err)
	}
	if st.Ready && !ready {
		st.Text += "; not yet current: " + why
	}
	st.Ready = ready
	return st, nil
}

// typedKind tells the kinds readTyped reads through the typed client;
// every other kind is read as a custom resource.
func typedKind(kind string) bool {
	switch kind {
	case "Deployment", "StatefulSet", "DaemonSet", "Job", "Pod":
		return true
	}
	return false
}

// readTyped reads one of the typedKind objects and says its state in the
// words of its kind; obj is what was read, for kstatus.
func (r Resource) readTyped(ctx context.Context, cs kubernetes.Interface) (obj runtime.Object, st State, err error) {
	get := metav1.GetOptions{}
	var selector *metav1.LabelSelector
	switch r.Kind {
	case "Deployment":
		d, err := cs.AppsV1().Deployments(r.Namespace).Get(ctx, r.Name, get)
		if err != nil {
			return nil, State{}, err
		}
		obj, selector = d, d.Spec.Selector
		st = replicaState(d.Status.ReadyReplicas, d.Status.UpdatedReplicas, d.Status.Replicas, replicas(d.Spec.Replicas), d.Status.ObservedGeneration >= d.Generation)
	case "StatefulSet":
		s, err := cs.AppsV1().StatefulSets(r.Namespace).Get(ctx, r.Name, get)
		if err != nil {
			return nil, State{}, err
		}
		obj, selector = s, s.Spec.Selector
		st = replicaState(s.Status.ReadyReplicas, s.Status.UpdatedReplicas, s.Status.Replicas, replicas(s.Spec.Replicas), s.Status.ObservedGeneration >= s.Generation)
	case "DaemonSet":
		ds, err := cs.AppsV1().DaemonSets(r.Namespace).Get(ctx, r.Name, get)
		if err != nil {
			return nil, State{}, err
		}
		obj, selector = ds, ds.Spec.Selector
		st = replicaState(ds.Status.NumberReady, ds.Status.UpdatedNumberScheduled, ds.Status.CurrentNumberScheduled, ds.Status.DesiredNumberScheduled, ds.Status.ObservedGeneration >= ds.Generation)
	case "Job":
		j, err := cs.BatchV1().Jobs(r.Namespace).Get(ctx, r.Name, get)
		if err != nil {
			return nil, State{}, err
		}
		obj, st = j, jobState(j)
		if !st.Ready && !hasCondition(j.Status.Conditions, batchv1.JobFailed) {
			selector = j.Spec.Selector
		}
	case "Pod":
		p, err := cs.CoreV1().Pods(r.Namespace).Get(ctx, r.Name, get)
		if err != nil {
			return nil, State{}, err
		}
		return p, podState(p), nil
	}
	if !st.Ready && selector != nil {
		st.Text += podDetail(ctx, cs, r.Namespace, selector)
	}
	return obj, st, nil
}

// jobState says how far a Job is: complete, failed, or its counts.
func jobState(j *batchv1.Job) State {
	want := replicas(j.Spec.Completions)
	switch {
	case hasCondition(j.Status.Conditions, batchv1.JobComplete):
		return State{Text: fmt.Sprintf("complete (%d/%d succeeded)", j.Status.Succeeded, want), Ready: true}
	case hasCondition(j.Status.Conditions, batchv1.JobFailed):
		return State{Text: fmt.Sprintf("failed (%d failed)", j.Status.Failed)}
	}
	return State{Text: fmt.Sprintf("%d active, %d/%d succeeded", j.Status.Active, j.Status.Succeeded, want)}
}

// podState is a Pod's phase, with why it is not ready when it is not.
func podState(p *corev1.Pod) State {
	ready := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodRunning && podReady(p)
	st := State{Text: strings.ToLower(string(p.Status.Phase)), Ready: ready}
	if !ready {
		if why := podWhy(p); why != "" {
			st.Text += " (" + why + ")"
		}
	}
	return st
}

// readCustom reads a custom resource and says what kstatus says of it.
func (r Resource) readCustom(ctx context.Context, c Clients) (State, error) {
	if c.Dynamic == nil || c.Mapper == nil {
		return State{}, nil
	}
	gv, err := schema.ParseGroupVersion(r.APIVersion)
	if err != nil {
		return State{}, err
	}
	m, err := c.Mapper.RESTMapping(gv.WithKind(r.Kind).GroupKind(), gv.Version)
	if err != nil {
		return State{}, nil // its CRD is not installed yet
	}
	var ri dynamic.ResourceInterface = c.Dynamic.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		ri = c.Dynamic.Resource(m.Resource).Namespace(r.Namespace)
	}
	u, err := ri.Get(ctx, r.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return State{}, nil
	}
	if err != nil {
		return State{}, err
	}
	res, err := kstatus.Compute(u)
	if err != nil {
		return State{}, fmt.Errorf("%s: %w", r, err)
	}
	text := strings.ToLower(string(res.Status))
	if res.Message != "" {
		text += ": " + res.Message
	}
	return State{Text: text, Ready: res.Status == kstatus.CurrentStatus}, nil
}

// current reports whether kstatus (as helm 4's --wait=watcher) counts obj
// as reconciled and ready.
// as reconciled and ready. A typed object from the clientset carries no
// kind; kstatus chooses its rules by it.
func current(obj runtime.Object, kind string) (ready bool, why string, err error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return false, "", err
	}
	apiVersion := map[string]string{"Deployment": "apps/v1", "StatefulSet": "apps/v1", "DaemonSet": "apps/v1", "Job": "batch/v1", "Pod": "v1"}[kind]
	obj2 := &unstructured.Unstructured{Object: u}
	obj2.SetAPIVersion(apiVersion)
	obj2.SetKind(kind)
	res, err := kstatus.Compute(obj2)
	if err != nil {
		return false, "", err
	}
	return res.Status == kstatus.CurrentStatus, res.Message, nil
}

func replicas(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}

// replicaState says how far a rollout is: pods of the new template
// (updated), ready pods, and pods of an older template still running
// (total beyond the updated ones), against the replicas wanted.
func replicaState(ready, updated, total, want int32, observed bool) State {
	old := total - updated
	switch {
	case !observed:
		return State{Text: "rollout not started yet"}
	case updated < want || old > 0:
		text := fmt.Sprintf("%d/%d updated, %d/%d ready", updated, want, ready, want)
		if old > 0 {
			text += fmt.Sprintf(", %d old still running", old)
		}
		return State{Text: text}
	case ready < want:
		return State{Text: fmt.Sprintf("%d/%d ready", ready, want)}
	}
	return State{Text: fmt.Sprintf("ready (%d/%d)", ready, want), Ready: true}
}

func hasCondition(conds []batchv1.JobCondition, t batchv1.JobConditionType) bool {
	for _, c := range conds {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// podDetail names the first pod of selector that is not ready, and why.
func podDetail(ctx context.Context, cs kubernetes.Interface, ns string, selector *metav1.LabelSelector) string {
	if selector == nil {
		return ""
	}
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil || sel.Empty() {
		return ""
	}
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return ""
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || podReady(p) {
			continue
		}
		s := fmt.Sprintf("; pod %s %s", p.Name, strings.ToLower(string(p.Status.Phase)))
		if why := podWhy(p); why != "" {
			s += " (" + why + ")"
		}
		return s
	}
	return ""
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podWhy is the most telling reason a pod is not ready: a waiting
// container's reason, an unschedulable pod's message, else the first false
// condition.
func podWhy(p *corev1.Pod) string {
	for _, cs := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			return "container " + cs.Name + " " + w.Reason
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Status == corev1.ConditionFalse && c.Reason != "" {
			return string(c.Type) + ": " + c.Reason
		}
	}
	return ""
}
