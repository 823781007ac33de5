package release

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"helm.sh/helm/v4/pkg/action"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	release "helm.sh/helm/v4/pkg/release/v1"

	"github.com/helm-inject/helm-inject/chartify"
	"github.com/helm-inject/helm-inject/drift"
	"github.com/helm-inject/helm-inject/inject"
	"github.com/helm-inject/helm-inject/internal/testfs"
	"github.com/helm-inject/helm-inject/manifest"
)

// liveOf is the object the API server keeps for a manifest document that
// release web in namespace shop applied: the manifest, helm's ownership,
// the namespace, and what the server and controllers add (defaults, a
// status, managed fields).
func liveOf(t *testing.T, content string) *unstructured.Unstructured {
	t.Helper()
	u := ownedByRelease(unstructuredFrom(t, content), "web", "shop")
	u.SetNamespace("shop")
	u.SetResourceVersion("7")
	u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "helm", Operation: metav1.ManagedFieldsOperationApply}})
	return u
}

// liveDocs are a revision's documents: a ConfigMap, a Deployment, a
// Service and a hook (never kept in the cluster).
func liveDocs(t *testing.T) []manifest.Document {
	t.Helper()
	var docs []manifest.Document
	for _, c := range []string{
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  level: info",
		"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 2\n  template:\n    spec:\n      containers:\n      - name: web\n        image: registry.example/web:1.0\n        resources:\n          limits:\n            cpu: 500m",
		"apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports:\n  - port: 80",
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-hook\n  annotations:\n    helm.sh/hook: post-upgrade",
	} {
		d, err := manifest.Parse("web/templates/all.yaml", c)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, d)
	}
	return docs
}

func liveRevision() *release.Release {
	return &release.Release{Name: "web", Namespace: "shop", Version: 3, ApplyMethod: string(release.ApplyMethodServerSideApply)}
}

// set changes u at a path, as an edit in the cluster would; a number in
// the path is a list index.
func set(t *testing.T, u *unstructured.Unstructured, value any, path ...string) *unstructured.Unstructured {
	t.Helper()
	u = u.DeepCopy()
	var node any = u.Object
	for i, key := range path {
		last := i == len(path)-1
		switch n := node.(type) {
		case map[string]any:
			if last {
				n[key] = value
			} else {
				if n[key] == nil {
					n[key] = map[string]any{}
				}
				node = n[key]
			}
		case []any:
			j, err := strconv.Atoi(key)
			if err != nil || j >= len(n) {
				t.Fatalf("no item %s in %v", key, n)
			}
			if last {
				n[j] = value
			} else {
				node = n[j]
			}
		default:
			t.Fatalf("cannot set %v in %v", path, u.Object)
		}
	}
	return u
}

