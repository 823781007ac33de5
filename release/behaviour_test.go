package release

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/scheme"
	metadatafake "k8s.io/client-go/metadata/fake"
	restfake "k8s.io/client-go/rest/fake"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/kube"
	kubefake "helm.sh/helm/v4/pkg/kube/fake"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	release "helm.sh/helm/v4/pkg/release/v1"

	"github.com/helm-inject/helm-inject/chartify"
	"github.com/helm-inject/helm-inject/drift"
	"github.com/helm-inject/helm-inject/inject"
	"github.com/helm-inject/helm-inject/internal/testfs"
)

// These tests hold behaviours the docs promise (helm4.md, live.md,
// reliability.md, the flags of apply and status) to answers written out
// here; each names what a user would see go wrong without it. The
// catalogue hack/mutants/release.yaml lists the bugs they catch.

// TestApplyMethodFollowsHelm4: a first install applies server-side (ssa)
// unless --server-side=false; a plain upgrade (--server-side auto or
// unset) applies the way the release's last revision did, so a release
// helm 3 made (no apply method) or --server-side=false made stays
// client-side (csa), as helm 4 does; --server-side=true|false chooses.
// Without it a user's plain `apply` would move a client-side release to
// server-side apply, and its field managers with it.
func TestApplyMethodFollowsHelm4(t *testing.T) {
	for _, tt := range []struct {
		name            string
		install         string
		helm3           bool // the installed revision records no apply method, as helm 3 writes it
		upgrade         string
		wantInstalled   string
		wantUpgradedWas string
	}{
		{name: "defaults", install: "", upgrade: "", wantInstalled: "ssa", wantUpgradedWas: "ssa"},
		{name: "auto", install: "auto", upgrade: "auto", wantInstalled: "ssa", wantUpgradedWas: "ssa"},
		{name: "client-side release, plain apply", install: "false", upgrade: "", wantInstalled: "csa", wantUpgradedWas: "csa"},
		{name: "client-side release, auto", install: "false", upgrade: "auto", wantInstalled: "csa", wantUpgradedWas: "csa"},
		{name: "helm 3 release, plain apply", install: "false", helm3: true, upgrade: "", wantInstalled: "csa", wantUpgradedWas: "csa"},
		{name: "server-side chosen on install", install: "true", upgrade: "", wantInstalled: "ssa", wantUpgradedWas: "ssa"},
		{name: "client-side chosen on upgrade", install: "", upgrade: "false", wantInstalled: "ssa", wantUpgradedWas: "csa"},
		{name: "server-side chosen on upgrade", install: "false", upgrade: "true", wantInstalled: "csa", wantUpgradedWas: "ssa"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, src := apiRelease(t)
			apply := func(serverSide string, vals map[string]any) *Result {
				t.Helper()
				a := NewApply(cfg)
				a.Inputs = Inputs{Namespace: "shop", SkipLiveCheck: true, Injectors: &inject.Declared{}}
				a.ServerSide = serverSide
				res, err := a.Run(t.Context(), "web", src, vals)
				if err != nil {
					t.Fatal(err)
				}
				return res
			}
			apply(tt.install, map[string]any{"logLevel": "info"})
			if got := lastRevision(t, cfg, "web").ApplyMethod; got != tt.wantInstalled {
				t.Errorf("install with --server-side=%q stored apply method %q, want %q", tt.install, got, tt.wantInstalled)
			}
			if tt.helm3 {
				rel := lastRevision(t, cfg, "web")
				rel.ApplyMethod = ""
				if err := cfg.Releases.Update(rel); err != nil {
					t.Fatal(err)
				}
			}
			// A new value: the upgrade makes revision 2.
			res := apply(tt.upgrade, map[string]any{"logLevel": "debug"})
			if res.Release.Version != 2 {
				t.Fatalf("the upgrade made revision %d, want 2", res.Release.Version)
			}
			if got := lastRevision(t, cfg, "web").ApplyMethod; got != tt.wantUpgradedWas {
				t.Errorf("upgrade with --server-side=%q stored apply method %q, want %q", tt.upgrade, got, tt.wantUpgradedWas)
			}
		})
	}
}

