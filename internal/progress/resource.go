package progress

import (
	"context"
	"fmt"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Resource is one resource an apply waits for.
type Resource struct {
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
// those Helm's wait and hook handling wait for.
func Watched(kind string) bool {
	switch kind {
	case "Deployment", "StatefulSet", "DaemonSet", "Job", "Pod":
		return true
	}
	return false
}

// State is what a resource is doing, in words; Text is empty while it does
// not exist.
type State struct {
	Text  string
	Ready bool
}

func (r Resource) read(ctx context.Context, cs kubernetes.Interface) (State, error) {
	var (
		st  State
		err error
	)
	get := metav1.GetOptions{}
	switch r.Kind {
	case "Deployment":
		d, gerr := cs.AppsV1().Deployments(r.Namespace).Get(ctx, r.Name, get)
		if err = gerr; err == nil {
			want := replicas(d.Spec.Replicas)
			st = replicaState(d.Status.ReadyReplicas, d.Status.UpdatedReplicas, d.Status.Replicas, want, d.Status.ObservedGeneration >= d.Generation)
			if !st.Ready {
				st.Text += podDetail(ctx, cs, r.Namespace, d.Spec.Selector)
			}
		}
	case "StatefulSet":
		s, gerr := cs.AppsV1().StatefulSets(r.Namespace).Get(ctx, r.Name, get)
		if err = gerr; err == nil {
			st = replicaState(s.Status.ReadyReplicas, s.Status.UpdatedReplicas, s.Status.Replicas, replicas(s.Spec.Replicas), s.Status.ObservedGeneration >= s.Generation)
			if !st.Ready {
				st.Text += podDetail(ctx, cs, r.Namespace, s.Spec.Selector)
			}
		}
	case "DaemonSet":
		ds, gerr := cs.AppsV1().DaemonSets(r.Namespace).Get(ctx, r.Name, get)
		if err = gerr; err == nil {
			st = replicaState(ds.Status.NumberReady, ds.Status.UpdatedNumberScheduled, ds.Status.CurrentNumberScheduled, ds.Status.DesiredNumberScheduled, ds.Status.ObservedGeneration >= ds.Generation)
			if !st.Ready {
				st.Text += podDetail(ctx, cs, r.Namespace, ds.Spec.Selector)
			}
		}
	case "Job":
		j, gerr := cs.BatchV1().Jobs(r.Namespace).Get(ctx, r.Name, get)
		if err = gerr; err == nil {
			want := replicas(j.Spec.Completions)
			switch {
			case hasCondition(j.Status.Conditions, batchv1.JobComplete):
				st = State{Text: fmt.Sprintf("complete (%d/%d succeeded)", j.Status.Succeeded, want), Ready: true}
			case hasCondition(j.Status.Conditions, batchv1.JobFailed):
				st = State{Text: fmt.Sprintf("failed (%d failed)", j.Status.Failed)}
			default:
				st = State{Text: fmt.Sprintf("%d active, %d/%d succeeded", j.Status.Active, j.Status.Succeeded, want)}
				if j.Spec.Selector != nil {
					st.Text += podDetail(ctx, cs, r.Namespace, j.Spec.Selector)
				}
			}
		}
	case "Pod":
		p, gerr := cs.CoreV1().Pods(r.Namespace).Get(ctx, r.Name, get)
		if err = gerr; err == nil {
			ready := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodRunning && podReady(p)
			st = State{Text: strings.ToLower(string(p.Status.Phase)), Ready: ready}
			if !ready {
				if why := podWhy(p); why != "" {
					st.Text += " (" + why + ")"
				}
			}
		}
	default:
		return State{}, nil
	}
	if apierrors.IsNotFound(err) {
		return State{}, nil
	}
	return st, err
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
