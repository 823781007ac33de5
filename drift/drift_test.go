package drift

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"sigs.k8s.io/yaml"
)

func readObject(t testing.TB, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := yaml.Unmarshal(b, &obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

func podSpec(obj map[string]any) map[string]any {
	return obj["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
}

func container(obj map[string]any, i int) map[string]any {
	return podSpec(obj)["containers"].([]any)[i].(map[string]any)
}

// managedBy adds a managedFields entry of manager owning fields.
func managedBy(obj map[string]any, manager, fieldsJSON string) {
	var fields map[string]any
	if err := yaml.Unmarshal([]byte(fieldsJSON), &fields); err != nil {
		panic(err)
	}
	meta := obj["metadata"].(map[string]any)
	meta["managedFields"] = append(meta["managedFields"].([]any), map[string]any{"manager": manager, "operation": "Update", "fieldsV1": fields})
}

var ignoreFields = cmpopts.IgnoreUnexported(Difference{})

// TestCompare: only the fields the manifest sets are compared, so the API
// server's defaults and canonical quantities are no drift; an added
// container, a changed image, a removed field and a changed list are,
// each with its JSON pointer and the manager that made it.
func TestCompare(t *testing.T) {
	tests := []struct {
		name string
		edit func(live map[string]any)
		want []Difference
	}{
		{"defaults, canonical quantities, dropped false: no drift", func(map[string]any) {}, nil},
		{"a container added by kubectl patch", func(live map[string]any) {
			ps := podSpec(live)
			ps["containers"] = append(ps["containers"].([]any), map[string]any{"name": "debug", "image": "busybox", "terminationMessagePath": "/dev/termination-log"})
			managedBy(live, "kubectl-patch", `{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"debug\"}":{".":{},"f:image":{},"f:name":{}}}}}}}`)
		}, []Difference{{Path: "/spec/template/spec/containers/2", Kind: Added, Got: `{"image":"busybox","name":"debug","terminationMessagePath":"/dev/termination-log"}`, Cause: "added in the cluster by kubectl-patch"}}},
		{"the sidecar's image edited", func(live map[string]any) {
			container(live, 1)["image"] = "registry.example/log-shipper:9.9"
			managedBy(live, "kubectl-edit", `{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"log-shipper\"}":{"f:image":{}}}}}}}`)
			// Managers of other fields are not named.
			managedBy(live, "kubectl-scale", `{"f:spec":{"f:replicas":{}}}`)
			managedBy(live, "kubectl-annotate", `{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"log-shipper\"}":{"f:args":{}}}}}}}`)
		}, []Difference{{Path: "/spec/template/spec/containers/1/image", Kind: Changed, Want: `"registry.example/log-shipper:1.0.0"`, Got: `"registry.example/log-shipper:9.9"`, Cause: "edited by kubectl-edit"}}},
		{"the sidecar removed", func(live map[string]any) {
			ps := podSpec(live)
			ps["containers"] = ps["containers"].([]any)[:1]
		}, []Difference{{Path: "/spec/template/spec/containers/1", Kind: Removed, Want: `{"image":"registry.example/log-shipper:1.0.0","name":"log-shipper","resources":{}}`, Cause: "removed in the cluster"}}},
		{"a request under a field an operator owns whole", func(live map[string]any) {
			container(live, 0)["resources"] = map[string]any{"requests": map[string]any{"cpu": "2", "memory": "1Gi"}}
			managedBy(live, "resource-operator", `{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{"f:resources":{}}}}}}}`)
		}, []Difference{{Path: "/spec/template/spec/containers/0/resources/requests/cpu", Kind: Changed, Want: "0.5", Got: `"2"`, Cause: "edited by resource-operator"}}},
		{"containers reordered: matched by name, pointers into the live list", func(live map[string]any) {
			ps := podSpec(live)
			c := ps["containers"].([]any)
			c[0], c[1] = c[1], c[0]
			c[1].(map[string]any)["image"] = "registry.example/web:2.0"
		}, []Difference{{Path: "/spec/template/spec/containers/1/image", Kind: Changed, Want: `"registry.example/web:1.0"`, Got: `"registry.example/web:2.0"`, Cause: "edited"}}},
		{"replicas scaled by an autoscaler", func(live map[string]any) {
			live["spec"].(map[string]any)["replicas"] = 5.0
			managedBy(live, "kube-controller-manager", `{"f:spec":{"f:replicas":{}}}`)
		}, []Difference{{Path: "/spec/replicas", Kind: Changed, Want: "2", Got: "5", Cause: "edited by kube-controller-manager"}}},
		{"an env var and a volume removed, an argument changed, a port's protocol defaulted", func(live map[string]any) {
			delete(container(live, 0), "env")
			podSpec(live)["volumes"] = []any{}
			container(live, 0)["args"] = []any{"--port", "9090"}
		}, []Difference{
			{Path: "/spec/template/spec/containers/0/args/1", Kind: Changed, Want: `"8080"`, Got: `"9090"`, Cause: "edited"},
			{Path: "/spec/template/spec/containers/0/env", Kind: Removed, Want: `[{"name":"LOG_LEVEL","value":"info"}]`, Cause: "removed in the cluster"},
			{Path: "/spec/template/spec/volumes", Kind: Changed, Want: `[{"emptyDir":{},"name":"logs"}]`, Got: `[]`, Cause: "edited"},
		}},
		{"a label the release sets changed; one it does not set added", func(live map[string]any) {
			live["metadata"].(map[string]any)["labels"] = map[string]any{"app": "other", "team": "x"}
		}, []Difference{{Path: "/metadata/labels/app", Kind: Changed, Want: `"web"`, Got: `"other"`, Cause: "edited"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			desired := readObject(t, "testdata/deployment.yaml")
			live := readObject(t, "testdata/deployment-live.yaml")
			tt.edit(live)
			got := Compare(desired, live)
			if diff := cmp.Diff(tt.want, got, ignoreFields, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("differences (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCompareSecret: a manifest's stringData is compared with the data the
// API server stores, and a Secret's values never show.
func TestCompareSecret(t *testing.T) {
	desired := map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "db"}, "stringData": map[string]any{"password": "s3cret"}}
	live := map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "db"}, "type": "Opaque", "data": map[string]any{"password": "czNjcmV0"}}
	if got := Compare(desired, live); len(got) != 0 {
		t.Errorf("stringData equal to data: %+v", got)
	}
	live["data"] = map[string]any{"password": "b3RoZXI="}
	got := Compare(desired, live)
	want := []Difference{{Path: "/data/password", Kind: Changed, Cause: "edited"}}
	if diff := cmp.Diff(want, got, ignoreFields); diff != "" {
		t.Errorf("a changed Secret value (-want +got):\n%s", diff)
	}
}

// TestIgnore: rules by pointer, for every object, a kind or one object;
// a pointer covers what is under it.
func TestIgnore(t *testing.T) {
	diffs := []Difference{{Path: "/spec/replicas"}, {Path: "/spec/template/metadata/annotations/x"}, {Path: "/spec/replicasX"}}
	tests := []struct {
		rule, kind, name string
		want             []string
	}{
		{"/spec/replicas", "Deployment", "web", []string{"/spec/template/metadata/annotations/x", "/spec/replicasX"}},
		{"Deployment:/spec/template/metadata", "Deployment", "web", []string{"/spec/replicas", "/spec/replicasX"}},
		{"Deployment/web:/spec/template/metadata/", "Deployment", "web", []string{"/spec/replicas", "/spec/replicasX"}},
		{"Deployment/api:/spec/replicas", "Deployment", "web", []string{"/spec/replicas", "/spec/template/metadata/annotations/x", "/spec/replicasX"}},
		{"StatefulSet:/spec/replicas", "Deployment", "web", []string{"/spec/replicas", "/spec/template/metadata/annotations/x", "/spec/replicasX"}},
	}
	for _, tt := range tests {
		r, err := ParseIgnore(tt.rule)
		if err != nil {
			t.Fatalf("%s: %v", tt.rule, err)
		}
		var got []string
		for _, d := range Filter(diffs, tt.kind, tt.name, []Ignore{r}) {
			got = append(got, d.Path)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s on %s/%s (-want +got):\n%s", tt.rule, tt.kind, tt.name, diff)
		}
	}
	for _, bad := range []string{"spec/replicas", "Deployment:spec", ":/spec", "a/b/c:/spec"} {
		if _, err := ParseIgnore(bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("ParseIgnore(%q) = %v, want an error naming it", bad, err)
		}
	}
}

// TestProject: the live object through the manifest's fields: defaults
// gone, drift kept, added containers kept.
func TestProject(t *testing.T) {
	desired := readObject(t, "testdata/deployment.yaml")
	live := readObject(t, "testdata/deployment-live.yaml")
	same := Project(desired, live)
	want := readObject(t, "testdata/deployment.yaml")
	delete(want, "status")
	delete(want["metadata"].(map[string]any), "creationTimestamp")
	if diff := cmp.Diff(want, same); diff != "" {
		t.Errorf("an undrifted object projects to the manifest (-want +got):\n%s", diff)
	}
	container(live, 1)["image"] = "registry.example/log-shipper:9.9"
	ps := podSpec(live)
	ps["containers"] = append(ps["containers"].([]any), map[string]any{"name": "debug", "image": "busybox"})
	container(live, 0)["args"] = []any{"--port"}
	got := Project(desired, live)
	container(want, 0)["args"] = []any{"--port"}
	container(want, 1)["image"] = "registry.example/log-shipper:9.9"
	podSpec(want)["containers"] = append(podSpec(want)["containers"].([]any), map[string]any{"name": "debug", "image": "busybox"})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("a drifted object (-want +got):\n%s", diff)
	}
}

// TestZeroValuesAreDefaults: a value the API server drops when it stores
// an object (false, 0, "", an empty list or map, a map of such) equals a
// missing field; anything else missing is removed.
func TestZeroValuesAreDefaults(t *testing.T) {
	desired := map[string]any{"kind": "X", "spec": map[string]any{"a": 0.0, "b": "", "c": map[string]any{}, "d": map[string]any{"e": nil, "f": false}, "g": []any{}, "h": false}}
	if got := Compare(desired, map[string]any{"kind": "X", "spec": map[string]any{}}); len(got) != 0 {
		t.Errorf("zero values against a stored object without them: %+v", got)
	}
	for _, v := range []any{1.0, "x", map[string]any{"e": 1.0}, []any{"x"}, true} {
		got := Compare(map[string]any{"kind": "X", "spec": map[string]any{"a": v}}, map[string]any{"kind": "X", "spec": map[string]any{}})
		if len(got) != 1 || got[0].Kind != Removed || got[0].Path != "/spec/a" {
			t.Errorf("%v missing from the cluster: %+v, want removed at /spec/a", v, got)
		}
	}
}

// TestSameScalar: values as the API server keeps them: numbers by value,
// quantities in canonical form.
func TestSameScalar(t *testing.T) {
	tests := []struct {
		want, got any
		same      bool
	}{
		{"0.5", "500m", true},
		{0.5, "500m", true},
		{0.25, "250m", true},
		{"1Gi", "1024Mi", true},
		{"1k", int64(1000), true},
		{2.0, int64(2), true},
		{2.0, int64(3), false},
		{"a", "b", false},
		{1.0, "1x", false},
		{true, "true", false},
	}
	for _, tt := range tests {
		if got := sameScalar(tt.want, tt.got); got != tt.same {
			t.Errorf("sameScalar(%#v, %#v) = %v, want %v", tt.want, tt.got, got, tt.same)
		}
	}
}
