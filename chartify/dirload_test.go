//go:build unix

package chartify

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
)

// flatChartTimes is flatChart with the modification times the loader
// gives the chart and each of its files.
func flatChartTimes(ch *chart.Chart) []string {
	out := flatChart(ch)
	var walk func(prefix string, c *chart.Chart)
	walk = func(prefix string, c *chart.Chart) {
		out = append(out, prefix+"modtime "+c.ModTime.String())
		for _, f := range c.Raw {
			out = append(out, prefix+"raw modtime "+f.Name+" "+f.ModTime.String())
		}
		for _, d := range c.Dependencies() {
			walk(prefix+d.Name()+"/", d)
		}
	}
	walk("", ch)
	slices.Sort(out)
	return out
}

// mustMatchHelmLoadDir: loadDir gives what Helm's loader.LoadDir gives of
// dir: the same chart, file for file with their times, or the same error,
// which holds wantErr ("": none).
func mustMatchHelmLoadDir(t *testing.T, dir, wantErr string) *chart.Chart {
	t.Helper()
	want, helmErr := loader.LoadDir(dir)
	got, err := loadDir(dir, archive.MaxDecompressedChartSize)
	if fmt.Sprint(err) != fmt.Sprint(helmErr) {
		t.Fatalf("loadDir's error\n  %v\nHelm's\n  %v", err, helmErr)
	}
	switch {
	case wantErr == "" && err != nil:
		t.Fatalf("both fail: %v", err)
	case wantErr != "" && (err == nil || !strings.Contains(err.Error(), wantErr)):
		t.Fatalf("want an error with %q, both give %v", wantErr, err)
	case err != nil:
		return nil
	}
	if diff := cmp.Diff(flatChartTimes(want), flatChartTimes(got)); diff != "" {
		t.Errorf("(-helm +loadDir)\n%s", diff)
	}
	return got
}

