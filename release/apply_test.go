package release

import (
	"errors"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"

	"helm.sh/helm/v4/pkg/action"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"

	"github.com/helm-inject/helm-inject/chartify"
	"github.com/helm-inject/helm-inject/inject"
)

// fakeCluster is the RESTClientGetter of a cluster that answers discovery
// only (v1.31, the core and apps APIs): enough for planning, as Helm's
// printing kube client is enough for installing.
type fakeCluster struct {
	dc discovery.CachedDiscoveryInterface
}

func newFakeCluster() fakeCluster {
	fd := &fakediscovery.FakeDiscovery{
		Fake: &clienttesting.Fake{Resources: []*metav1.APIResourceList{
			{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "configmaps", Kind: "ConfigMap", Namespaced: true}}},
			{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{{Name: "deployments", Kind: "Deployment", Namespaced: true}}},
		}},
		FakedServerVersion: &version.Info{GitVersion: "v1.31.0", Major: "1", Minor: "31"},
	}
	return fakeCluster{dc: memory.NewMemCacheClient(fd)}
}

func (f fakeCluster) ToRESTConfig() (*rest.Config, error) {
	return &rest.Config{Host: "https://127.0.0.1:1"}, nil
}
func (f fakeCluster) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	return f.dc, nil
}
func (f fakeCluster) ToRESTMapper() (meta.RESTMapper, error) {
	return nil, errors.New("no REST mapper here")
}

