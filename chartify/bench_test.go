package chartify

import (
	"fmt"
	"path/filepath"
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/loader"

	"github.com/helm-inject/helm-inject/internal/benchchart"
)

// benchSizes are the workload counts of every stage benchmark.
var benchSizes = []int{10, 100, 500, 2000}

func benchChart(b *testing.B, n int) string {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "bench")
	if err := benchchart.Write(dir, n); err != nil {
		b.Fatal(err)
	}
	return dir
}

func benchRendered(b *testing.B, n int) *Rendered {
	b.Helper()
	ch, err := loader.Load(benchChart(b, n))
	if err != nil {
		b.Fatal(err)
	}
	r, err := Render(ch, nil, RenderOptions{ReleaseName: "bench", Namespace: "default", Revision: 1})
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// BenchmarkRender: load the chart from disk and render it in-process, as
// `helm template` does.
func BenchmarkRender(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			dir := benchChart(b, n)
			for b.Loop() {
				ch, err := loader.Load(dir)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := Render(ch, nil, RenderOptions{ReleaseName: "bench", Namespace: "default", Revision: 1}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkBuildTempChart: the temporary chart from rendered documents.
func BenchmarkBuildTempChart(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			r := benchRendered(b, n)
			for b.Loop() {
				if _, err := BuildTempChart(r, r.Documents, TempChartOptions{Source: "bench"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkWriteAndLoadTempChart: write the temporary chart to disk and
// load it back, as every apply does before installing it.
func BenchmarkWriteAndLoadTempChart(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			r := benchRendered(b, n)
			tc, err := BuildTempChart(r, r.Documents, TempChartOptions{Source: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			for i := 0; b.Loop(); i++ {
				dir := filepath.Join(b.TempDir(), fmt.Sprint(i))
				if err := WriteChart(tc, dir); err != nil {
					b.Fatal(err)
				}
				if _, err := LoadWritten(dir); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