// TestLoadDirMatchesHelm: Helm's own test charts, this project's, and
// folders made to meet each rule of Helm's directory loader (links to
// files, folders and the chart itself, a broken link, irregular files,
// ignored or not, a file over the size budget) load as Helm loads them.
func TestLoadDirMatchesHelm(t *testing.T) {
	loaderData := helmTestdata(t, "pkg/chart/v2/loader")
	utilData := helmTestdata(t, "pkg/chart/v2/util")
	for dir, wantErr := range map[string]string{
		filepath.Join(loaderData, "frobnitz"):              "",
		filepath.Join(loaderData, "frobnitz_with_bom"):     "",
		filepath.Join(loaderData, "frobnitz_with_symlink"): "",
		// A module zip keeps no links: Helm's links to /dev/null and to a
		// folder are plain files here (the cases below make both).
		filepath.Join(loaderData, "frobnitz_with_dev_null"):                "",
		filepath.Join(loaderData, "frobnitz_backslash"):                    "",
		filepath.Join(loaderData, "frobnitz.v1"):                           "",
		filepath.Join(loaderData, "albatross"):                             "",
		filepath.Join(utilData, "dependent-chart-helmignore"):              "",
		filepath.Join(utilData, "three-level-dependent-chart", "umbrella"): "",
		filepath.Join(utilData, "subpop"):                                  "",
		webapp:                                                             "",
		"../fixtures/charts/api":                                           "",
	} {
		t.Run(filepath.Base(dir), func(t *testing.T) { mustMatchHelmLoadDir(t, dir, wantErr) })
	}

	chartYAML := "apiVersion: v2\nname: made\nversion: 0.1.0\n"
	for name, c := range map[string]struct {
		build   func(t *testing.T, dir string)
		wantErr string
		// templates are the chart's templates when it loads.
		templates []string
	}{
		"links to a file, a folder and out of the chart": {build: func(t *testing.T, dir string) {
			outside := t.TempDir()
			write(t, filepath.Join(outside, "cm.yaml"), "kind: ConfigMap\n")
			write(t, filepath.Join(outside, "more", "x.yaml"), "kind: Secret\n")
			link(t, filepath.Join(outside, "cm.yaml"), filepath.Join(dir, "templates", "cm.yaml"))
			link(t, filepath.Join(outside, "more"), filepath.Join(dir, "templates", "more"))
		}, templates: []string{"templates/cm.yaml", "templates/more/x.yaml", "templates/svc.yaml"}},
		"a broken link": {build: func(t *testing.T, dir string) {
			link(t, filepath.Join(dir, "nowhere"), filepath.Join(dir, "templates", "gone.yaml"))
		}, wantErr: "error evaluating symlink"},
		"a link to /dev/null": {build: func(t *testing.T, dir string) {
			link(t, os.DevNull, filepath.Join(dir, "templates", "null.yaml"))
		}, wantErr: "cannot load irregular file"},
		"a named pipe": {build: func(t *testing.T, dir string) {
			mkfifo(t, filepath.Join(dir, "templates", "pipe"))
		}, wantErr: "cannot load irregular file"},
		"an ignored named pipe and folder": {build: func(t *testing.T, dir string) {
			mkfifo(t, filepath.Join(dir, "templates", "pipe"))
			write(t, filepath.Join(dir, "skipped", "x.yaml"), "kind: Secret\n")
			write(t, filepath.Join(dir, ".helmignore"), "templates/pipe\nskipped/\n")
		}, templates: []string{"templates/svc.yaml"}},
		"a file over the budget before a named pipe": {build: func(t *testing.T, dir string) {
			big(t, filepath.Join(dir, "templates", "a-big.yaml"), archive.MaxDecompressedChartSize+1)
			mkfifo(t, filepath.Join(dir, "templates", "b-pipe"))
		}, wantErr: "error reading templates/a-big.yaml: chart exceeds maximum decompressed size"},
		"a named pipe before a file over the budget": {build: func(t *testing.T, dir string) {
			mkfifo(t, filepath.Join(dir, "templates", "a-pipe"))
			big(t, filepath.Join(dir, "templates", "b-big.yaml"), archive.MaxDecompressedChartSize+1)
		}, wantErr: "cannot load irregular file"},
		"files that together pass the budget": {build: func(t *testing.T, dir string) {
			big(t, filepath.Join(dir, "templates", "a.yaml"), archive.MaxDecompressedChartSize/2+1)
			big(t, filepath.Join(dir, "templates", "b.yaml"), archive.MaxDecompressedChartSize/2+1)
		}, wantErr: "error reading templates/b.yaml: chart exceeds maximum decompressed size"},
		"files that fill the budget to the byte": {build: func(t *testing.T, dir string) {
			used := int64(len(chartYAML) + len("kind: Service\n"))
			big(t, filepath.Join(dir, "templates", "fill.yaml"), archive.MaxDecompressedChartSize-used)
		}, templates: []string{"templates/fill.yaml", "templates/svc.yaml"}},
		"a link to a file longer than its size says": {build: func(t *testing.T, dir string) {
			// /proc files stat as empty and read as text: the loader
			// reads past what fstat said, as Helm's reads to the end.
			link(t, "/proc/version", filepath.Join(dir, "templates", "version.txt"))
		}, templates: []string{"templates/svc.yaml", "templates/version.txt"}},
		"a byte order mark": {build: func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "templates", "bom.yaml"), "\xEF\xBB\xBFkind: Secret\n")
		}, templates: []string{"templates/bom.yaml", "templates/svc.yaml"}},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, filepath.Join(dir, "Chart.yaml"), chartYAML)
			write(t, filepath.Join(dir, "templates", "svc.yaml"), "kind: Service\n")
			c.build(t, dir)
			if ch := mustMatchHelmLoadDir(t, dir, c.wantErr); ch != nil {
				var names []string
				for _, f := range ch.Templates {
					names = append(names, f.Name)
				}
				slices.Sort(names)
				if !slices.Equal(names, c.templates) {
					t.Errorf("templates %v, want %v", names, c.templates)
				}
			}
		})
	}

	t.Run("a linked chart folder", func(t *testing.T) {
		dir := t.TempDir()
		write(t, filepath.Join(dir, "real", "Chart.yaml"), chartYAML)
		write(t, filepath.Join(dir, "real", "templates", "svc.yaml"), "kind: Service\n")
		link(t, filepath.Join(dir, "real"), filepath.Join(dir, "chart"))
		if ch := mustMatchHelmLoadDir(t, filepath.Join(dir, "chart"), ""); len(ch.Templates) != 1 {
			t.Errorf("templates %v, want svc.yaml", ch.Templates)
		}
	})
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	// Times a second apart, so a time taken from the wrong file shows.
	when := time.Date(2026, 1, 2, 3, 4, len(path)%60, 0, time.UTC)
	if err := os.Chtimes(path, when, when); err != nil {
		t.Fatal(err)
	}
}

