package cli

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/helm-inject/helm-inject/drift"
	"github.com/helm-inject/helm-inject/inject"
	"github.com/helm-inject/helm-inject/internal/testfs"
	"github.com/helm-inject/helm-inject/release"
)

// TestWriteStatusLive freezes status --live's text: injectors with their
// program, the history, drift with paths and causes (a Secret's value
// hidden, a deleted object, objects the release does not own, an object
// in another namespace named with it), pods by template with a webhook's
// container, pods per injector version.
func TestWriteStatusLive(t *testing.T) {
	prog := &inject.Program{Path: "/usr/local/bin/istioctl", SHA256: "sha256:0123456789abcdef", Version: "1.28.0"}
	rs := &release.ReleaseState{
		Name: "shop", Namespace: "prod", Revision: 2, Status: "deployed", Chart: "api-0.9.0", Source: "./api",
		Injectors: []release.InjectorState{{Name: "log-shipper", Version: "1.0.0", Newest: "1.1.0", Outdated: true}, {Name: "istioctl kube-inject -f FILE", Program: prog}},
		History: []release.RevisionInjectors{
			{Revision: 1, Status: "superseded", Injectors: []inject.Record{{Name: "log-shipper", Version: "1.0.0"}}},
			{Revision: 2, Status: "deployed", Injectors: []inject.Record{{Name: "log-shipper", Version: "1.0.0"}, {Name: "istioctl kube-inject -f FILE", Program: prog}}},
		},
		Live: &release.LiveState{
			Drifted: true, OldPods: 1,
			Objects: []release.ObjectDrift{
				{Kind: "Deployment", Name: "shop", Differences: []drift.Difference{
					{Path: "/spec/template/spec/containers/2/image", Kind: drift.Changed, Want: `"fluent-bit:2.2.0"`, Got: `"fluent-bit:9.9"`, Cause: "edited by kubectl-patch"},
					{Path: "/spec/template/spec/containers/0", Kind: drift.Added, Got: `{"name":"debug"}`, Cause: "added in the cluster by kubectl-patch"},
					{Path: "/spec/template/spec/volumes", Kind: drift.Removed, Want: `[{"name":"logs"}]`, Cause: "removed in the cluster"},
				}},
				{Kind: "Secret", Name: "db", Differences: []drift.Difference{{Path: "/data/password", Kind: drift.Changed, Cause: "edited"}}},
				{Kind: "Service", Name: "shop", Namespace: "prod", Missing: true},
				// Named by the record, not the release's: not read.
				{Kind: "ConfigMap", Name: "db-config", Namespace: "payments", NotOwned: true},
				{Kind: "ClusterRole", Name: "admin", NotOwned: true},
				{Kind: "ConfigMap", Name: "shared", Namespace: "common", Differences: []drift.Difference{{Path: "/data/level", Kind: drift.Changed, Want: `"info"`, Got: `"debug"`, Cause: "edited"}}},
			},
			Workloads: []release.LiveWorkload{
				{Kind: "Deployment", Name: "shop", Templates: []release.PodTemplate{
					{Name: "shop-75f8", Revision: 2, Current: true, Pods: 2, Ready: 1, Injectors: []string{"log-shipper@1.1.0"}, Containers: []string{"init:log-shipper=fluent-bit:3.0.4", "api=api:3.1"}},
					{Name: "shop-54c8", Revision: 1, Pods: 1, Ready: 1, Injectors: []string{"log-shipper@1.0.0"}, Containers: []string{"api=api:3.1", "istio-proxy=proxyv2"}, NotInTemplate: []string{"istio-proxy"}},
				}},
				{Kind: "StatefulSet", Name: "db", Templates: []release.PodTemplate{}},
				// Pods whose ReplicaSet is gone: no revision to show.
				{Kind: "Deployment", Name: "orphans", Templates: []release.PodTemplate{{Name: "orphans-5d4", Pods: 1, Containers: []string{"app=app:1"}}}},
			},
			InjectorPods: map[string]int{"log-shipper@1.1.0": 2, "log-shipper@1.0.0": 1},
		},
	}
	var out bytes.Buffer
	writeStatus(&out, rs)
	testfs.Golden(t, filepath.Join("..", "..", "fixtures", "golden", "status-live.txt"), out.Bytes(), *update, "If the change is intended, run go test ./internal/cli -run TestWriteStatusLive -update.")

	inSync := &release.LiveState{}
	out.Reset()
	writeLive(&out, inSync, "prod")
	if got := out.String(); got != "\nLIVE: in sync (no drift, every pod from its workload's current template)\n" {
		t.Errorf("in sync: %q", got)
	}
	out.Reset()
	writeLive(&out, &release.LiveState{Objects: make([]release.ObjectDrift, 2), OldPods: 3}, "prod")
	if got := out.String(); got != "\nLIVE: 2 objects drifted; 3 pods of an older template\n\nOBJECT  DRIFT  CAUSE\n" {
		t.Errorf("plurals: %q", got)
	}
	out.Reset()
	writeLive(&out, &release.LiveState{Objects: []release.ObjectDrift{{Kind: "ConfigMap", Name: "a", NotOwned: true}, {Kind: "ConfigMap", Name: "b", NotOwned: true}}}, "prod")
	if got := out.String(); !strings.HasPrefix(got, "\nLIVE: 2 objects not owned by this release\n") {
		t.Errorf("only objects not owned: %q", got)
	}
}

