package release

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"

	"github.com/helm-inject/helm-inject/inject"
	"github.com/helm-inject/helm-inject/internal/benchchart"
)

// BenchmarkTemplate: what `helm-inject template` does with a built-in
// injector, in-process: load, render, inject, build the temporary chart and
// compute what it renders to. sidecar 1.0.0 is the injector of the
// side-by-side bench; log-shipper 1.1.0 renders a larger patch per workload.
func BenchmarkTemplate(b *testing.B) {
	for _, tc := range []struct {
		dir, name, version string
		params             map[string]any
	}{
		{"../fixtures/injectors/library", "sidecar", "1.0.0", nil},
		{"../examples/injectors", "log-shipper", "1.1.0", map[string]any{"destination": "logs.example:24224"}},
	} {
		lib, err := inject.LoadLibrary(tc.dir)
		if err != nil {
			b.Fatal(err)
		}
		ti, err := inject.NewTemplateInjector(lib.Get(tc.name, tc.version), tc.params)
		if err != nil {
			b.Fatal(err)
		}
		for _, n := range []int{10, 100, 500, 2000} {
			b.Run(fmt.Sprintf("%s/N=%d", tc.name, n), func(b *testing.B) {
				dir := filepath.Join(b.TempDir(), "bench")
				if err := benchchart.Write(dir, n); err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					ch, err := loader.Load(dir)
					if err != nil {
						b.Fatal(err)
					}
					t := &Template{Namespace: "default", Pipeline: &inject.Pipeline{Injectors: []inject.Injector{ti}}}
					if _, err := t.Run(context.Background(), "bench", Source{Ref: dir, Chart: ch}, nil); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
