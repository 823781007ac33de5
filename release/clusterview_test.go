package release

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"

	"helm.sh/helm/v4/pkg/kube"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kubectl/pkg/validation"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/rest"
	kubetesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var _ genericclioptions.RESTClientGetter = (*countingGetter)(nil)

// countingGetter counts how often each part of the cluster's view is
// built, as helm's settings build it again on every call.
type countingGetter struct {
	mu                            sync.Mutex
	configs, discoveries, loaders int
	resources                     []*metav1.APIResourceList
	// reads counts the discovery client's answers of every group and
	// resource: what a new mapper reads (from the disk cache, in a real
	// cluster) before its first mapping.
	reads int
	// fake is the last discovery client's API server.
	fake *fakediscovery.FakeDiscovery
}

// countingDiscovery counts what a mapper reads.
type countingDiscovery struct {
	discovery.CachedDiscoveryInterface
	g *countingGetter
}

func (d countingDiscovery) ServerGroupsAndResources() ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	d.g.mu.Lock()
	d.g.reads++
	d.g.mu.Unlock()
	return d.CachedDiscoveryInterface.ServerGroupsAndResources()
}

func (g *countingGetter) ToRESTConfig() (*rest.Config, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.configs++
	return &rest.Config{Host: "https://127.0.0.1:6443", QPS: 50, Burst: 100}, nil
}

func (g *countingGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.discoveries++
	g.fake = &fakediscovery.FakeDiscovery{Fake: &kubetesting.Fake{Resources: g.resources}}
	return countingDiscovery{memory.NewMemCacheClient(g.fake), g}, nil
}

func (g *countingGetter) ToRESTMapper() (meta.RESTMapper, error) {
	return nil, errors.New("the view builds its mapper over its own discovery client")
}

func (g *countingGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.loaders++
	return clientcmd.NewDefaultClientConfig(*clientcmdapi.NewConfig(), nil)
}

// TestClusterViewBuildsEachPartOnce: however many clients ask, concurrently,
// the kubeconfig is loaded once and discovery is built once; each caller
// gets its own copy of the REST config; the mapper is one, over that
// discovery client, and maps the cluster's kinds.
func TestClusterViewBuildsEachPartOnce(t *testing.T) {
	base := &countingGetter{resources: []*metav1.APIResourceList{{
		GroupVersion: "apps/v1",
		APIResources: []metav1.APIResource{{Name: "deployments", Kind: "Deployment", Namespaced: true, Verbs: []string{"get"}}},
	}}}
	v := newClusterView(base)
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if _, err := v.ToRESTConfig(); err != nil {
				t.Error(err)
			}
			if _, err := v.ToRESTMapper(); err != nil {
				t.Error(err)
			}
			if _, err := v.ToDiscoveryClient(); err != nil {
				t.Error(err)
			}
			v.ToRawKubeConfigLoader()
		})
	}
	wg.Wait()
	if base.configs != 1 || base.discoveries != 1 || base.loaders != 1 {
		t.Errorf("built: %d configs, %d discovery clients, %d loaders; want 1 of each", base.configs, base.discoveries, base.loaders)
	}

	a, _ := v.ToRESTConfig()
	a.GroupVersion = &schema.GroupVersion{Group: "apps", Version: "v1"}
	a.Host = "changed"
	b, _ := v.ToRESTConfig()
	if b.Host != "https://127.0.0.1:6443" || b.GroupVersion != nil || b.QPS != 50 || b.Burst != 100 {
		t.Errorf("a caller's change reached the next caller's config: %+v", b)
	}

	// Each object helm builds asks for the mapper; the cluster's kinds
	// are read once.
	for range 3 {
		m, err := v.ToRESTMapper()
		if err != nil {
			t.Fatal(err)
		}
		mapping, err := m.RESTMapping(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "v1")
		if err != nil || mapping.Resource.Resource != "deployments" {
			t.Errorf("mapping apps/v1 Deployment: %v, %v", mapping, err)
		}
	}
	if base.reads != 1 {
		t.Errorf("discovery read %d times for three mappings, want once", base.reads)
	}
}