// TestApplyMethodReason: --server-side=true or =false on a release the
// other method deployed applies again though nothing else changed; a
// revision without an apply method is helm 3's client-side one. So
// `apply --server-side=false` of a release helm 3 made has nothing to do,
// and says so, instead of making a revision (and diff exiting 2) every
// time.
func TestApplyMethodReason(t *testing.T) {
	for _, tt := range []struct {
		deployed, flag string
		want           string
	}{
		{"", "false", ""},
		{"", "", ""},
		{"", "auto", ""},
		{"", "true", "--server-side=true: revision 3 was applied client-side (csa), apply applies server-side (ssa)"},
		{"csa", "false", ""},
		{"csa", "auto", ""},
		{"csa", "true", "--server-side=true: revision 3 was applied client-side (csa), apply applies server-side (ssa)"},
		{"ssa", "true", ""},
		{"ssa", "", ""},
		{"ssa", "false", "--server-side=false: revision 3 was applied server-side (ssa), apply applies client-side (csa)"},
	} {
		if got := applyMethodReason(&release.Release{Version: 3, ApplyMethod: tt.deployed}, tt.flag); got != tt.want {
			t.Errorf("revision applied %q, --server-side=%q: reason %q, want %q", tt.deployed, tt.flag, got, tt.want)
		}
	}

	// The same through apply: a helm 3 revision, the same inputs,
	// --server-side=false: no new revision.
	cfg, src := apiRelease(t)
	apply := func(serverSide string) *Result {
		t.Helper()
		a := NewApply(cfg)
		a.Inputs = Inputs{Namespace: "shop", SkipLiveCheck: true, Injectors: &inject.Declared{}}
		a.ServerSide = serverSide
		res, err := a.Run(t.Context(), "web", src, nil)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	apply("false")
	rel := lastRevision(t, cfg, "web")
	rel.ApplyMethod = ""
	if err := cfg.Releases.Update(rel); err != nil {
		t.Fatal(err)
	}
	if res := apply("false"); !res.Unchanged || res.Release.Version != 1 {
		t.Errorf("--server-side=false on a helm 3 release with the same inputs: revision %d, unchanged %v; want 1, unchanged", res.Release.Version, res.Unchanged)
	}
}

// existingObjects is a kube client over a cluster that already holds
// ConfigMap "adopted" in namespace shop, made by someone else (no helm
// ownership): Build gives it for a manifest that names it, and helm's
// ownership check reads it back. Everything else applies nothing, as
// helm's PrintingKubeClient.
type existingObjects struct {
	*kubefake.PrintingKubeClient
	body []byte
}

func newExistingObjects(t *testing.T) *existingObjects {
	t.Helper()
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "adopted", Namespace: "shop", Labels: map[string]string{"made-by": "kubectl"}},
		Data:       map[string]string{"owner": "someone else"}}
	body, err := json.Marshal(cm)
	if err != nil {
		t.Fatal(err)
	}
	return &existingObjects{PrintingKubeClient: &kubefake.PrintingKubeClient{Out: io.Discard}, body: body}
}

func (c *existingObjects) Build(r io.Reader, _ bool) (kube.ResourceList, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	if !strings.Contains(string(b), "name: adopted") {
		return kube.ResourceList{}, nil
	}
	obj := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "adopted", Namespace: "shop"}}
	client := &restfake.RESTClient{
		GroupVersion:         corev1.SchemeGroupVersion,
		NegotiatedSerializer: scheme.Codecs.WithoutConversion(),
		Client: restfake.CreateHTTPClient(func(*http.Request) (*http.Response, error) {
			header := http.Header{}
			header.Set("Content-Type", runtime.ContentTypeJSON)
			return &http.Response{StatusCode: http.StatusOK, Header: header, Body: io.NopCloser(bytes.NewReader(c.body))}, nil
		}),
	}
	return kube.ResourceList{{
		Name: "adopted", Namespace: "shop", Object: obj, Client: client,
		Mapping: &meta.RESTMapping{
			Resource:         schema.GroupVersionResource{Version: "v1", Resource: "configmaps"},
			GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"},
			Scope:            meta.RESTScopeNamespace,
		},
	}}, nil
}

var _ kube.Interface = (*existingObjects)(nil)