// TestCheckLive: the objects an upgrade would write are the missing ones
// and those where a field the manifest sets differs; what the API server,
// controllers or webhooks add is not drift, and hooks are not read.
func TestCheckLive(t *testing.T) {
	docs := liveDocs(t)
	cm, deploy, svc := liveOf(t, docs[0].Content), liveOf(t, docs[1].Content), liveOf(t, docs[2].Content)
	// What the cluster adds: defaults, a status, an extra container (a
	// webhook's), an annotation of kubectl rollout restart, the quantity
	// in another spelling.
	defaulted := set(t, deploy, int64(600), "spec", "progressDeadlineSeconds")
	defaulted = set(t, defaulted, map[string]any{"readyReplicas": int64(2)}, "status")
	defaulted = set(t, defaulted, "0.5", "spec", "template", "spec", "containers", "0", "resources", "limits", "cpu")
	containersOf := func(u *unstructured.Unstructured) []any {
		c, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
		return c
	}
	withSidecar := append(containersOf(deploy), map[string]any{"name": "istio-proxy", "image": "proxy:1"})
	defaulted = set(t, defaulted, withSidecar, "spec", "template", "spec", "containers")
	defaulted = set(t, defaulted, map[string]any{"kubectl.kubernetes.io/restartedAt": "now"}, "spec", "template", "metadata", "annotations")
	svcDefaulted := set(t, svc, "10.0.0.7", "spec", "clusterIP")
	svcDefaulted = set(t, svcDefaulted, []any{map[string]any{"port": int64(80), "protocol": "TCP", "targetPort": int64(80)}}, "spec", "ports")

	scaled := set(t, deploy, int64(5), "spec", "replicas")
	scaled.SetManagedFields(append(scaled.GetManagedFields(), metav1.ManagedFieldsEntry{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate,
		FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:replicas":{}}}`)}}))
	unlabelled := deploy.DeepCopy()
	unlabelled.SetLabels(nil)

	tests := []struct {
		name string
		live []*unstructured.Unstructured
		// want are kind/name and, for a changed object, its paths.
		want []string
	}{
		{"in sync", []*unstructured.Unstructured{cm, deploy, svc}, nil},
		{"what the cluster adds is not drift", []*unstructured.Unstructured{cm, defaulted, svcDefaulted}, nil},
		{"a deleted object", []*unstructured.Unstructured{deploy, svc}, []string{"ConfigMap/web-config missing"}},
		{"two deleted objects", []*unstructured.Unstructured{deploy}, []string{"ConfigMap/web-config missing", "Service/web missing"}},
		{"a field another manager changed", []*unstructured.Unstructured{cm, scaled, svc}, []string{"Deployment/web /spec/replicas edited by kubectl"}},
		{"a value edited", []*unstructured.Unstructured{set(t, cm, "debug", "data", "level"), deploy, svc}, []string{"ConfigMap/web-config /data/level edited"}},
		{"a field removed", []*unstructured.Unstructured{cm, deploy, set(t, svc, []any{}, "spec", "ports")}, []string{"Service/web /spec/ports edited"}},
		{"helm's ownership label removed", []*unstructured.Unstructured{cm, unlabelled, svc}, []string{"Deployment/web /metadata/labels removed in the cluster"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fakeClients(t, nil, tt.live...)
			var reads int
			c.dynamic.(*dynamicfake.FakeDynamicClient).PrependReactor("get", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
				reads++
				return false, nil, nil
			})
			drifted, err := checkLive(t.Context(), c, docs, liveRevision(), 2)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range drifted {
				s := o.drift.Kind + "/" + o.drift.Name
				if o.drift.Missing {
					s += " missing"
				}
				for _, d := range o.drift.Differences {
					s += " " + d.Path + " " + d.Cause
				}
				if o.drift.Namespace != "shop" {
					t.Errorf("%s: namespace %q, want the release's", s, o.drift.Namespace)
				}
				got = append(got, s)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("drift (-want +got):\n%s", diff)
			}
			if reads != 3 {
				t.Errorf("%d reads, want one per object of the manifest (3; the hook is not read)", reads)
			}
		})
	}
}

// TestCheckLiveUnknownKind: an object whose kind the cluster no longer
// serves (its CRD deleted) is missing, for the upgrade to create; other
// read errors stop the check with the object named.
func TestCheckLiveUnknownKind(t *testing.T) {
	widget, err := manifest.Parse("web/templates/w.yaml", "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w")
	if err != nil {
		t.Fatal(err)
	}
	drifted, err := checkLive(t.Context(), fakeClients(t, nil), []manifest.Document{widget}, liveRevision(), 4)
	if err != nil || len(drifted) != 1 || !drifted[0].drift.Missing || drifted[0].drift.Kind != "Widget" {
		t.Fatalf("a kind the cluster does not serve: %+v, %v; want Widget missing", drifted, err)
	}

	c := fakeClients(t, nil)
	c.dynamic.(*dynamicfake.FakeDynamicClient).PrependReactor("get", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "web-config", errors.New("no"))
	})
	_, err = checkLive(t.Context(), c, liveDocs(t)[:1], liveRevision(), 4)
	if err == nil || !strings.Contains(err.Error(), "reading v1 ConfigMap web-config from the cluster") || !apierrors.IsForbidden(err) {
		t.Errorf("a forbidden read: %v; want it named and kept", err)
	}
}

// conflictOn makes the fake API server answer a server-side apply of the
// Deployment with a conflict on its replicas, owned by kubectl, and
// records the patches it receives.
func conflictOn(c liveClients, patches *[]k8stesting.PatchActionImpl) {
	c.dynamic.(*dynamicfake.FakeDynamicClient).PrependReactor("patch", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.PatchActionImpl)
		*patches = append(*patches, p)
		if p.GetResource().Resource != "deployments" {
			return true, &unstructured.Unstructured{}, nil
		}
		err := apierrors.NewApplyConflict([]metav1.StatusCause{{Type: metav1.CauseTypeFieldManagerConflict, Field: ".spec.replicas", Message: `conflict with "kubectl" using apps/v1`}}, "Apply failed with 1 conflict")
		return true, nil, err
	})
}

