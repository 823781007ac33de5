package drift

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// These tests hold the behaviours of docs/live.md ("What counts as drift",
// "Ignoring fields") and docs/security.md ("a Secret that drifted") that
// hack/mutants/drift.yaml mutates; each case says what a user would see
// go wrong.

// secret is a v1 Secret as a release applies it: password "s3cret" and
// user "admin" in data, token "t0ken-value" in stringData.
func secret() map[string]any {
	return map[string]any{
		"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "db"},
		"data":       map[string]any{"password": "czNjcmV0", "user": "YWRtaW4="},
		"stringData": map[string]any{"token": "t0ken-value"},
	}
}

// liveSecret is the Secret as the API server returns it, stringData
// folded into data.
func liveSecret() map[string]any {
	return map[string]any{
		"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
		"metadata": map[string]any{"name": "db", "namespace": "shop"},
		"data":     map[string]any{"password": "czNjcmV0", "user": "YWRtaW4=", "token": "dDBrZW4tdmFsdWU="},
	}
}

// TestSecretDriftShowsNoValue: a Secret's drift names its path only, for
// a changed, a deleted and a wholly dropped value: otherwise status --live
// and its -o json print the release's password (base64) to whoever runs
// them.
func TestSecretDriftShowsNoValue(t *testing.T) {
	tests := []struct {
		name string
		edit func(live map[string]any)
		want []Difference
	}{
		{"in sync", func(map[string]any) {}, nil},
		{"a value changed by kubectl edit", func(live map[string]any) {
			live["data"].(map[string]any)["password"] = "b3RoZXI="
		}, []Difference{{Path: "/data/password", Kind: Changed, Cause: "edited"}}},
		{"a data key deleted in the cluster", func(live map[string]any) {
			delete(live["data"].(map[string]any), "password")
		}, []Difference{{Path: "/data/password", Kind: Removed, Cause: "removed in the cluster"}}},
		{"a stringData key deleted in the cluster", func(live map[string]any) {
			delete(live["data"].(map[string]any), "token")
		}, []Difference{{Path: "/data/token", Kind: Removed, Cause: "removed in the cluster"}}},
		{"every key deleted", func(live map[string]any) {
			live["data"] = map[string]any{}
		}, []Difference{
			{Path: "/data/password", Kind: Removed, Cause: "removed in the cluster"},
			{Path: "/data/token", Kind: Removed, Cause: "removed in the cluster"},
			{Path: "/data/user", Kind: Removed, Cause: "removed in the cluster"},
		}},
		{"data dropped whole", func(live map[string]any) {
			delete(live, "data")
		}, []Difference{{Path: "/data", Kind: Removed, Cause: "removed in the cluster"}}},
		{"data replaced by something else than a map", func(live map[string]any) {
			live["data"] = "czNjcmV0"
		}, []Difference{{Path: "/data", Kind: Changed, Cause: "edited"}}},
	}
	values := []string{"s3cret", "czNjcmV0", "admin", "YWRtaW4=", "t0ken-value", "dDBrZW4tdmFsdWU=", "b3RoZXI="}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			live := liveSecret()
			tt.edit(live)
			got := Compare(secret(), live)
			if diff := cmp.Diff(tt.want, got, ignoreFields, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("differences (-want +got):\n%s", diff)
			}
			b, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range values {
				if strings.Contains(string(b), v) {
					t.Errorf("the drift as -o json shows the value %q: %s", v, b)
				}
			}
		})
	}
}

// TestConfigMapDriftShowsValues: only a Secret's values are hidden; a
// ConfigMap's removed key shows the release's value.
func TestConfigMapDriftShowsValues(t *testing.T) {
	desired := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cfg"}, "data": map[string]any{"level": "info"}}
	live := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cfg"}, "data": map[string]any{}}
	want := []Difference{{Path: "/data/level", Kind: Removed, Want: `"info"`, Cause: "removed in the cluster"}}
	if diff := cmp.Diff(want, Compare(desired, live), ignoreFields); diff != "" {
		t.Errorf("differences (-want +got):\n%s", diff)
	}
}

