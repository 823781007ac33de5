package inject

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/helm-inject/helm-inject/manifest"
)

// TestInjectorsNeverSeeNotResources: a document of the render that is no
// Kubernetes object (no apiVersion or kind, or no name) is handed to no
// injector, external program or built-in, and comes out of the pipeline
// unchanged and in its place; the resources around it are injected.
func TestInjectorsNeverSeeNotResources(t *testing.T) {
	const (
		values = "global:\n  hash:\n    key3: 13"
		spec   = "spec:\n  selector:\n    matchLabels:\n      app: x\n  template:\n    metadata:\n      labels:\n        app: x\n    spec:\n      containers:\n      - name: app\n        image: app:1"
		named  = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n" + spec
		// A workload without a name: a built-in injector would add its
		// sidecar to it if it got it.
		nameless = "apiVersion: apps/v1\nkind: Deployment\n" + spec
		noKind   = "apiVersion: v1\nmetadata:\n  name: no-kind\n  annotations:\n    helm.sh/hook: pre-install"
	)
	var in []manifest.Document
	for i, text := range []string{named, values, nameless, cmC, noKind} {
		d, err := manifest.ParseRendered("chart/templates/t"+strconv.Itoa(i)+".yaml", text)
		if err != nil {
			t.Fatal(err)
		}
		d.Trailer = "\n"
		in = append(in, d)
	}
	notResource := []bool{false, true, true, false, true}

	lib, err := LoadLibrary(exampleLibrary)
	if err != nil {
		t.Fatal(err)
	}
	builtIn, err := NewTemplateInjector(lib.Get("log-shipper", "1.1.0"), exampleParams["log-shipper"])
	if err != nil {
		t.Fatal(err)
	}
	seen := filepath.Join(t.TempDir(), "stdin")
	// Records what it got, and marks every document it returns.
	program := mustCommand(t, script(t, `tee "`+seen+`" | sed 's/^kind: \(.*\)/kind: \1\n# injected/'`))

	tests := []struct {
		name     string
		injector Injector
		// injected says whether the pipeline changed each resource.
		injected []bool
	}{
		{"external program", program, []bool{true, false, false, true, false}},
		{"built-in injector", builtIn, []bool{true, false, false, false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			os.Remove(seen)
			out, _, err := (&Pipeline{Injectors: []Injector{tt.injector}}).Run(t.Context(), in, Env{Release: "r", Namespace: "ns"})
			if err != nil {
				t.Fatal(err)
			}
			if len(out) != len(in) {
				t.Fatalf("%d documents out of %d", len(out), len(in))
			}
			for i, d := range out {
				if notResource[i] && !d.Equal(in[i]) {
					t.Errorf("document %d, no Kubernetes object, changed or moved:\n%s\nwant\n%s", i, d.Content, in[i].Content)
				}
				if changed := d.Content != in[i].Content; changed != tt.injected[i] {
					t.Errorf("document %d (%s) injected = %v, want %v:\n%s", i, in[i].Source, changed, tt.injected[i], d.Content)
				}
			}
			if got, err := os.ReadFile(seen); err == nil {
				for i, d := range in {
					if notResource[i] && strings.Contains(string(got), d.Content) {
						t.Errorf("the injector was given document %d, no Kubernetes object:\n%s", i, got)
					}
				}
			}
		})
	}
}
