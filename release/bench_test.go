package release

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/loader"

	"github.com/helm-inject/helm-inject/inject"
	"github.com/helm-inject/helm-inject/internal/benchchart"
)

// BenchmarkTemplate: what `helm-inject template` does with the benchmarks'
// built-in injectors (benchchart.Injectors), in-process: load, render,
// inject, build the temporary chart and compute what it renders to.
func BenchmarkTemplate(b *testing.B) {
	sidecar, logShipper := benchchart.Injectors()
	for _, bi := range []benchchart.Injector{sidecar, logShipper} {
		lib, err := inject.LoadLibrary(filepath.Join("..", filepath.FromSlash(bi.Library)))
		if err != nil {
			b.Fatal(err)
		}
		ti, err := inject.NewTemplateInjector(lib.Get(bi.Name, bi.Version), bi.Params)
		if err != nil {
			b.Fatal(err)
		}
		for _, n := range []int{10, 100, 500, 2000} {
			b.Run(fmt.Sprintf("%s/N=%d", bi.Name, n), func(b *testing.B) {
				dir := filepath.Join(b.TempDir(), "bench")
				if err := benchchart.Write(dir, n); err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					ch, err := loader.Load(dir)
					if err != nil {
						b.Fatal(err)
					}
					t := &Template{Inputs: Inputs{Namespace: "default", Injectors: &inject.Declared{Specs: []inject.Spec{ti}}}}
					if _, err := t.Run(context.Background(), "bench", Source{Ref: dir, Chart: ch}, nil); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
