package release

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apimachinery/pkg/version"

	"helm.sh/helm/v4/pkg/kube"
	"k8s.io/kubectl/pkg/validation"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
)

// clusterView is the one view of the cluster a helm-inject process has:
// the kubeconfig loaded once, one discovery client and one REST mapper,
// shared by every client built from it (Helm's kube client and the
// clients of each object it builds, the live view, the progress watcher,
// the plan's capabilities).
//
// Helm's settings give a genericclioptions.ConfigFlags made without its
// persistent mode, which builds all three again on every call: each
// object Helm's resource builder maps re-loads the kubeconfig from disk
// and re-reads the whole disk discovery cache into a new mapper. That was
// about half of an apply's CPU at 500 workloads (docs/performance.md,
// "One cluster view per process").
//
// The mapper is kubectl's, a deferred discovery mapper over the discovery
// client (its disk cache read once), behind a relearningMapper: on a kind
// it does not know, it asks the API server again, every time, as helm's
// fresh mapper per Build does (see relearningMapper).
type clusterView struct {
	base genericclioptions.RESTClientGetter
	// ahead is in front of every client's transport (see readAhead).
	ahead *readAhead

	mu        sync.Mutex
	loader    clientcmd.ClientConfig
	config    *rest.Config
	discovery discovery.CachedDiscoveryInterface
	mapper    meta.RESTMapper
}

var _ genericclioptions.RESTClientGetter = (*clusterView)(nil)

func newClusterView(base genericclioptions.RESTClientGetter) *clusterView {
	return &clusterView{base: base, ahead: newReadAhead()}
}

// ToRESTConfig returns a copy of the REST config loaded once: callers set
// their own group version and serializer on what they get.
func (v *clusterView) ToRESTConfig() (*rest.Config, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.config == nil {
		c, err := v.base.ToRESTConfig()
		if err != nil {
			return nil, err
		}
		c.Wrap(v.ahead.wrap)
		v.config = c
	}
	return rest.CopyConfig(v.config), nil
}

func (v *clusterView) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.discoveryLocked()
}

func (v *clusterView) discoveryLocked() (discovery.CachedDiscoveryInterface, error) {
	if v.discovery == nil {
		dc, err := v.base.ToDiscoveryClient()
		if err != nil {
			return nil, err
		}
		v.discovery = dc
	}
	return v.discovery, nil
}

func (v *clusterView) ToRESTMapper() (meta.RESTMapper, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.mapper == nil {
		dc, err := v.discoveryLocked()
		if err != nil {
			return nil, err
		}
		// As ConfigFlags builds it, over this view's discovery client.
		deferred := restmapper.NewDeferredDiscoveryRESTMapper(dc)
		v.mapper = relearningMapper{restmapper.NewShortcutExpander(deferred, dc, func(string) {}).(meta.ResettableRESTMapper)}
	}
	return v.mapper, nil
}

// relearningMapper learns kinds the cluster serves only since it was
// last asked. The deferred discovery mapper asks again on an unknown kind
// only while its discovery is not fresh, and a discovery client counts as
// fresh for the rest of the process once it has been invalidated and read
// (the plan reads it so, for the capabilities). But kinds appear during
// an apply: a CRD in templates/ whose custom resource is a post-install
// hook, a hook that creates a CRD for a later one, an operator that
// registers its CRDs when it starts. Helm builds a new mapper for each
// Build, so it finds them; this mapper, shared by the whole process,
// resets (invalidating discovery) on every "no matches for kind" and
// tries once more, whatever freshness says.
type relearningMapper struct {
	meta.ResettableRESTMapper
}

// relearn calls f, and once more after a reset when f finds no match.
func relearn[T any](m relearningMapper, f func() (T, error)) (T, error) {
	v, err := f()
	if meta.IsNoMatchError(err) {
		m.Reset()
		v, err = f()
	}
	return v, err
}