// TestTakeOwnership: --take-ownership adopts an object that exists in
// the cluster without helm's ownership, on the first apply (install) and
// on an upgrade that adds it to the release, as helm's flag does; without
// it both fail with helm's "exists and cannot be imported".
func TestTakeOwnership(t *testing.T) {
	dir := t.TempDir()
	testfs.Write(t, dir, map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: own\nversion: 0.1.0\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: own\ndata: {a: b}\n" +
			"{{- if .Values.adopt }}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: adopted\ndata: {owner: own}\n{{- end }}\n",
	})
	ch, _, err := chartify.Load(dir, chartify.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	src := Source{Ref: dir, Chart: ch}
	const refused = `ConfigMap "adopted" in namespace "shop" exists and cannot be imported into the current release`
	for _, tt := range []struct {
		name          string
		upgrade       bool // install without the object first, then add it
		takeOwnership bool
		wantErr       string
		wantVersion   int
	}{
		{name: "install", wantErr: refused},
		{name: "install --take-ownership", takeOwnership: true, wantVersion: 1},
		{name: "upgrade", upgrade: true, wantErr: refused},
		{name: "upgrade --take-ownership", upgrade: true, takeOwnership: true, wantVersion: 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := memoryConfig(t)
			cfg.RESTClientGetter = newFakeCluster()
			cfg.KubeClient = newExistingObjects(t)
			apply := func(vals map[string]any, takeOwnership bool) (*Result, error) {
				a := NewApply(cfg)
				a.Inputs = Inputs{Namespace: "shop", SkipLiveCheck: true, Injectors: &inject.Declared{}}
				a.TakeOwnership = takeOwnership
				return a.Run(t.Context(), "own", src, vals)
			}
			if tt.upgrade {
				if _, err := apply(nil, false); err != nil {
					t.Fatalf("installing without the existing object: %v", err)
				}
			}
			res, err := apply(map[string]any{"adopt": true}, tt.takeOwnership)
			switch {
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("error %v, want %q", err, tt.wantErr)
				}
			case err != nil:
				t.Errorf("apply: %v", err)
			case res.Release.Version != tt.wantVersion || !strings.Contains(res.Release.Manifest, "name: adopted"):
				t.Errorf("revision %d, manifest:\n%s\nwant revision %d with the adopted ConfigMap", res.Release.Version, res.Release.Manifest, tt.wantVersion)
			}
		})
	}
}

// secretLiveClients are liveClients over an in-memory cluster that serves
// Secrets: objs to the dynamic and the metadata client.
func secretLiveClients(t *testing.T, objs ...*unstructured.Unstructured) liveClients {
	t.Helper()
	mapper := meta.NewDefaultRESTMapper(nil)
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
	mapper.Add(gvk, meta.RESTScopeNamespace)
	var ro, mo []runtime.Object
	for _, o := range objs {
		ro = append(ro, o)
		mo = append(mo, &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Name: o.GetName(), Namespace: o.GetNamespace(), Labels: o.GetLabels(), Annotations: o.GetAnnotations()}})
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		{Version: "v1", Resource: "secrets"}: "SecretList",
	}, ro...)
	s := metadatafake.NewTestScheme()
	s.AddKnownTypeWithName(gvk, &metav1.PartialObjectMetadata{})
	s.AddKnownTypeWithName(gvk.GroupVersion().WithKind("SecretList"), &metav1.PartialObjectMetadataList{})
	return liveClients{mapper: mapper, dynamic: dyn, metadata: metadatafake.NewSimpleMetadataClient(s, mo...)}
}