// apiRelease is an in-memory Helm configuration over a cluster that answers
// discovery only, and the api fixture chart to apply with it.
func apiRelease(t *testing.T) (*action.Configuration, Source) {
	t.Helper()
	cfg := memoryConfig(t)
	cfg.RESTClientGetter = newFakeCluster()
	ch, _, err := chartify.Load("../fixtures/charts/api", chartify.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cfg, Source{Ref: "api", Chart: ch}
}

// TestApplyHistory walks a release's history in memory: install, an apply
// with the same inputs that makes no revision, a values change that does,
// each values mode as Helm's upgrade treats it, diff agreeing with apply
// each time, and a pending revision refused with what to do.
func TestApplyHistory(t *testing.T) {
	cfg, src := apiRelease(t)
	inputs := func(mode ValuesMode) Inputs {
		return Inputs{Namespace: "shop", SkipLiveCheck: true, ValuesMode: mode, Injectors: &inject.Declared{}}
	}
	// step applies and checks the outcome, after diff said the same.
	step := func(what string, mode ValuesMode, vals map[string]any, wantRevision int, wantUnchanged bool) *Result {
		t.Helper()
		d := NewDiff(cfg)
		d.Inputs, d.AllowUnreleased = inputs(mode), true
		dr, err := d.Run(t.Context(), "web", src, vals)
		if err != nil {
			t.Fatalf("%s: diff: %v", what, err)
		}
		a := NewApply(cfg)
		a.Inputs = inputs(mode)
		res, err := a.Run(t.Context(), "web", src, vals)
		if err != nil {
			t.Fatalf("%s: apply: %v", what, err)
		}
		if res.Release.Version != wantRevision || res.Unchanged != wantUnchanged {
			t.Errorf("%s: revision %d unchanged %v, want %d %v", what, res.Release.Version, res.Unchanged, wantRevision, wantUnchanged)
		}
		if dr.HasChanges() == res.Unchanged {
			t.Errorf("%s: diff says changes %v (%v), apply says unchanged %v", what, dr.HasChanges(), dr.Reasons, res.Unchanged)
		}
		return res
	}
	if r := step("install", ValuesDefault, nil, 1, false); !r.Installed {
		t.Errorf("the first apply did not install")
	}
	step("the same inputs", ValuesDefault, nil, 1, true)
	step("a new value", ValuesDefault, map[string]any{"logLevel": "debug"}, 2, false)
	// Helm's default reuses the last values when none are given.
	step("no values, default mode", ValuesDefault, nil, 2, true)
	step("--reuse-values without values", ValuesReuse, nil, 2, true)
	r := step("--reset-values", ValuesReset, nil, 3, false)
	if len(r.Release.Config) != 0 {
		t.Errorf("--reset-values stored %v", r.Release.Config)
	}
	step("--reset-then-reuse-values, a new value", ValuesResetThenReuse, map[string]any{"image": "registry.example/api:3.2"}, 4, false)
	r = step("--reuse-values, another value", ValuesReuse, map[string]any{"logLevel": "warn"}, 5, false)
	if r.Release.Config["image"] != "registry.example/api:3.2" || r.Release.Config["logLevel"] != "warn" {
		t.Errorf("--reuse-values stored %v, want the last values merged with the new one", r.Release.Config)
	}

	// A pending revision (its apply was killed) stops the next one.
	last := lastRevision(t, cfg, "web")
	last.Info.Status = rcommon.StatusPendingUpgrade
	if err := cfg.Releases.Update(last); err != nil {
		t.Fatal(err)
	}
	a := NewApply(cfg)
	a.Inputs = inputs(ValuesDefault)
	if _, err := a.Run(t.Context(), "web", src, nil); err == nil || !strings.Contains(err.Error(), "revision 5 is pending-upgrade") || !strings.Contains(err.Error(), "helm rollback web") {
		t.Errorf("apply over a pending revision: %v", err)
	}
}

// TestMissingRelease: upgrade without --install refuses a release that
// has no revision, as helm does, and writes nothing; with Install the same
// call installs it. diff refuses it without --allow-unreleased, and says
// whether the release is installed. A bare Apply waits helm's 5 minutes.
func TestMissingRelease(t *testing.T) {
	cfg, src := apiRelease(t)
	a := NewApply(cfg)
	if a.Timeout != 5*time.Minute || !a.Install {
		t.Errorf("NewApply: timeout %v, install %v; want helm's 5m0s and true", a.Timeout, a.Install)
	}
	a.Install = false
	a.Inputs = Inputs{Namespace: "shop", SkipLiveCheck: true, Injectors: &inject.Declared{}}
	d := NewDiff(cfg)
	d.Inputs = a.Inputs
	if _, err := d.Run(t.Context(), "web", src, nil); err == nil || !strings.Contains(err.Error(), `release "web" does not exist in namespace "shop"; use --allow-unreleased`) {
		t.Errorf("diff of a missing release: %v", err)
	}
	d.AllowUnreleased = true
	if dr, err := d.Run(t.Context(), "web", src, nil); err != nil || dr.Installed || !dr.HasChanges() {
		t.Errorf("diff --allow-unreleased of a missing release: %v, %+v; want not installed, with changes", err, dr)
	}
	// --three-way-merge of a release not installed yet: everything is
	// added, no live object is read.
	d.ThreeWayMerge = true
	if dr, err := d.Run(t.Context(), "web", src, nil); err != nil || dr.Installed || len(dr.Changes) == 0 || dr.Changes[0].Type != Added {
		t.Errorf("diff --allow-unreleased --three-way-merge of a missing release: %v, %+v; want everything added", err, dr)
	}
	d.ThreeWayMerge = false
	_, err := a.Run(t.Context(), "web", src, nil)
	if err == nil || !strings.Contains(err.Error(), `release "web" has no deployed revision; use apply or upgrade --install`) {
		t.Fatalf("upgrade of a missing release: %v", err)
	}
	if all, _ := cfg.Releases.ListReleases(); len(all) != 0 {
		t.Errorf("the refused upgrade stored %d revisions", len(all))
	}
	a.Install = true
	res, err := a.Run(t.Context(), "web", src, nil)
	if err != nil || !res.Installed || res.Release.Version != 1 {
		t.Fatalf("with Install: %v, %+v", err, res)
	}
	d.AllowUnreleased = false
	if dr, err := d.Run(t.Context(), "web", src, nil); err != nil || !dr.Installed || dr.HasChanges() {
		t.Errorf("diff of the installed release: %v, %+v; want installed, no changes", err, dr)
	}
}

// TestInstallReplacesAnUninstalledRelease: a release whose history holds
// only uninstalled revisions (helm uninstall --keep-history) is installed
// again with the next revision number, as helm upgrade --install does.
func TestInstallReplacesAnUninstalledRelease(t *testing.T) {
	cfg, src := apiRelease(t)
	apply := func() (*Result, error) {
		a := NewApply(cfg)
		a.Inputs = Inputs{Namespace: "shop", SkipLiveCheck: true, Injectors: &inject.Declared{}}
		return a.Run(t.Context(), "web", src, nil)
	}
	if _, err := apply(); err != nil {
		t.Fatal(err)
	}
	un := action.NewUninstall(cfg)
	un.KeepHistory = true
	if _, err := un.Run("web"); err != nil {
		t.Fatal(err)
	}
	res, err := apply()
	if err != nil {
		t.Fatalf("installing over an uninstalled revision: %v", err)
	}
	if !res.Installed || res.Release.Version != 2 || res.Release.Info.Status != rcommon.StatusDeployed {
		t.Errorf("got revision %d %s installed %v; want 2 deployed, installed", res.Release.Version, res.Release.Info.Status, res.Installed)
	}
}

// lastRevision is the newest stored revision of name.
func lastRevision(t *testing.T, cfg *action.Configuration, name string) *helmrelease.Release {
	t.Helper()
	found, err := cfg.Releases.Last(name)
	if err != nil {
		t.Fatal(err)
	}
	rel, err := V1Release(found)
	if err != nil {
		t.Fatal(err)
	}
	return rel
}