// TestStringDataWinsOverData: a key a manifest sets in both data and
// stringData is stored with stringData's value, as the API server does;
// otherwise such a Secret shows drift after every apply.
func TestStringDataWinsOverData(t *testing.T) {
	desired := map[string]any{
		"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "db"},
		"data":       map[string]any{"password": "b2xk", "user": "YWRtaW4="}, // "old", "admin"
		"stringData": map[string]any{"password": "new"},
	}
	want := map[string]any{
		"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "db"},
		"data": map[string]any{"password": "bmV3", "user": "YWRtaW4="}, // "new", "admin"
	}
	if diff := cmp.Diff(want, NormalizeSecret(desired)); diff != "" {
		t.Errorf("NormalizeSecret (-want +got):\n%s", diff)
	}
	if _, ok := desired["stringData"]; !ok {
		t.Error("NormalizeSecret modified its argument")
	}
	tests := []struct {
		name, password string
		want           []Difference
	}{
		{"the cluster holds stringData's value", "bmV3", nil},
		{"the cluster holds data's value", "b2xk", []Difference{{Path: "/data/password", Kind: Changed, Cause: "edited"}}},
	}
	for _, tt := range tests {
		live := map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "db"}, "type": "Opaque",
			"data": map[string]any{"password": tt.password, "user": "YWRtaW4="}}
		if diff := cmp.Diff(tt.want, Compare(desired, live), ignoreFields, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}

// TestAddedItems: containers, init containers and volumes the cluster
// has and the manifest does not are drift, also where the manifest has no
// such list at all; items another tool adds to other named lists (env)
// are not. A native sidecar patched in would otherwise go unseen, and a
// proxy variable an admission controller adds would be reported.
func TestAddedItems(t *testing.T) {
	tests := []struct {
		name    string
		desired func(desired map[string]any)
		live    func(live map[string]any)
		want    []Difference
	}{
		{"an init container added where the manifest has none", func(map[string]any) {}, func(live map[string]any) {
			podSpec(live)["initContainers"] = []any{map[string]any{"name": "proxy", "image": "envoy:1.30", "restartPolicy": "Always"}}
			managedBy(live, "kubectl-patch", `{"f:spec":{"f:template":{"f:spec":{"f:initContainers":{"k:{\"name\":\"proxy\"}":{".":{},"f:image":{},"f:name":{},"f:restartPolicy":{}}}}}}}`)
		}, []Difference{{Path: "/spec/template/spec/initContainers/0", Kind: Added, Got: `{"image":"envoy:1.30","name":"proxy","restartPolicy":"Always"}`, Cause: "added in the cluster by kubectl-patch"}}},
		{"an init container added after the manifest's", func(desired map[string]any) {
			podSpec(desired)["initContainers"] = []any{map[string]any{"name": "migrate", "image": "web:1.0"}}
		}, func(live map[string]any) {
			podSpec(live)["initContainers"] = []any{
				map[string]any{"name": "migrate", "image": "web:1.0"},
				map[string]any{"name": "proxy", "image": "envoy:1.30"},
			}
		}, []Difference{{Path: "/spec/template/spec/initContainers/1", Kind: Added, Got: `{"image":"envoy:1.30","name":"proxy"}`, Cause: "added in the cluster"}}},
		{"a volume added where the manifest has none", func(desired map[string]any) {
			delete(podSpec(desired), "volumes")
		}, func(map[string]any) {}, []Difference{{Path: "/spec/template/spec/volumes/0", Kind: Added, Got: `{"emptyDir":{},"name":"logs"}`, Cause: "added in the cluster"}}},
		{"the API server's token volume is not drift where the manifest has none", func(desired map[string]any) {
			delete(podSpec(desired), "volumes")
		}, func(live map[string]any) {
			podSpec(live)["volumes"] = []any{tokenVolume()}
		}, nil},
		{"the API server's token volume is not drift beside the manifest's", func(map[string]any) {}, func(live map[string]any) {
			podSpec(live)["volumes"] = append(podSpec(live)["volumes"].([]any), tokenVolume())
		}, nil},
		{"a volume of that name that is no token volume is drift", func(map[string]any) {}, func(live map[string]any) {
			podSpec(live)["volumes"] = append(podSpec(live)["volumes"].([]any), map[string]any{"name": "kube-api-access-x9z2k", "hostPath": map[string]any{"path": "/"}})
		}, []Difference{{Path: "/spec/template/spec/volumes/1", Kind: Added, Got: `{"hostPath":{"path":"/"},"name":"kube-api-access-x9z2k"}`, Cause: "added in the cluster"}}},
		{"an env var added is not drift", func(map[string]any) {}, func(live map[string]any) {
			c := container(live, 0)
			c["env"] = append(c["env"].([]any), map[string]any{"name": "HTTP_PROXY", "value": "http://proxy:3128"})
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			desired := readObject(t, "testdata/deployment.yaml")
			live := readObject(t, "testdata/deployment-live.yaml")
			tt.desired(desired)
			tt.live(live)
			if diff := cmp.Diff(tt.want, Compare(desired, live), ignoreFields, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("differences (-want +got):\n%s", diff)
			}
		})
	}
}