// TestStatusLiveHidesSecretValues: status --live (text and -o json) shows
// where a Secret of the release drifted, never a value: not of a key
// deleted in the cluster (the manifest's value), not of a key edited there
// (either side), in base64 or decoded.
func TestStatusLiveHidesSecretValues(t *testing.T) {
	const manifest = "---\n# Source: api/templates/secret.yaml\napiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\ntype: Opaque\ndata:\n" +
		"  password: aHVudGVyMi1zZWNyZXQ=\n" + // hunter2-secret
		"  user: YWRtaW4tNDcxMQ==\n" // admin-4711
	rel := revision("web", "shop", 1, `[]`)
	rel.Manifest = manifest
	cfg := memoryConfig(t, rel)
	for _, tt := range []struct {
		name      string
		liveData  map[string]any
		wantDiffs []drift.Difference
	}{
		{
			name:      "a key deleted in the cluster",
			liveData:  map[string]any{"user": "YWRtaW4tNDcxMQ=="},
			wantDiffs: []drift.Difference{{Path: "/data/password", Kind: drift.Removed}},
		},
		{
			name:      "a key edited in the cluster",
			liveData:  map[string]any{"password": "ZWRpdGVkLWluLWNsdXN0ZXI=", "user": "YWRtaW4tNDcxMQ=="}, // edited-in-cluster
			wantDiffs: []drift.Difference{{Path: "/data/password", Kind: drift.Changed}},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			live := ownedByRelease(&unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
				"metadata": map[string]any{"name": "creds", "namespace": "shop"},
				"data":     tt.liveData,
			}}, "web", "shop")
			s := NewStatus(cfg)
			s.Live = &Live{}
			s.connect = func(*action.Configuration) (liveClients, error) { return secretLiveClients(t, live), nil }
			st, err := s.Run(t.Context(), "web")
			if err != nil {
				t.Fatal(err)
			}
			if st.Live == nil || !st.Live.Drifted || len(st.Live.Objects) != 1 {
				t.Fatalf("live state %+v, want the Secret drifted", st.Live)
			}
			got := st.Live.Objects[0]
			if got.Kind != "Secret" || got.Name != "creds" || got.Namespace != "shop" {
				t.Errorf("drifted object %s/%s in %q, want Secret/creds in shop", got.Kind, got.Name, got.Namespace)
			}
			if diff := cmp.Diff(tt.wantDiffs, got.Differences, cmpopts.IgnoreUnexported(drift.Difference{}), cmpopts.IgnoreFields(drift.Difference{}, "Cause")); diff != "" {
				t.Errorf("differences (-want +got):\n%s", diff)
			}
			b, err := json.Marshal(st)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range []string{"hunter2-secret", "aHVudGVyMi1zZWNyZXQ=", "edited-in-cluster", "ZWRpdGVkLWluLWNsdXN0ZXI=", "admin-4711", "YWRtaW4tNDcxMQ=="} {
				if strings.Contains(string(b), v) {
					t.Errorf("-o json shows %q: %s", v, b)
				}
			}
		})
	}
}

// TestLabelsAreStored: --labels are stored on the revision an apply makes,
// the first one too (helm list -l selects by them); an upgrade merges them
// over the last revision's, and a label set to "null" is removed, as
// helm's upgrade does.
func TestLabelsAreStored(t *testing.T) {
	cfg, src := apiRelease(t)
	for i, tt := range []struct {
		labels map[string]string
		want   map[string]string
	}{
		{map[string]string{"team": "a"}, map[string]string{"team": "a"}},
		{map[string]string{"tier": "web"}, map[string]string{"team": "a", "tier": "web"}},
		{map[string]string{"team": "null"}, map[string]string{"tier": "web"}},
	} {
		a := NewApply(cfg)
		a.Inputs = Inputs{Namespace: "shop", SkipLiveCheck: true, Injectors: &inject.Declared{}, Labels: tt.labels}
		if _, err := a.Run(t.Context(), "web", src, nil); err != nil {
			t.Fatal(err)
		}
		rel := lastRevision(t, cfg, "web")
		if rel.Version != i+1 {
			t.Errorf("--labels %v made revision %d, want %d", tt.labels, rel.Version, i+1)
		}
		if diff := cmp.Diff(tt.want, rel.Labels, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("revision %d, --labels %v: labels (-want +got):\n%s", rel.Version, tt.labels, diff)
		}
	}
}