// TestLiveDriftConflicts: with server-side apply and no
// --force-conflicts, fields other managers own are refused before
// anything is written, found by a dry run of helm's own apply (helm's
// field manager, no force); a missing object has none to check, and a
// client-side release is never refused.
func TestLiveDriftConflicts(t *testing.T) {
	docs := liveDocs(t)
	scaled := set(t, liveOf(t, docs[1].Content), int64(5), "spec", "replicas")
	edited := set(t, liveOf(t, docs[2].Content), int64(81), "spec", "ports", "0", "port")
	p := &plan{current: liveRevision(), rendered: nil}
	p.rendered = renderedOf(docs)

	var patches []k8stesting.PatchActionImpl
	clients := func(*action.Configuration) (liveClients, error) {
		c := fakeClients(t, nil, scaled, edited)
		conflictOn(c, &patches)
		return c, nil
	}
	_, err := liveDrift(t.Context(), nil, clients, p, "auto", true, 4)
	var conflict *ConflictError
	if !errors.As(err, &conflict) {
		t.Fatalf("server-side, no --force-conflicts: %v; want a ConflictError", err)
	}
	want := []FieldConflict{{Object: manifest.ID{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"}, Field: ".spec.replicas", Manager: `conflict with "kubectl" using apps/v1`}}
	if diff := cmp.Diff(want, conflict.Conflicts); diff != "" {
		t.Errorf("conflicts (-want +got):\n%s", diff)
	}
	for _, w := range []string{`release "web"`, "revision 3", "apps/v1 Deployment shop/web: .spec.replicas", "Nothing was written", "--force-conflicts"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the error lacks %q:\n%v", w, err)
		}
	}
	if len(patches) != 2 {
		t.Fatalf("%d patches, want a dry run of each changed object (the missing ConfigMap has nothing to conflict)", len(patches))
	}
	for _, pa := range patches {
		o := pa.PatchOptions
		if pa.PatchType != types.ApplyPatchType || len(o.DryRun) != 1 || o.DryRun[0] != metav1.DryRunAll || o.FieldManager != FieldManager || o.Force == nil || *o.Force {
			t.Errorf("the check sent %s with %+v; want a dry-run server-side apply as helm, without force", pa.PatchType, o)
		}
		if !strings.Contains(string(pa.Patch), `"meta.helm.sh/release-name":"web"`) || !strings.Contains(string(pa.Patch), `"namespace":"shop"`) {
			t.Errorf("the dry run applies %s; want the object as helm applies it (ownership, namespace)", pa.Patch)
		}
	}

	for _, tt := range []struct {
		name           string
		method, flag   string
		checkConflicts bool
	}{
		{"--force-conflicts", string(release.ApplyMethodServerSideApply), "auto", false},
		{"a client-side release", string(release.ApplyMethodClientSideApply), "auto", true},
		{"a helm 3 release (no method)", "", "", true},
		{"--server-side=false", string(release.ApplyMethodServerSideApply), "false", true},
	} {
		patches = nil
		p.current.ApplyMethod = tt.method
		drifted, err := liveDrift(t.Context(), nil, clients, p, tt.flag, tt.checkConflicts, 4)
		if err != nil || len(drifted) != 3 || len(patches) != 0 {
			t.Errorf("%s: %d drifted, %d patches, %v; want all three objects to take back and no conflict check", tt.name, len(drifted), len(patches), err)
		}
	}
	p.current.ApplyMethod = ""
	if drifted, err := liveDrift(t.Context(), nil, clients, p, "true", true, 4); !errors.As(err, &conflict) {
		t.Errorf("--server-side=true on a client-side release: %v, %v; want the conflicts", drifted, err)
	}
}

// renderedOf is a plan's render holding docs.
func renderedOf(docs []manifest.Document) *chartify.Rendered {
	return &chartify.Rendered{Documents: docs}
}

// TestApplyUnchangedReadsTheCluster runs apply on an unchanged chart over
// a cluster that holds the release's objects as applied, then without one
// of them, then with a field another manager changed: no revision while
// the cluster matches, a new one that takes the drift back, and a
// refusal that writes nothing for a server-side conflict.
func TestApplyUnchangedReadsTheCluster(t *testing.T) {
	cfg, src := apiRelease(t)
	var live []*unstructured.Unstructured
	var patches []k8stesting.PatchActionImpl
	apply := func(mut func(*Apply)) (*Result, error) {
		a := NewApply(cfg)
		a.Inputs = Inputs{Namespace: "shop", Injectors: &inject.Declared{}}
		a.clients = func(*action.Configuration) (liveClients, error) {
			c := fakeClients(t, nil, live...)
			conflictOn(c, &patches)
			return c, nil
		}
		if mut != nil {
			mut(a)
		}
		return a.Run(t.Context(), "api", src, nil)
	}
	res, err := apply(nil)
	if err != nil || !res.Installed {
		t.Fatalf("install: %v", err)
	}
	var objects []*unstructured.Unstructured
	for _, part := range manifest.Split(res.Release.Manifest) {
		u := unstructuredFrom(t, part)
		u = ownedByRelease(u, "api", "shop")
		u.SetNamespace("shop")
		objects = append(objects, u)
	}
	if len(objects) < 3 {
		t.Fatalf("the api chart installed %d objects", len(objects))
	}

	live = objects
	res, err = apply(nil)
	if err != nil || !res.Unchanged || !res.LiveChecked || res.Release.Version != 1 {
		t.Fatalf("the cluster as applied: %+v, %v; want unchanged, checked, revision 1", res, err)
	}
	res, err = apply(func(a *Apply) { a.SkipLiveCheck = true })
	if err != nil || !res.Unchanged || res.LiveChecked {
		t.Fatalf("--skip-live-check: %+v, %v; want unchanged, not checked", res, err)
	}

	// The first object deleted: an upgrade creates it again.
	live = objects[1:]
	res, err = apply(func(a *Apply) { a.SkipLiveCheck = true })
	if err != nil || !res.Unchanged {
		t.Fatalf("a deleted object with --skip-live-check: %+v, %v; want unchanged (the record is trusted)", res, err)
	}
	res, err = apply(nil)
	if err != nil || res.Unchanged || res.Release.Version != 2 || len(res.Drift) != 1 || !res.Drift[0].Missing || res.Drift[0].Name != objects[0].GetName() {
		t.Fatalf("a deleted object: %+v, %v; want revision 2 taking back %s", res, err, objects[0].GetName())
	}

	// A Deployment field owned by another manager: refused, nothing
	// written, unless --force-conflicts.
	live = nil
	for _, o := range objects {
		if o.GetKind() == "Deployment" {
			o = set(t, o, "registry.example/other:9", "spec", "template", "spec", "containers", "0", "image")
		}
		live = append(live, o)
	}
	if a, err := cfg.Releases.Last("api"); err != nil {
		t.Fatal(err)
	} else if rel, _ := V1Release(a); rel.ApplyMethod != string(release.ApplyMethodServerSideApply) {
		t.Fatalf("the release was applied %q, want server-side", rel.ApplyMethod)
	}
	_, err = apply(nil)
	var conflict *ConflictError
	if !errors.As(err, &conflict) || len(conflict.Conflicts) != 1 || conflict.Revision != 2 {
		t.Fatalf("a conflicting edit: %v; want a ConflictError on revision 2", err)
	}
	if h, _ := cfg.Releases.History("api"); len(h) != 2 {
		t.Errorf("the refused apply left %d revisions, want 2 (nothing written)", len(h))
	}
	res, err = apply(func(a *Apply) { a.ForceConflicts = true })
	if err != nil || res.Release.Version != 3 || len(res.Drift) != 1 {
		t.Fatalf("--force-conflicts: %+v, %v; want revision 3 taking the Deployment back", res, err)
	}
	if want := (drift.Difference{Path: "/spec/template/spec/containers/0/image", Kind: drift.Changed}); len(res.Drift[0].Differences) != 1 || res.Drift[0].Differences[0].Path != want.Path {
		t.Errorf("the drift taken back: %+v; want %s", res.Drift[0], want.Path)
	}
}

// TestUnchangedActsAsHelmUpgrade: with nothing to change, the flags that
// make helm's upgrade act still act: upgrade hooks and a new description
// make a revision (helm runs and stores them on every upgrade),
// --history-max prunes the history, the deployed revision kept.
func TestUnchangedActsAsHelmUpgrade(t *testing.T) {
	hook, err := manifest.Parse("api/templates/migrate.yaml", "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: migrate\n  annotations:\n    helm.sh/hook: post-install, post-upgrade")
	if err != nil {
		t.Fatal(err)
	}
	preHook := hook
	preHook.Hook = "pre-upgrade"
	installHook := hook
	installHook.Hook = "pre-install,post-delete"
	current := &release.Release{Name: "web", Namespace: "shop", Version: 4, Info: &release.Info{Status: rcommon.StatusDeployed, Description: "Upgrade complete"}}
	for _, tt := range []struct {
		name string
		docs []manifest.Document
		in   revisionInputs
		want []string
	}{
		{"a post-upgrade hook", []manifest.Document{hook}, revisionInputs{hooks: true}, []string{"the chart has post-upgrade hooks, which helm runs on every upgrade (--no-hooks skips them)"}},
		{"both upgrade hooks", []manifest.Document{hook, preHook}, revisionInputs{hooks: true}, []string{"the chart has pre-upgrade and post-upgrade hooks, which helm runs on every upgrade (--no-hooks skips them)"}},
		{"--no-hooks", []manifest.Document{hook}, revisionInputs{}, nil},
		{"install hooks only", []manifest.Document{installHook}, revisionInputs{hooks: true}, nil},
		{"a new description", nil, revisionInputs{description: "nightly"}, []string{`--description "nightly": helm stores it on a new revision (revision 4's is "Upgrade complete")`}},
		{"the same description", nil, revisionInputs{description: "Upgrade complete"}, nil},
	} {
		p := &plan{current: current, rendered: renderedOf(tt.docs)}
		got := helmUpgradeReasons(p, tt.in)
		if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}

// TestPruneHistory: --history-max with nothing to change prunes as Helm's
// storage does when an upgrade stores a revision: oldest first, never the
// deployed revision, nothing for 0.
func TestPruneHistory(t *testing.T) {
	for _, tt := range []struct {
		name     string
		max      int
		deployed int
		want     []int
	}{
		{"no limit", 0, 5, []int{1, 2, 3, 4, 5}},
		{"within the limit", 5, 5, []int{1, 2, 3, 4, 5}},
		{"oldest first", 3, 5, []int{3, 4, 5}},
		{"the deployed revision kept", 2, 1, []int{1, 5}},
	} {
		var rels []*release.Release
		for v := 1; v <= 5; v++ {
			st := rcommon.StatusSuperseded
			if v == tt.deployed {
				st = rcommon.StatusDeployed
			} else if v > tt.deployed {
				st = rcommon.StatusFailed
			}
			rels = append(rels, &release.Release{Name: "web", Namespace: "shop", Version: v, Info: &release.Info{Status: st}})
		}
		cfg := memoryConfig(t, rels...)
		if err := pruneHistory(cfg, "web", tt.max); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		h, err := cfg.Releases.History("web")
		if err != nil {
			t.Fatal(err)
		}
		var got []int
		for _, r := range h {
			rel, _ := V1Release(r)
			got = append(got, rel.Version)
		}
		slices.Sort(got)
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: revisions %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestFirstInstallCapabilities: a first install renders with the API
// versions of the chart's crds/, which Helm's install creates before it
// renders, so a template gated on the chart's own CRD is planned; with
// --skip-crds (nothing created) and on an upgrade it is not.
func TestFirstInstallCapabilities(t *testing.T) {
	dir := t.TempDir()
	testfs.Write(t, dir, map[string]string{
		"Chart.yaml":            "apiVersion: v2\nname: gated\nversion: 0.1.0\n",
		"crds/gadgets.yaml":     "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: gadgets.example.com\nspec:\n  group: example.com\n  names: {kind: Gadget, plural: gadgets}\n  scope: Namespaced\n  versions:\n  - {name: v1, served: true, storage: true}\n",
		"templates/gated.yaml":  "{{- if .Capabilities.APIVersions.Has \"example.com/v1/Gadget\" }}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: gated\n{{- end }}\n",
		"templates/always.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: always\n",
	})
	ch, _, err := chartify.Load(dir, chartify.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	planned := func(createsCRDs bool) []string {
		cfg := memoryConfig(t)
		cfg.RESTClientGetter = newFakeCluster()
		p, err := makePlan(t.Context(), cfg, "web", Source{Ref: "gated", Chart: ch}, nil, Inputs{Namespace: "shop", Injectors: &inject.Declared{}}, createsCRDs)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, d := range p.rendered.Documents {
			names = append(names, d.ID.Name)
		}
		slices.Sort(names)
		return names
	}
	if got := planned(true); !slices.Equal(got, []string{"always", "gated"}) {
		t.Errorf("a first install planned %v, want the gated ConfigMap too", got)
	}
	if got := planned(false); !slices.Equal(got, []string{"always"}) {
		t.Errorf("a first install with --skip-crds planned %v, want only the ungated one", got)
	}
}
