package release

import (
	"sync"

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
// The mapper is kubectl's: a deferred discovery mapper over the discovery
// client (its disk cache read once), which on a kind it does not know
// invalidates the cache and asks the API server once, as kubectl does.
type clusterView struct {
	base genericclioptions.RESTClientGetter

	mu        sync.Mutex
	loader    clientcmd.ClientConfig
	config    *rest.Config
	discovery discovery.CachedDiscoveryInterface
	mapper    meta.RESTMapper
}

var _ genericclioptions.RESTClientGetter = (*clusterView)(nil)

func newClusterView(base genericclioptions.RESTClientGetter) *clusterView {
	return &clusterView{base: base}
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
		v.mapper = restmapper.NewShortcutExpander(deferred, dc, func(string) {})
	}
	return v.mapper, nil
}

func (v *clusterView) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.loader == nil {
		v.loader = v.base.ToRawKubeConfigLoader()
	}
	return v.loader
}