// TestPendingRevisionSaysWhatEndsIt: a release whose newest revision is
// pending (the apply that started it was killed) is refused, naming the
// helm command that ends it: uninstall for a pending install (there is no
// revision to roll back to), rollback for a pending upgrade or rollback.
// Nothing is written.
func TestPendingRevisionSaysWhatEndsIt(t *testing.T) {
	for _, tt := range []struct {
		status rcommon.Status
		want   string
	}{
		{rcommon.StatusPendingInstall, "(revision 1 is pending-install); if none is (the one that started it was killed or lost the API server), `helm uninstall web` ends it"},
		{rcommon.StatusPendingUpgrade, "(revision 1 is pending-upgrade); if none is (the one that started it was killed or lost the API server), `helm rollback web` ends it"},
		{rcommon.StatusPendingRollback, "(revision 1 is pending-rollback); if none is (the one that started it was killed or lost the API server), `helm rollback web` ends it"},
	} {
		pending := revision("web", "shop", 1, `[]`)
		pending.Info.Status = tt.status
		_, src := apiRelease(t)
		cfg := memoryConfig(t, pending)
		cfg.RESTClientGetter = newFakeCluster()
		a := NewApply(cfg)
		a.Inputs = Inputs{Namespace: "shop", SkipLiveCheck: true, Injectors: &inject.Declared{}}
		_, err := a.Run(t.Context(), "web", src, nil)
		if err == nil || !strings.Contains(err.Error(), `release "web": another operation (install/upgrade/rollback) is in progress `+tt.want) {
			t.Errorf("%s: %v\nwant %s", tt.status, err, tt.want)
		}
		if all, _ := cfg.Releases.History("web"); len(all) != 1 {
			t.Errorf("%s: %d revisions stored, want the pending one alone", tt.status, len(all))
		}
	}
}

// TestHistoryMax: --history-max N keeps the newest N revisions of a
// release across upgrades (0: all), as helm upgrade does; without it the
// history grows by one record per apply.
func TestHistoryMax(t *testing.T) {
	for _, tt := range []struct {
		max  int
		want []int
	}{
		{2, []int{3, 4}},
		{3, []int{2, 3, 4}},
		{0, []int{1, 2, 3, 4}},
	} {
		cfg, src := apiRelease(t)
		for i := range 4 {
			a := NewApply(cfg)
			a.Inputs = Inputs{Namespace: "shop", SkipLiveCheck: true, Injectors: &inject.Declared{}}
			a.MaxHistory = tt.max
			if _, err := a.Run(t.Context(), "web", src, map[string]any{"logLevel": fmt.Sprint(i)}); err != nil {
				t.Fatal(err)
			}
		}
		found, err := cfg.Releases.History("web")
		if err != nil {
			t.Fatal(err)
		}
		rels, err := V1Releases(found)
		if err != nil {
			t.Fatal(err)
		}
		var got []int
		for _, r := range rels {
			got = append(got, r.Version)
		}
		if diff := cmp.Diff(tt.want, got, cmpopts.SortSlices(func(a, b int) bool { return a < b })); diff != "" {
			t.Errorf("--history-max %d: revisions kept (-want +got):\n%s", tt.max, diff)
		}
	}
}

// TestStatusOutdated: status and list say a built-in injector is
// OUTDATED when the library has a newer version than the one the release
// records, and the release is OUTDATED when any of its injectors is; an
// injector at the newest version, or an external one, is not.
func TestStatusOutdated(t *testing.T) {
	lib := t.TempDir()
	def := func(name, version string) string {
		return "name: " + name + "\nversion: " + version + "\ntemplate: |\n  annotations: {a: b}\n"
	}
	testfs.Write(t, lib, map[string]string{
		"alpha/1.0.0.yaml": def("alpha", "1.0.0"),
		"alpha/1.1.0.yaml": def("alpha", "1.1.0"),
		"beta/1.0.0.yaml":  def("beta", "1.0.0"),
	})
	l, err := inject.LoadLibrary(lib)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name         string
		records      string
		want         []InjectorState
		wantOutdated bool
	}{
		{
			name:    "the first of two outdated",
			records: `[{"name":"alpha","version":"1.0.0"},{"name":"beta","version":"1.0.0"}]`,
			want: []InjectorState{
				{Name: "alpha", Version: "1.0.0", Newest: "1.1.0", Outdated: true},
				{Name: "beta", Version: "1.0.0", Newest: "1.0.0"},
			},
			wantOutdated: true,
		},
		{
			name:    "the last of two outdated",
			records: `[{"name":"beta","version":"1.0.0"},{"name":"alpha","version":"1.0.0"}]`,
			want: []InjectorState{
				{Name: "beta", Version: "1.0.0", Newest: "1.0.0"},
				{Name: "alpha", Version: "1.0.0", Newest: "1.1.0", Outdated: true},
			},
			wantOutdated: true,
		},
		{
			name:    "at the newest versions",
			records: `[{"name":"alpha","version":"1.1.0"},{"name":"beta","version":"1.0.0"}]`,
			want: []InjectorState{
				{Name: "alpha", Version: "1.1.0", Newest: "1.1.0"},
				{Name: "beta", Version: "1.0.0", Newest: "1.0.0"},
			},
		},
		{
			name:    "an external injector",
			records: `[{"name":"sidecar-injector f=FILE","digest":"sha256:c"}]`,
			want:    []InjectorState{{Name: "sidecar-injector f=FILE"}},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := memoryConfig(t, revision("web", "shop", 1, tt.records))
			s := NewStatus(cfg)
			s.Library = l
			st, err := s.Run(t.Context(), "web")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, st.Injectors); diff != "" {
				t.Errorf("status injectors (-want +got):\n%s", diff)
			}
			if st.Outdated != tt.wantOutdated {
				t.Errorf("status: release outdated %v, want %v", st.Outdated, tt.wantOutdated)
			}
			ls := NewList(cfg)
			ls.Library = l
			list, err := ls.Run(t.Context())
			if err != nil || len(list) != 1 {
				t.Fatalf("list: %+v, %v", list, err)
			}
			if list[0].Outdated != tt.wantOutdated {
				t.Errorf("list: release outdated %v, want %v", list[0].Outdated, tt.wantOutdated)
			}
		})
	}
}