func (m relearningMapper) KindFor(r schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	return relearn(m, func() (schema.GroupVersionKind, error) { return m.ResettableRESTMapper.KindFor(r) })
}

func (m relearningMapper) KindsFor(r schema.GroupVersionResource) ([]schema.GroupVersionKind, error) {
	return relearn(m, func() ([]schema.GroupVersionKind, error) { return m.ResettableRESTMapper.KindsFor(r) })
}

func (m relearningMapper) ResourceFor(r schema.GroupVersionResource) (schema.GroupVersionResource, error) {
	return relearn(m, func() (schema.GroupVersionResource, error) { return m.ResettableRESTMapper.ResourceFor(r) })
}

func (m relearningMapper) ResourcesFor(r schema.GroupVersionResource) ([]schema.GroupVersionResource, error) {
	return relearn(m, func() ([]schema.GroupVersionResource, error) { return m.ResettableRESTMapper.ResourcesFor(r) })
}

func (m relearningMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	return relearn(m, func() (*meta.RESTMapping, error) { return m.ResettableRESTMapper.RESTMapping(gk, versions...) })
}

func (m relearningMapper) RESTMappings(gk schema.GroupKind, versions ...string) ([]*meta.RESTMapping, error) {
	return relearn(m, func() ([]*meta.RESTMapping, error) { return m.ResettableRESTMapper.RESTMappings(gk, versions...) })
}

func (v *clusterView) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.loader == nil {
		v.loader = v.base.ToRawKubeConfigLoader()
	}
	return v.loader
}

// sharedValidators is Helm's kube client factory with one schema
// validator per field-validation directive for the whole process. The
// factory builds a new one for every Build, and each new one asks which
// kinds the API server validates itself (the fieldValidation parameter) by
// downloading and decoding the OpenAPI v3 document of every group version
// the manifest uses: 60% of a 10-workload apply's CPU (helm's
// validateManifest and its Build of the target both paid it). Every API
// server from Kubernetes 1.27 on validates fields itself, for every kind
// (the parameter is GA there, custom resources included), so the answer
// is known without the documents: the client-side schema is then never
// used, exactly as when the documents say so. An older server, or one
// whose version cannot be read, gets the factory's validator, kept for
// the process (it caches its verdict per kind, safely for concurrent use).
type sharedValidators struct {
	kube.Factory

	mu      sync.Mutex
	version *version.Info
	schemas map[string]validation.Schema
}

// serverValidatesFrom is the first Kubernetes minor version whose API
// server validates fields itself for every kind (fieldValidation GA).
const serverValidatesFrom = 27

func (f *sharedValidators) Validator(directive string) (validation.Schema, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok := f.schemas[directive]; ok {
		return s, nil
	}
	var s validation.Schema
	if directive != metav1.FieldValidationIgnore && f.serverValidatesLocked() {
		s = validation.NewParamVerifyingSchema(validation.NullSchema{}, serverValidates{}, directive)
	} else {
		var err error
		if s, err = f.Factory.Validator(directive); err != nil {
			return nil, err
		}
	}
	if f.schemas == nil {
		f.schemas = map[string]validation.Schema{}
	}
	f.schemas[directive] = s
	return s, nil
}

// serverValidatesLocked says whether the API server validates fields
// itself: its version, asked once, is 1.27 or newer.
func (f *sharedValidators) serverValidatesLocked() bool {
	if f.version == nil {
		cs, err := f.KubernetesClientSet()
		if err != nil {
			return false
		}
		if f.version, err = cs.Discovery().ServerVersion(); err != nil {
			f.version = &version.Info{}
			return false
		}
	}
	v, err := utilversion.ParseGeneric(f.version.GitVersion)
	if err != nil {
		return false
	}
	return v.Major() > 1 || v.Major() == 1 && v.Minor() >= serverValidatesFrom
}

// serverValidates is the verifier's answer for a server that validates
// every kind's fields itself.
type serverValidates struct{}

func (serverValidates) HasSupport(schema.GroupVersionKind) error { return nil }
