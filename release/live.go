package release

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"sigs.k8s.io/yaml"

	"helm.sh/helm/v4/pkg/action"
	release "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"

	"github.com/helm-inject/helm-inject/drift"
	"github.com/helm-inject/helm-inject/manifest"
)

// LiveState is what runs in the cluster for a release: the objects that
// drifted from the release's manifest, and each workload's pods by the
// template they were made from.
type LiveState struct {
	// Drifted is true when an object differs from the manifest, is
	// missing, or is not owned by the release (the cluster's object of
	// that name is not the release's).
	Drifted bool `json:"drifted"`
	// OldPods counts pods of a template older than the workload's current
	// one: a rollout still running, stuck, or kept by --reconcile never.
	OldPods int `json:"oldPods"`
	// Objects are the release's objects that drifted or that the release
	// does not own, in manifest order.
	Objects []ObjectDrift `json:"objects,omitempty"`
	// Workloads are the release's Deployments, StatefulSets and
	// DaemonSets with their pods.
	Workloads []LiveWorkload `json:"workloads,omitempty"`
	// InjectorPods counts running pods per built-in injector version
	// (name@version), as their pods' helm-inject.io/status says.
	InjectorPods map[string]int `json:"injectorPods,omitempty"`
}

// ObjectDrift is one object of the release that differs from its
// manifest, or that the cluster has under the manifest's name but the
// release does not own.
type ObjectDrift struct {
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
	// Missing is true when the object is not in the cluster.
	Missing bool `json:"missing,omitempty"`
	// NotOwned is true when the cluster's object lacks helm's ownership
	// label and annotations of this release; its content is not read.
	NotOwned    bool               `json:"notOwned,omitempty"`
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
// namespaces. A release record is a Secret that anyone allowed to create
// Secrets in its namespace can write, naming any object in any namespace;
// so an object's content is read only when the object is the release's:
// its metadata, fetched alone, carries helm's ownership label and
// annotations of this release (the test helm makes before it adopts an
// object), and the record is stored in the namespace it names.
type Live struct {
	// Ignore are drift rules for fields another controller owns.
	Ignore []drift.Ignore
}

// liveClients are the clients one live view uses.
type liveClients struct {
	mapper  meta.RESTMapper
	dynamic dynamic.Interface
	typed   kubernetes.Interface
	// metadata reads an object's metadata without its content.
	metadata metadata.Interface
	// records is Helm's release storage of one namespace; nil when the
	// storage has no namespaces to check (the memory and SQL drivers).
	records func(namespace string) driver.Driver
}

// newLiveClients connects as the Helm configuration does.
func newLiveClients(cfg *action.Configuration) (liveClients, error) {
	var c liveClients
	rc, err := cfg.RESTClientGetter.ToRESTConfig()
	if err != nil {
		return c, fmt.Errorf("connecting to Kubernetes: %w", err)
	}
	// No token bucket: one client reads every object, and its bucket
	// (client-go's 5 a second past the burst) held an unchanged apply of
	// 1,000 objects for minutes, where helm, which builds a client per
	// object, is never held. What bounds the reads is the callers' own
	// concurrency (--write-concurrency, at most the burst limit).
	rc.QPS = -1
	if c.mapper, err = cfg.RESTClientGetter.ToRESTMapper(); err != nil {
		return c, fmt.Errorf("connecting to Kubernetes: %w", err)
	}
	if c.dynamic, err = dynamic.NewForConfig(rc); err != nil {
		return c, fmt.Errorf("connecting to Kubernetes: %w", err)
	}
	if c.typed, err = kubernetes.NewForConfig(rc); err != nil {
		return c, fmt.Errorf("connecting to Kubernetes: %w", err)
	}
	if c.metadata, err = metadata.NewForConfig(rc); err != nil {
		return c, fmt.Errorf("connecting to Kubernetes: %w", err)
	}
	c.records = namespacedRecords(cfg.Releases.Driver, c.typed)
	return c, nil
}

// namespacedRecords is Helm's release storage of one namespace, of the
// same kind as d: Secrets or ConfigMaps. nil for a storage without
// namespaces.
func namespacedRecords(d driver.Driver, typed kubernetes.Interface) func(string) driver.Driver {
	switch d.Name() {
	case driver.SecretsDriverName:
		return func(ns string) driver.Driver {
			s := driver.NewSecrets(typed.CoreV1().Secrets(ns))
			s.SetLogger(slog.DiscardHandler)
			return s
		}
	case driver.ConfigMapsDriverName:
		return func(ns string) driver.Driver {
			s := driver.NewConfigMaps(typed.CoreV1().ConfigMaps(ns))
			s.SetLogger(slog.DiscardHandler)
			return s
		}
	}
	return nil
}

// Run reads the live state of rel's objects (hooks excluded: they are not
// kept) and of its workloads' pods.
func (l *Live) Run(ctx context.Context, c liveClients, rel *release.Release) (*LiveState, error) {
	if err := c.checkRecord(rel); err != nil {
		return nil, fmt.Errorf("release %q: %w", rel.Name, err)
	}
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
	if err := yaml.Unmarshal(d.YAML(), &desired); err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: desired}
	kind, name := u.GetKind(), u.GetName()
	live, ns, err := getOwned(ctx, c, u, rel)
	if errors.Is(err, errNotOwned) {
		st.Drifted = true
		st.Objects = append(st.Objects, ObjectDrift{Kind: kind, Name: name, Namespace: ns, NotOwned: true})
		return nil
	}
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

// Helm's ownership metadata: the label and annotations helm sets on every
// object it applies and requires, all three, before it adopts an existing
// object into a release (checkOwnership in helm's pkg/action/validate.go).
const (
	helmManagedByLabel        = "app.kubernetes.io/managed-by"
	helmManagedBy             = "Helm"
	helmReleaseNameAnnotation = "meta.helm.sh/release-name"
	helmReleaseNSAnnotation   = "meta.helm.sh/release-namespace"
)

// errNotOwned is an object that the cluster has but the release does not
// own.
var errNotOwned = errors.New("not owned by this release")

// helmOwns is helm's ownership test: the object carries the managed-by
// label and the release-name and release-namespace annotations of the
// release name in namespace ns.
func helmOwns(obj metav1.Object, name, ns string) bool {
	annotations := obj.GetAnnotations()
	return obj.GetLabels()[helmManagedByLabel] == helmManagedBy &&
		hasValue(annotations, helmReleaseNameAnnotation, name) &&
		hasValue(annotations, helmReleaseNSAnnotation, ns)
}

func hasValue(m map[string]string, key, value string) bool {
	v, ok := m[key]
	return ok && v == value
}

// getOwned reads the live object of a manifest document when rel owns it:
// its metadata first, alone (a PartialObjectMetadata get: the API server
// sends no data, spec or status), and the whole object only when that
// metadata carries rel's ownership; the whole object's ownership is
// checked again (it may have changed in between; an API server that
// cannot send metadata alone is read whole) and the object dropped when
// it fails. It returns the namespace the object is in ("" when
// cluster-scoped; a namespaced object without one is in rel's), nil when
// the cluster does not have the object, and errNotOwned when the object
// is not rel's, in any namespace, rel's own included, and whether
// namespaced or cluster-scoped.
func getOwned(ctx context.Context, c liveClients, u *unstructured.Unstructured, rel *release.Release) (*unstructured.Unstructured, string, error) {
	gvr, ns, err := liveTarget(c.mapper, u, rel.Namespace)
	if err != nil {
		return nil, ns, err
	}
	owner, err := c.metadata.Resource(gvr).Namespace(ns).Get(ctx, u.GetName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, ns, nil
	case apierrors.IsNotAcceptable(err):
		// An API server that cannot answer with metadata alone (an
		// aggregated one may not): the whole object is read, and dropped
		// below unless the release owns it.
	case err != nil:
		return nil, ns, err
	case !helmOwns(owner, rel.Name, rel.Namespace):
		return nil, ns, errNotOwned
	}
	live, err := c.dynamic.Resource(gvr).Namespace(ns).Get(ctx, u.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, ns, nil
	}
	if err != nil {
		return nil, ns, err
	}
	if !helmOwns(live, rel.Name, rel.Namespace) {
		return nil, ns, errNotOwned
	}
	return live, ns, nil
}

// liveTarget is the resource and namespace of a manifest's object: ""
// for a cluster-scoped one, ns for a namespaced one that names none.
func liveTarget(mapper meta.RESTMapper, u *unstructured.Unstructured, ns string) (schema.GroupVersionResource, string, error) {
	gvk := u.GroupVersionKind()
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return schema.GroupVersionResource{}, "", fmt.Errorf("the cluster does not serve %s: %w", gvk, err)
	}
	if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		return mapping.Resource, "", nil
	}
	if u.GetNamespace() != "" {
		ns = u.GetNamespace()
	}
	return mapping.Resource, ns, nil
}