// TestWriteList freezes list's text with and without --live: a release
// in sync, one with drift and an object it does not own, one whose live
// view could not be read, one whose records could not: each on its row.
func TestWriteList(t *testing.T) {
	rels := []*release.ReleaseState{
		{Name: "api", Namespace: "prod", Revision: 3, Status: "deployed", Chart: "api-0.9.0", Injectors: []release.InjectorState{{Name: "log-shipper", Version: "1.0.0"}},
			Live: &release.LiveState{}},
		{Name: "steal", Namespace: "tenant", Revision: 1, Status: "deployed", Chart: "x-1.0.0", Injectors: []release.InjectorState{},
			Live: &release.LiveState{Drifted: true, Objects: []release.ObjectDrift{{Kind: "ConfigMap", Name: "db-config", Namespace: "payments", NotOwned: true}, {Kind: "Service", Name: "s", Missing: true}}}},
		{Name: "widgets", Namespace: "shop", Revision: 2, Status: "deployed", Chart: "widgets-1.0.0", Injectors: []release.InjectorState{{Name: "log-shipper", Version: "1.1.0"}},
			Error: `release "widgets": example.com/v1 Widget w: the cluster does not serve example.com/v1, Kind=Widget`},
		{Name: "broken", Namespace: "shop", Revision: 1, Status: "deployed", Chart: "b-0.1.0", Injectors: []release.InjectorState{},
			Error: `release "broken": revision 1: reading the helm-inject.io/injectors annotation: unexpected end of JSON input`},
	}
	var out bytes.Buffer
	if err := writeList(&out, rels, true); err != nil {
		t.Fatal(err)
	}
	out.WriteString("\n")
	noLive := []*release.ReleaseState{rels[0], rels[3]}
	noLive[0] = &release.ReleaseState{Name: "api", Namespace: "prod", Revision: 3, Status: "deployed", Chart: "api-0.9.0", Injectors: rels[0].Injectors, Outdated: true}
	if err := writeList(&out, noLive, false); err != nil {
		t.Fatal(err)
	}
	testfs.Golden(t, filepath.Join("..", "..", "fixtures", "golden", "list-live.txt"), out.Bytes(), *update, "If the change is intended, run go test ./internal/cli -run TestWriteList -update.")
}

// TestListExit: list exits 1 when a release could not be read, after
// printing every one, with or without --detailed-exitcode and whatever
// drifted; otherwise --detailed-exitcode's answer: 2 for drift, for pods
// of an older template and for an object the release does not own.
func TestListExit(t *testing.T) {
	ok := &release.ReleaseState{Name: "ok", Live: &release.LiveState{}}
	drifted := &release.ReleaseState{Name: "drifted", Live: &release.LiveState{Drifted: true, Objects: []release.ObjectDrift{{Kind: "ConfigMap", Name: "c"}}}}
	notOwned := &release.ReleaseState{Name: "stolen", Live: &release.LiveState{Drifted: true, Objects: []release.ObjectDrift{{Kind: "ConfigMap", Name: "c", NotOwned: true}}}}
	old := &release.ReleaseState{Name: "old", Live: &release.LiveState{OldPods: 1}}
	failed := &release.ReleaseState{Name: "failed", Error: "release \"failed\": forbidden"}
	for _, tc := range []struct {
		name     string
		detailed bool
		rels     []*release.ReleaseState
		code     int
	}{
		{"in sync", true, []*release.ReleaseState{ok}, 0},
		{"drift", true, []*release.ReleaseState{ok, drifted}, 2},
		{"not owned", true, []*release.ReleaseState{ok, notOwned}, 2},
		{"older pods", true, []*release.ReleaseState{old}, 2},
		{"drift without --detailed-exitcode", false, []*release.ReleaseState{drifted}, 0},
		{"unreadable", false, []*release.ReleaseState{ok, failed}, 1},
		{"unreadable and drift", true, []*release.ReleaseState{drifted, failed}, 1},
		{"none", true, nil, 0},
	} {
		err := listExit(liveFlags{live: true, detailedExit: tc.detailed}, tc.rels)
		code := 0
		var ee exitError
		switch {
		case errors.As(err, &ee):
			code = ee.code
		case err != nil:
			code = 1
		}
		if code != tc.code {
			t.Errorf("%s: %v (exit %d), want exit %d", tc.name, err, code, tc.code)
		}
	}
	if err := listExit(liveFlags{}, []*release.ReleaseState{ok, failed, failed}); err == nil || err.Error() != "could not read 2 of 3 releases; their rows say why" {
		t.Errorf("the message: %v", err)
	}
}
