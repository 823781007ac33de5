package release

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"helm.sh/helm/v4/pkg/action"
	release "helm.sh/helm/v4/pkg/release/v1"

	"github.com/helm-inject/helm-inject/drift"
	"github.com/helm-inject/helm-inject/manifest"
)

// LiveState is what runs in the cluster for a release: the objects that
// drifted from the release's manifest, and each workload's pods by the
// template they were made from.
type LiveState struct {
	// Drifted is true when an object differs from the manifest or is
	// missing.
	Drifted bool `json:"drifted"`
	// OldPods counts pods of a template older than the workload's current
	// one: a rollout still running, stuck, or kept by --reconcile never.
	OldPods int `json:"oldPods"`
	// Objects are the release's objects that drifted, in manifest order.
	Objects []ObjectDrift `json:"objects,omitempty"`
	// Workloads are the release's Deployments, StatefulSets and
	// DaemonSets with their pods.
	Workloads []LiveWorkload `json:"workloads,omitempty"`
	// InjectorPods counts running pods per built-in injector version
	// (name@version), as their pods' helm-inject.io/status says.
	InjectorPods map[string]int `json:"injectorPods,omitempty"`
}

// ObjectDrift is one object of the release that differs from its
// manifest.
type ObjectDrift struct {
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
	// Missing is true when the object is not in the cluster.
	Missing     bool               `json:"missing,omitempty"`
	Differences []drift.Difference `json:"differences,omitempty"`
}

// LiveWorkload is one workload's pods, grouped by template.
type LiveWorkload struct {
	Kind      string        `json:"kind"`
	Name      string        `json:"name"`
	Templates []PodTemplate `json:"templates"`
}

// PodTemplate is the pods made from one template of a workload (one
// ReplicaSet of a Deployment, one controller revision of a StatefulSet or
// DaemonSet).
type PodTemplate struct {
	// Name is the ReplicaSet or controller revision.
	Name string `json:"name"`
	// Revision is the workload's revision number of the template, when
	// the controller numbers them.
	Revision int64 `json:"revision,omitempty"`
	Current  bool  `json:"current"`
	Pods     int   `json:"pods"`
	Ready    int   `json:"ready"`
	// Injectors are the built-in injectors (name@version) the pods
	// record.
	Injectors []string `json:"injectors,omitempty"`
	// Containers are name=image of the pods' containers, init containers
	// as init:name=image.
	Containers []string `json:"containers,omitempty"`
	// NotInTemplate are containers the pods run that their template does
	// not have: injected by a mutating webhook when the pod was created.
	NotInTemplate []string `json:"notInTemplate,omitempty"`
}

// Live reads a release's objects and pods from the cluster; it only
// reads (get and list), in the release's namespace and its objects'
// namespaces.
type Live struct {
	// Ignore are drift rules for fields another controller owns.
	Ignore []drift.Ignore
}

// liveClients are the clients one live view uses.
type liveClients struct {
	mapper  meta.RESTMapper
	dynamic dynamic.Interface
	typed   kubernetes.Interface
}

// newLiveClients connects as the Helm configuration does.
func newLiveClients(cfg *action.Configuration) (liveClients, error) {
	var c liveClients
	rc, err := cfg.RESTClientGetter.ToRESTConfig()
	if err != nil {
		return c, fmt.Errorf("connecting to Kubernetes: %w", err)
	}
	if c.mapper, err = cfg.RESTClientGetter.ToRESTMapper(); err != nil {
		return c, fmt.Errorf("connecting to Kubernetes: %w", err)
	}
	if c.dynamic, err = dynamic.NewForConfig(rc); err != nil {
		return c, fmt.Errorf("connecting to Kubernetes: %w", err)
	}
	if c.typed, err = kubernetes.NewForConfig(rc); err != nil {
		return c, fmt.Errorf("connecting to Kubernetes: %w", err)
	}
	return c, nil
}

// Run reads the live state of rel's objects (hooks excluded: they are not
// kept) and of its workloads' pods.
func (l *Live) Run(ctx context.Context, c liveClients, rel *release.Release) (*LiveState, error) {
	docs, err := manifestDocuments(rel.Manifest, nil)
	if err != nil {
		return nil, fmt.Errorf("release %q: %w", rel.Name, err)
	}
	st := &LiveState{InjectorPods: map[string]int{}}
	for _, d := range docs {
		if d.Empty() {
			continue
		}
		if err := l.object(ctx, c, rel, d, st); err != nil {
			return nil, fmt.Errorf("release %q: %s: %w", rel.Name, d.ID, err)
		}
	}
	return st, nil
}

// object compares one document with its live object, and for a workload
// reads its pods.
func (l *Live) object(ctx context.Context, c liveClients, rel *release.Release, d manifest.Document, st *LiveState) error {
	var desired map[string]any
	if err := yaml.Unmarshal([]byte(d.Content), &desired); err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: desired}
	kind, name := u.GetKind(), u.GetName()
	live, ns, err := getLive(ctx, c, desired, rel.Namespace)
	if err != nil {
		return err
	}
	if live == nil {
		st.Drifted = true
		st.Objects = append(st.Objects, ObjectDrift{Kind: kind, Name: name, Namespace: ns, Missing: true})
		return nil
	}
	diffs := drift.Filter(drift.Compare(desired, live.Object), kind, name, l.Ignore)
	if len(diffs) > 0 {
		st.Drifted = true
		st.Objects = append(st.Objects, ObjectDrift{Kind: kind, Name: name, Namespace: ns, Differences: diffs})
	}
	if !isPodWorkload(live.GroupVersionKind().Group, kind) {
		return nil
	}
	wl, err := workloadPods(ctx, c.typed, live)
	if err != nil {
		return err
	}
	for _, t := range wl.Templates {
		if !t.Current {
			st.OldPods += t.Pods
		}
	}
	for _, t := range wl.Templates {
		for _, in := range t.Injectors {
			st.InjectorPods[in] += t.Pods
		}
	}
	st.Workloads = append(st.Workloads, wl)
	return nil
}

func isPodWorkload(group, kind string) bool {
	return group == "apps" && slices.Contains([]string{"Deployment", "StatefulSet", "DaemonSet"}, kind)
}