// TestRenderedRevisionFollowsTheNewestRevision: templates see the
// revision the apply stores, which follows the newest revision of any
// status, as helm's upgrade numbers it: after a failed upgrade (revision 2
// failed over a deployed 1) the apply stores and renders 3, and a release
// uninstalled with --keep-history is installed again as revision 2. A
// chart that names objects or checksums after .Release.Revision would
// otherwise render one revision and store another.
func TestRenderedRevisionFollowsTheNewestRevision(t *testing.T) {
	dir := t.TempDir()
	testfs.Write(t, dir, map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: rev\nversion: 0.1.0\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: rev\ndata:\n  revision: \"{{ .Release.Revision }}\"\n  upgrade: \"{{ .Release.IsUpgrade }}\"\n",
	})
	ch, _, err := chartify.Load(dir, chartify.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	src := Source{Ref: dir, Chart: ch}
	for _, tt := range []struct {
		name         string
		after        func(t *testing.T, cfg *action.Configuration)
		wantVersion  int
		wantRendered string
	}{
		{
			name: "a failed upgrade",
			after: func(t *testing.T, cfg *action.Configuration) {
				deployed := lastRevision(t, cfg, "rev")
				failed := *deployed
				info := *deployed.Info
				info.Status = rcommon.StatusFailed
				failed.Info, failed.Version = &info, 2
				if err := cfg.Releases.Create(&failed); err != nil {
					t.Fatal(err)
				}
			},
			wantVersion:  3,
			wantRendered: "revision: \"3\"\n  upgrade: \"true\"",
		},
		{
			name: "helm uninstall --keep-history",
			after: func(t *testing.T, cfg *action.Configuration) {
				un := action.NewUninstall(cfg)
				un.KeepHistory = true
				if _, err := un.Run("rev"); err != nil {
					t.Fatal(err)
				}
			},
			wantVersion:  2,
			wantRendered: "revision: \"2\"\n  upgrade: \"false\"",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := memoryConfig(t)
			cfg.RESTClientGetter = newFakeCluster()
			apply := func() *Result {
				t.Helper()
				a := NewApply(cfg)
				a.Inputs = Inputs{Namespace: "shop", SkipLiveCheck: true, Injectors: &inject.Declared{}}
				res, err := a.Run(t.Context(), "rev", src, nil)
				if err != nil {
					t.Fatal(err)
				}
				return res
			}
			apply()
			tt.after(t, cfg)
			res := apply()
			if res.Release.Version != tt.wantVersion || !strings.Contains(res.Release.Manifest, tt.wantRendered) {
				t.Errorf("stored revision %d rendered:\n%s\nwant revision %d rendering %q", res.Release.Version, res.Release.Manifest, tt.wantVersion, tt.wantRendered)
			}
		})
	}
}
