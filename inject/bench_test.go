package inject

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	commonutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"

	"helm.sh/helm/v4/pkg/engine"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"

	"github.com/helm-inject/helm-inject/internal/benchchart"
	"github.com/helm-inject/helm-inject/manifest"
)

var benchSizes = []int{10, 100, 500, 2000}

// benchDocs renders the synthetic chart with Helm's engine (this package
// cannot use chartify, which imports it) into documents.
func benchDocs(b *testing.B, n int) []manifest.Document {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "bench")
	if err := benchchart.Write(dir, n); err != nil {
		b.Fatal(err)
	}
	ch, err := loader.Load(dir)
	if err != nil {
		b.Fatal(err)
	}
	vals, err := commonutil.ToRenderValues(ch, nil, common.ReleaseOptions{Name: "bench", Namespace: "default"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	files, err := engine.Render(ch, vals)
	if err != nil {
		b.Fatal(err)
	}
	var docs []manifest.Document
	for name, content := range files {
		for _, part := range releaseutil.SplitManifests(content) {
			d, err := manifest.Parse(name, part)
			if err != nil {
				b.Fatal(err)
			}
			docs = append(docs, d)
		}
	}
	return docs
}

// BenchmarkTemplateInjector: the benchmarks' built-in injectors
// (benchchart.Injectors) over every workload, in-process.
func BenchmarkTemplateInjector(b *testing.B) {
	sidecar, logShipper := benchchart.Injectors()
	for _, bi := range []benchchart.Injector{sidecar, logShipper} {
		lib, err := LoadLibrary(filepath.Join("..", filepath.FromSlash(bi.Library)))
		if err != nil {
			b.Fatal(err)
		}
		ti, err := NewTemplateInjector(lib.Get(bi.Name, bi.Version), bi.Params)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bi.Name, func(b *testing.B) { benchPipeline(b, ti) })
	}
}

// BenchmarkCommandInjector: the fixture injector program, one run per
// release, FILE form (write the file, run it, read and check its output).
func BenchmarkCommandInjector(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "sidecar-injector")
	if out, err := exec.Command("go", "build", "-o", bin, "../fixtures/injectors/sidecar-injector").CombinedOutput(); err != nil {
		b.Fatalf("building the fixture injector: %v\n%s", err, out)
	}
	cmd, err := ParseSpec(bin + " f=FILE")
	if err != nil {
		b.Fatal(err)
	}
	benchPipeline(b, cmd)
}

// benchPipeline runs a pipeline of inj over the synthetic chart's documents
// at every benchmark size.
func benchPipeline(b *testing.B, inj Injector) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			p := &Pipeline{Injectors: []Injector{inj}}
			docs := benchDocs(b, n)
			for b.Loop() {
				if _, _, err := p.Run(context.Background(), docs, Env{Release: "bench", Namespace: "default"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReconcile: checking an injector's output against its input,
// where the injector changed every Deployment and passed the Services
// through unchanged, as the fixture injector does.
func BenchmarkReconcile(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			docs := benchDocs(b, n)
			changed := slices.Clone(docs)
			for i, d := range changed {
				if d.ID.Kind == "Deployment" {
					changed[i].Content += "\n# injected"
				}
			}
			out := manifest.Join(changed)
			for b.Loop() {
				if _, err := Reconcile(docs, out, "default"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
