package release

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/helm-inject/helm-inject/inject"
)

// templateInfo is one pod template a workload's controller keeps: a
// Deployment's ReplicaSet, a StatefulSet's or DaemonSet's controller
// revision.
type templateInfo struct {
	name     string
	uid      types.UID
	revision int64
	// containers are the template's container and init container names.
	containers []string
}

// workloadPods groups a workload's pods by the template they were made
// from, newest template first.
func workloadPods(ctx context.Context, cs kubernetes.Interface, w *unstructured.Unstructured) (LiveWorkload, error) {
	wl := LiveWorkload{Kind: w.GetKind(), Name: w.GetName(), Templates: []PodTemplate{}}
	raw, _, _ := unstructured.NestedMap(w.Object, "spec", "selector")
	var ls metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &ls); err != nil {
		return wl, fmt.Errorf("reading the selector: %w", err)
	}
	sel, err := metav1.LabelSelectorAsSelector(&ls)
	if err != nil {
		return wl, fmt.Errorf("reading the selector: %w", err)
	}
	templates, current, err := workloadTemplates(ctx, cs, w, sel)
	if err != nil {
		return wl, err
	}
	pods, err := cs.CoreV1().Pods(w.GetNamespace()).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return wl, fmt.Errorf("listing its pods: %w", err)
	}
	groups := map[string]*PodTemplate{}
	for i := range pods.Items {
		pod := &pods.Items[i]
		key, ok := podTemplateKey(w, pod, templates)
		if !ok {
			continue
		}
		g := groups[key]
		if g == nil {
			info := templates[key]
			g = &PodTemplate{Name: cmp.Or(info.name, key), Revision: info.revision, Current: key == current}
			groups[key] = g
		}
		addPod(g, pod, templates[key].containers)
	}
	for _, g := range groups {
		wl.Templates = append(wl.Templates, *g)
	}
	slices.SortFunc(wl.Templates, func(a, b PodTemplate) int {
		if a.Current != b.Current {
			if a.Current {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(b.Revision, a.Revision), cmp.Compare(a.Name, b.Name))
	})
	return wl, nil
}

// workloadTemplates lists the templates a workload's controller keeps, by
// the key its pods carry, and the key of the current one.
func workloadTemplates(ctx context.Context, cs kubernetes.Interface, w *unstructured.Unstructured, sel labels.Selector) (map[string]templateInfo, string, error) {
	out := map[string]templateInfo{}
	var current string
	var newest int64 = -1
	if w.GetKind() == "Deployment" {
		rss, err := cs.AppsV1().ReplicaSets(w.GetNamespace()).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
		if err != nil {
			return nil, "", fmt.Errorf("listing its ReplicaSets: %w", err)
		}
		for _, rs := range rss.Items {
			if !ownedBy(rs.OwnerReferences, w.GetUID()) {
				continue
			}
			rev, _ := strconv.ParseInt(rs.Annotations["deployment.kubernetes.io/revision"], 10, 64)
			out[rs.Name] = templateInfo{name: rs.Name, uid: rs.UID, revision: rev, containers: specContainers(rs.Spec.Template.Spec)}
			if rev > newest {
				newest, current = rev, rs.Name
			}
		}
		return out, current, nil
	}
	crs, err := cs.AppsV1().ControllerRevisions(w.GetNamespace()).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, "", fmt.Errorf("listing its controller revisions: %w", err)
	}
	for _, cr := range crs.Items {
		if !ownedBy(cr.OwnerReferences, w.GetUID()) {
			continue
		}
		// A StatefulSet's pods carry the revision's name, a DaemonSet's
		// its hash.
		key := cr.Name
		if w.GetKind() == "DaemonSet" {
			key = cr.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]
		}
		out[key] = templateInfo{name: cr.Name, uid: cr.UID, revision: cr.Revision, containers: revisionContainers(cr)}
		if cr.Revision > newest {
			newest, current = cr.Revision, key
		}
	}
	if update, _, _ := unstructured.NestedString(w.Object, "status", "updateRevision"); update != "" {
		current = update
	}
	return out, current, nil
}

// podTemplateKey is the template a pod was made from, when the workload
// controls it.
func podTemplateKey(w *unstructured.Unstructured, pod *corev1.Pod, templates map[string]templateInfo) (string, bool) {
	if w.GetKind() == "Deployment" {
		for _, ref := range pod.OwnerReferences {
			if t, ok := templates[ref.Name]; ok && ref.Controller != nil && *ref.Controller && ref.UID == t.uid {
				return ref.Name, true
			}
		}
		return "", false
	}
	if !ownedBy(pod.OwnerReferences, w.GetUID()) {
		return "", false
	}
	return pod.Labels[appsv1.ControllerRevisionHashLabelKey], true
}

func ownedBy(refs []metav1.OwnerReference, uid types.UID) bool {
	for _, r := range refs {
		if r.UID == uid && r.Controller != nil && *r.Controller {
			return true
		}
	}
	return false
}

// addPod counts a pod in its group: ready or not, the built-in injectors
// its status annotation records, its containers and images, and the ones
// its template does not have.
func addPod(g *PodTemplate, pod *corev1.Pod, templateContainers []string) {
	g.Pods++
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			g.Ready++
		}
	}
	var st struct {
		Injectors []inject.Record `json:"injectors"`
	}
	if json.Unmarshal([]byte(pod.Annotations[inject.StatusAnnotation]), &st) == nil {
		for _, r := range st.Injectors {
			g.Injectors = appendNew(g.Injectors, r.Name+"@"+r.Version)
		}
	}
	for _, c := range pod.Spec.InitContainers {
		g.Containers = appendNew(g.Containers, "init:"+c.Name+"="+c.Image)
	}
	for _, c := range pod.Spec.Containers {
		g.Containers = appendNew(g.Containers, c.Name+"="+c.Image)
	}
	if templateContainers == nil {
		return
	}
	for _, name := range specContainers(pod.Spec) {
		if !slices.Contains(templateContainers, name) {
			g.NotInTemplate = appendNew(g.NotInTemplate, name)
		}
	}
}

func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

func specContainers(spec corev1.PodSpec) []string {
	names := []string{}
	for _, c := range spec.InitContainers {
		names = append(names, c.Name)
	}
	for _, c := range spec.Containers {
		names = append(names, c.Name)
	}
	return names
}

// revisionContainers reads the pod template a controller revision keeps
// (its data is {"spec":{"template":...}}); nil when it cannot tell.
func revisionContainers(cr appsv1.ControllerRevision) []string {
	var data struct {
		Spec struct {
			Template corev1.PodTemplateSpec `json:"template"`
		} `json:"spec"`
	}
	if len(cr.Data.Raw) == 0 || json.Unmarshal(cr.Data.Raw, &data) != nil {
		return nil
	}
	return specContainers(data.Spec.Template.Spec)
}