// tokenVolume is the volume the ServiceAccount admission plugin adds to
// every pod.
func tokenVolume() map[string]any {
	return map[string]any{"name": "kube-api-access-x9z2k", "projected": map[string]any{"sources": []any{
		map[string]any{"serviceAccountToken": map[string]any{"expirationSeconds": 3607.0, "path": "token"}},
	}}}
}

// TestAddedItemsProjected: diff --three-way-merge's live side has the init
// containers and volumes the cluster added where the manifest has none.
func TestAddedItemsProjected(t *testing.T) {
	desired := readObject(t, "testdata/deployment.yaml")
	delete(podSpec(desired), "volumes")
	live := readObject(t, "testdata/deployment-live.yaml")
	podSpec(live)["initContainers"] = []any{map[string]any{"name": "proxy", "image": "envoy:1.30"}}
	ps := podSpec(Project(desired, live))
	want := map[string]any{
		"initContainers": []any{map[string]any{"name": "proxy", "image": "envoy:1.30"}},
		"volumes":        []any{map[string]any{"name": "logs", "emptyDir": map[string]any{}}},
	}
	got := map[string]any{"initContainers": ps["initContainers"], "volumes": ps["volumes"]}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the projection's added items (-want +got):\n%s", diff)
	}

	// The API server's token volume is no part of the live side: a diff
	// would show an upgrade removing it.
	for _, declared := range []bool{false, true} {
		desired := readObject(t, "testdata/deployment.yaml")
		live := readObject(t, "testdata/deployment-live.yaml")
		podSpec(live)["volumes"] = append(podSpec(live)["volumes"].([]any), tokenVolume())
		wantVolumes := podSpec(readObject(t, "testdata/deployment-live.yaml"))["volumes"]
		if !declared {
			delete(podSpec(desired), "volumes")
			podSpec(live)["volumes"] = []any{tokenVolume()}
			wantVolumes = nil
		}
		if got := podSpec(Project(desired, live))["volumes"]; !cmp.Equal(wantVolumes, got) {
			t.Errorf("manifest declares volumes %v: projected volumes = %v, want %v", declared, got, wantVolumes)
		}
	}
}

// TestStatusIsNotDrift: a status the chart renders is not compared, nor
// projected: controllers write it.
func TestStatusIsNotDrift(t *testing.T) {
	desired := map[string]any{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": map[string]any{"name": "data"}, "status": map[string]any{"phase": "Pending"}}
	live := map[string]any{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": map[string]any{"name": "data"}, "status": map[string]any{"phase": "Bound"}}
	if got := Compare(desired, live); len(got) != 0 {
		t.Errorf("a controller's status is drift: %+v", got)
	}
	if diff := cmp.Diff(map[string]any{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": map[string]any{"name": "data"}}, Project(desired, live)); diff != "" {
		t.Errorf("Project (-want +got):\n%s", diff)
	}
}

// TestUnnamedListLength: a list without names (args) is compared item by
// item only when both have as many items; an argument appended or dropped
// in the cluster is drift of the whole list.
func TestUnnamedListLength(t *testing.T) {
	const path = "/spec/template/spec/containers/0/args"
	tests := []struct {
		name string
		args []any
		want []Difference
	}{
		{"as applied", []any{"--port", "8080"}, nil},
		{"one appended", []any{"--port", "8080", "--debug"}, []Difference{{Path: path, Kind: Changed, Want: `["--port","8080"]`, Got: `["--port","8080","--debug"]`, Cause: "edited"}}},
		{"one dropped", []any{"--port"}, []Difference{{Path: path, Kind: Changed, Want: `["--port","8080"]`, Got: `["--port"]`, Cause: "edited"}}},
		{"one changed", []any{"--port", "9090"}, []Difference{{Path: path + "/1", Kind: Changed, Want: `"8080"`, Got: `"9090"`, Cause: "edited"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			desired := readObject(t, "testdata/deployment.yaml")
			live := readObject(t, "testdata/deployment-live.yaml")
			container(live, 0)["args"] = tt.args
			if diff := cmp.Diff(tt.want, Compare(desired, live), ignoreFields, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("differences (-want +got):\n%s", diff)
			}
		})
	}
}