// TestClusterViewLearnsNewKinds: a kind the cluster starts serving after
// the view's discovery was read fresh (a CRD in templates/ whose custom
// resource is a post-install hook) is mapped: on "no matches for kind"
// the mapper resets, discovery is asked again, and the mapping is tried
// once more. A kind the cluster does not serve stays an error.
func TestClusterViewLearnsNewKinds(t *testing.T) {
	base := &countingGetter{resources: []*metav1.APIResourceList{{
		GroupVersion: "apps/v1",
		APIResources: []metav1.APIResource{{Name: "deployments", Kind: "Deployment", Namespaced: true, Verbs: []string{"get"}}},
	}}}
	v := newClusterView(base)
	dc, err := v.ToDiscoveryClient()
	if err != nil {
		t.Fatal(err)
	}
	// As the plan reads the capabilities: invalidated, then read, which
	// makes the cached discovery fresh.
	dc.Invalidate()
	if _, _, err := dc.ServerGroupsAndResources(); err != nil {
		t.Fatal(err)
	}
	m, err := v.ToRESTMapper()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.RESTMapping(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "v1"); err != nil {
		t.Fatal(err)
	}
	widget := schema.GroupKind{Group: "example.com", Kind: "Widget"}
	if _, err := m.RESTMapping(widget, "v1"); !meta.IsNoMatchError(err) {
		t.Fatalf("Widget before its CRD: %v, want no match", err)
	}
	// The CRD is created during the apply.
	base.fake.Resources = append(base.fake.Resources, &metav1.APIResourceList{
		GroupVersion: "example.com/v1",
		APIResources: []metav1.APIResource{{Name: "widgets", Kind: "Widget", Namespaced: true, Verbs: []string{"get"}}},
	})
	mapping, err := m.RESTMapping(widget, "v1")
	if err != nil || mapping.Resource.Resource != "widgets" {
		t.Fatalf("Widget after its CRD was created: %v, %v; want widgets", mapping, err)
	}
	if ms, err := m.RESTMappings(widget); err != nil || len(ms) != 1 {
		t.Errorf("RESTMappings(Widget): %v, %v", ms, err)
	}
	if gvk, err := m.KindFor(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}); err != nil || gvk.Kind != "Widget" {
		t.Errorf("KindFor(widgets): %v, %v", gvk, err)
	}
	if _, err := m.RESTMapping(schema.GroupKind{Group: "example.com", Kind: "Gadget"}, "v1"); !meta.IsNoMatchError(err) {
		t.Errorf("a kind the cluster never serves: %v, want no match", err)
	}
}

// countingFactory is a kube.Factory whose API server answers /version
// with gitVersion, and which counts the validators it builds.
type countingFactory struct {
	kube.Factory
	host       string
	validators int
}

func (f *countingFactory) KubernetesClientSet() (*kubernetes.Clientset, error) {
	return kubernetes.NewForConfig(&rest.Config{Host: f.host})
}

func (f *countingFactory) Validator(string) (validation.Schema, error) {
	f.validators++
	return refuseAll{}, nil
}

// refuseAll is a client-side schema that refuses every object.
type refuseAll struct{}

func (refuseAll) ValidateBytes([]byte) error { return errors.New("refused by the client-side schema") }

// TestSharedValidators: on an API server of 1.27 or newer, which validates
// every kind's fields itself, no client-side validator is built (no
// OpenAPI document is fetched) and objects are left to the server; on an
// older one, or one whose version cannot be read, the factory's validator
// is used, built once per directive for the process.
func TestSharedValidators(t *testing.T) {
	obj := []byte(`{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "bogus": 1}`)
	for _, tt := range []struct {
		gitVersion     string
		wantValidators int
	}{
		{"v1.31.0", 0},
		{"v1.27.0", 0},
		{"v2.0.0", 0},
		{"v1.26.15", 1},
		{"", 1}, // no version: the factory's validator
	} {
		t.Run(tt.gitVersion, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tt.gitVersion == "" {
					http.Error(w, "no", http.StatusInternalServerError)
					return
				}
				fmt.Fprintf(w, `{"major": "1", "minor": "x", "gitVersion": %q}`, tt.gitVersion)
			}))
			defer srv.Close()
			base := &countingFactory{host: srv.URL}
			f := &sharedValidators{Factory: base}
			for range 3 {
				s, err := f.Validator(metav1.FieldValidationStrict)
				if err != nil {
					t.Fatal(err)
				}
				err = s.ValidateBytes(obj)
				if tt.wantValidators == 0 && err != nil {
					t.Errorf("validated client-side on a server that validates itself: %v", err)
				}
				if tt.wantValidators > 0 && err == nil {
					t.Error("the factory's client-side validator was not used")
				}
			}
			if base.validators != tt.wantValidators {
				t.Errorf("factory validators built: %d, want %d", base.validators, tt.wantValidators)
			}
		})
	}
	// Ignore never validates: the factory's answer (its null schema).
	base := &countingFactory{host: "http://127.0.0.1:1"}
	if _, err := (&sharedValidators{Factory: base}).Validator(metav1.FieldValidationIgnore); err != nil || base.validators != 1 {
		t.Errorf("ignore: %v, %d validators from the factory, want 1", err, base.validators)
	}
}
