package release

import (
	"context"
	"fmt"
	"strings"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/kube"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/helm-inject/helm-inject/manifest"
)

// recreatePods is helm 3's --recreate-pods, which helm 4's SDK dropped:
// after an upgrade, the pods of every workload that the previous revision
// had too are deleted, so their controllers start them again (helm 3
// restarted the pods of the objects its upgrade updated, which are these).
// Pods are deleted with their UID as a precondition, so a pod that was
// already replaced is left alone.
func recreatePods(ctx context.Context, cfg *action.Configuration, p *plan) error {
	if p.current == nil {
		return nil
	}
	before, err := releaseDocuments(p.current, nil)
	if err != nil {
		return err
	}
	had := map[manifest.ID]bool{}
	for _, d := range before {
		had[d.ID.InNamespace(p.current.Namespace)] = true
	}
	var kept []manifest.Document
	for _, d := range p.rendered.Documents {
		if d.Hook == "" && !d.Empty() && had[d.ID.InNamespace(p.namespace)] {
			kept = append(kept, d)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	resources, err := cfg.KubeClient.Build(strings.NewReader(manifest.Join(kept)), false)
	if err != nil {
		return fmt.Errorf("reading the release's objects: %w", err)
	}
	rc, err := cfg.RESTClientGetter.ToRESTConfig()
	if err != nil {
		return fmt.Errorf("connecting to Kubernetes: %w", err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("connecting to Kubernetes: %w", err)
	}
	for _, res := range resources {
		selector, err := kube.SelectorsForObject(kube.AsVersioned(res))
		if err != nil {
			continue // not a workload: it has no pods
		}
		ns := res.Namespace
		if ns == "" {
			ns = p.namespace
		}
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
		if err != nil {
			return fmt.Errorf("listing the pods of %s/%s: %w", ns, res.Name, err)
		}
		for _, pod := range pods.Items {
			if err := cs.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, *metav1.NewPreconditionDeleteOptions(string(pod.UID))); err != nil {
				return fmt.Errorf("deleting pod %s/%s of %s: %w", pod.Namespace, pod.Name, res.Name, err)
			}
		}
	}
	return nil
}