func link(t *testing.T, target, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}

func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
}

// big makes a sparse file of size bytes: no disk, and reading it would
// take long enough to notice.
func big(t *testing.T, path string, size int64) {
	t.Helper()
	write(t, path, "")
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
}

// TestLoadFolderAndArchive: Load takes a chart folder through loadDir and
// a packaged chart through Helm's archive loader, each to what Helm's
// loader.Load makes of it.
func TestLoadFolderAndArchive(t *testing.T) {
	data := helmTestdata(t, "pkg/chart/v2/loader")
	for _, ref := range []string{filepath.Join(data, "frobnitz"), filepath.Join(data, "frobnitz-1.2.3.tgz")} {
		want, err := loader.Load(ref)
		if err != nil {
			t.Fatal(err)
		}
		got, kind, err := Load(ref, LoadOptions{})
		if err != nil {
			t.Fatalf("Load(%s): %v", ref, err)
		}
		if kind != SourceChart {
			t.Errorf("Load(%s) is a %s, want a chart", ref, kind)
		}
		if diff := cmp.Diff(flatChartTimes(want), flatChartTimes(got)); diff != "" {
			t.Errorf("Load(%s) (-helm +Load)\n%s", ref, diff)
		}
	}
}

// rchar is the bytes this process has read so far (/proc/self/io).
func rchar(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Skipf("no read count: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "rchar: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Skip("no rchar in /proc/self/io")
	return 0
}

// TestLoadDirStopsAtTheBudget: a chart folder larger than Helm's budget
// fails with Helm's error for the same file, having read no more than
// the budget (and, read on every CPU, the few files other workers were
// reading when it ran out), where all of it was read before: 7 files of
// 40 MiB took 331 MiB. Not parallel: the read count is the process's.
func TestLoadDirStopsAtTheBudget(t *testing.T) {
	budget := archive.MaxDecompressedChartSize
	for _, tc := range []struct {
		name  string
		files int
		size  int64
		// slack is what may be read past the budget.
		slack int64
	}{
		{name: "7 files of 40 MiB", files: 7, size: 40 << 20, slack: 1 << 20},
		{name: "64 files of 4 MiB, read on every CPU", files: 64, size: 4 << 20, slack: int64(runtime.GOMAXPROCS(0)) * 4 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, filepath.Join(dir, "Chart.yaml"), "apiVersion: v2\nname: big\nversion: 0.1.0\n")
			for i := range tc.files {
				big(t, filepath.Join(dir, "templates", fmt.Sprintf("f%02d.yaml", i)), tc.size)
			}
			before := rchar(t)
			_, err := loadDir(dir, budget)
			read := rchar(t) - before
			_, helmErr := loader.LoadDir(dir)
			if err == nil || fmt.Sprint(err) != fmt.Sprint(helmErr) {
				t.Errorf("loadDir's error\n  %v\nHelm's\n  %v", err, helmErr)
			}
			if read > budget+tc.slack {
				t.Errorf("loadDir read %d MiB; want at most the budget, %d MiB (and %d MiB)", read>>20, budget>>20, tc.slack>>20)
			}
			t.Logf("read %d MiB", read>>20)
		})
	}
}
