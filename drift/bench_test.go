package drift

import "testing"

// BenchmarkCompare: one Deployment as helm-inject renders it against the
// same Deployment as the API server returns it (defaults, managedFields),
// with a drifted image and an added container: what status --live does
// per object.
func BenchmarkCompare(b *testing.B) {
	desired := readObject(b, "testdata/deployment.yaml")
	live := readObject(b, "testdata/deployment-live.yaml")
	container(live, 1)["image"] = "registry.example/log-shipper:9.9"
	ps := podSpec(live)
	ps["containers"] = append(ps["containers"].([]any), map[string]any{"name": "debug", "image": "busybox"})
	b.ReportAllocs()
	for b.Loop() {
		if len(Compare(desired, live)) != 2 {
			b.Fatal("want two differences")
		}
	}
}

// BenchmarkProject: the same pair seen through the manifest, as diff
// --three-way-merge does per object.
func BenchmarkProject(b *testing.B) {
	desired := readObject(b, "testdata/deployment.yaml")
	live := readObject(b, "testdata/deployment-live.yaml")
	b.ReportAllocs()
	for b.Loop() {
		_ = Project(desired, live)
	}
}
