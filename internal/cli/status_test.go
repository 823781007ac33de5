package cli

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/helm-inject/helm-inject/drift"
	"github.com/helm-inject/helm-inject/inject"
	"github.com/helm-inject/helm-inject/internal/testfs"
	"github.com/helm-inject/helm-inject/release"
)

// TestWriteStatusLive freezes status --live's text: injectors with their
// program, the history, drift with paths and causes (a Secret's value
// hidden, a deleted object), pods by template with a webhook's container,
// pods per injector version.
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
				{Kind: "Service", Name: "shop", Missing: true},
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
	writeLive(&out, inSync)
	if got := out.String(); got != "\nLIVE: in sync (no drift, every pod from its workload's current template)\n" {
		t.Errorf("in sync: %q", got)
	}
	out.Reset()
	writeLive(&out, &release.LiveState{Objects: make([]release.ObjectDrift, 2), OldPods: 3})
	if got := out.String(); got != "\nLIVE: 2 objects drifted; 3 pods of an older template\n\nOBJECT  DRIFT  CAUSE\n" {
		t.Errorf("plurals: %q", got)
	}
}