// checkRecord confirms that rel's record is stored in the namespace it
// names. Helm's storage takes a record's name and namespace from its
// content, not from where it is stored (list -A reads every namespace's),
// so a record written in one namespace can claim another, and the
// ownership test would then ask about that namespace's release. The
// record counts as stored there when that namespace's storage holds a
// record of the same name and revision with the same manifest (the only
// part of a record the live view follows). Helm's storage API takes no
// context: the query runs to its end.
func (c liveClients) checkRecord(rel *release.Release) error {
	if rel.Namespace == "" {
		return errors.New("its record names no namespace, so its objects are not read")
	}
	if c.records == nil {
		return nil
	}
	found, err := c.records(rel.Namespace).Query(map[string]string{"name": rel.Name, "owner": "helm", "version": strconv.Itoa(rel.Version)})
	if err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
		return fmt.Errorf("reading its record in namespace %q: %w", rel.Namespace, err)
	}
	for _, f := range found {
		if r, err := V1Release(f); err == nil && r != nil && r.Name == rel.Name && r.Namespace == rel.Namespace &&
			r.Version == rel.Version && r.Manifest == rel.Manifest {
			return nil
		}
	}
	return fmt.Errorf("its record names namespace %q, whose release storage holds no such record of revision %d: a record stored in another namespace, so its objects are not read", rel.Namespace, rel.Version)
}
