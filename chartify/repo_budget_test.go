//go:build unix

package chartify

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"

	"github.com/helm-inject/helm-inject/internal/budget"
	"github.com/helm-inject/helm-inject/internal/repofs"
)

// tgz is a gzipped tar of files (by tar name, with their content) and of
// files of zeros of the sizes given (streamed, never held).
func tgz(t *testing.T, files map[string][]byte, zeros map[string]int64) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	add := func(name string, size int64, r io.Reader) {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: size, Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(tw, r); err != nil {
			t.Fatal(err)
		}
	}
	for name, data := range files {
		add(name, int64(len(data)), bytes.NewReader(data))
	}
	for name, size := range zeros {
		add(name, size, io.LimitReader(zeroes{}, size))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

type zeroes struct{}

func (zeroes) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// chartTgz is the packaged chart name (tar names below name/): its
// Chart.yaml and the files and zeros given.
func chartTgz(t *testing.T, name string, files map[string][]byte, zeros map[string]int64) []byte {
	t.Helper()
	in := map[string][]byte{name + "/Chart.yaml": fmt.Appendf(nil, "apiVersion: v2\nname: %s\nversion: 0.1.0\n", name)}
	for f, data := range files {
		in[name+"/"+f] = data
	}
	z := map[string]int64{}
	for f, size := range zeros {
		z[name+"/"+f] = size
	}
	return tgz(t, in, z)
}

// TestLoadFromRepoBudget: a chart, kustomization or manifests folder
// read through a repository with a budget charges it every file after
// links and every archive Helm's loader unpacks by its unpacked size,
// nested ones too, and fails past a bound naming it and the file; what
// Helm does not unpack is charged as read. Each bomb here loaded before.
func TestLoadFromRepoBudget(t *testing.T) {
	const chartYAML = "apiVersion: v2\nname: web\nversion: 0.1.0\n"
	cm := func(name string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n"
	}
	// 3 MiB unpacked each, a few KB on disk.
	inner := func(name string) []byte { return chartTgz(t, name, nil, map[string]int64{"files/zero": 3 << 20}) }
	tests := []struct {
		name   string
		dir    string
		files  map[string]string
		build  func(t *testing.T, repo string)
		limits budget.Limits
		// bound is the bound passed (0: it loads) and what the error
		// names; charged the files charged when it loads.
		bound   budget.Bound
		what    string
		charged int64
	}{
		{
			name:  "a chart: each file and folder once",
			dir:   "app",
			files: map[string]string{"app/Chart.yaml": chartYAML, "app/templates/cm.yaml": cm("a")},
			// .helmignore (none), the folder, Chart.yaml, templates/,
			// cm.yaml: the walk lists 2 folders and reads 2 files.
			charged: 4,
		},
		{
			name:  "a file reached by its name and through a link counts twice",
			dir:   "app",
			files: map[string]string{"app/Chart.yaml": chartYAML, "app/templates/cm.yaml": cm("a")},
			build: func(t *testing.T, repo string) {
				link(t, "cm.yaml", filepath.Join(repo, "app", "templates", "again.yaml"))
			},
			charged: 5,
		},
		{
			// 2^(N+1)-1 paths to one file: 4,095 for N = 11.
			name:   "links that multiply",
			dir:    "app",
			files:  map[string]string{"app/Chart.yaml": chartYAML, "app/files/bomb/l0/f.txt": "x\n"},
			build:  func(t *testing.T, repo string) { linkLevels(t, filepath.Join(repo, "app", "files", "bomb"), 11) },
			limits: budget.Limits{Files: 1_000},
			bound:  budget.Files,
			what:   "app/files/bomb/l",
		},
		{
			name:  "an archive in charts/: small on disk, large unpacked",
			dir:   "app",
			files: map[string]string{"app/Chart.yaml": chartYAML},
			build: func(t *testing.T, repo string) {
				writeBytes(t, filepath.Join(repo, "app", "charts", "bomb.tgz"), chartTgz(t, "bomb", nil, map[string]int64{"files/zero": 8 << 20}))
			},
			limits: budget.Limits{Bytes: 4 << 20},
			bound:  budget.Bytes,
			what:   "bomb/files/zero in app/charts/bomb.tgz",
		},
		{
			name:  "archives nested in an archive",
			dir:   "app",
			files: map[string]string{"app/Chart.yaml": chartYAML},
			build: func(t *testing.T, repo string) {
				writeBytes(t, filepath.Join(repo, "app", "charts", "outer.tgz"), chartTgz(t, "outer", map[string][]byte{"charts/in-a.tgz": inner("in-a"), "charts/in-b.tgz": inner("in-b")}, nil))
			},
			limits: budget.Limits{Bytes: 5 << 20},
			bound:  budget.Bytes,
			what:   "in app/charts/outer.tgz",
		},
		{
			name:  "an archive in a subchart folder's charts/",
			dir:   "app",
			files: map[string]string{"app/Chart.yaml": chartYAML, "app/charts/sub/Chart.yaml": "apiVersion: v2\nname: sub\nversion: 0.1.0\n"},
			build: func(t *testing.T, repo string) {
				writeBytes(t, filepath.Join(repo, "app", "charts", "sub", "charts", "bomb.tgz"), chartTgz(t, "bomb", nil, map[string]int64{"files/zero": 8 << 20}))
			},
			limits: budget.Limits{Bytes: 4 << 20},
			bound:  budget.Bytes,
			what:   "in app/charts/sub/charts/bomb.tgz",
		},
		{
			name: "a packaged chart holding archives",
			dir:  "app.tgz",
			build: func(t *testing.T, repo string) {
				writeBytes(t, filepath.Join(repo, "app.tgz"), chartTgz(t, "app", map[string][]byte{"charts/in-a.tgz": inner("in-a"), "charts/in-b.tgz": inner("in-b")}, nil))
			},
			limits: budget.Limits{Bytes: 5 << 20},
			bound:  budget.Bytes,
			what:   "in app.tgz",
		},
		{
			name:  "an archive Helm does not unpack is its size on disk",
			dir:   "app",
			files: map[string]string{"app/Chart.yaml": chartYAML},
			build: func(t *testing.T, repo string) {
				for _, p := range []string{"files/data.tgz", "charts/_skipped.tgz", "templates/charts/x.tgz"} {
					writeBytes(t, filepath.Join(repo, "app", filepath.FromSlash(p)), chartTgz(t, "x", nil, map[string]int64{"files/zero": 8 << 20}))
				}
			},
			limits:  budget.Limits{Bytes: 4 << 20},
			charged: 9,
		},
		{
			name: "a manifests folder",
			dir:  "plain",
			files: map[string]string{
				"plain/a.yaml": cm("a") + "data:\n  x: " + strings.Repeat("x", 600<<10) + "\n",
				"plain/b.yaml": cm("b") + "data:\n  x: " + strings.Repeat("x", 600<<10) + "\n",
			},
			limits: budget.Limits{Bytes: 1 << 20},
			bound:  budget.Bytes,
			what:   "plain/b.yaml",
		},
		{
			name: "a kustomization",
			dir:  "kust",
			files: map[string]string{
				"kust/kustomization.yaml": "resources: [a.yaml, b.yaml]\n",
				"kust/a.yaml":             cm("a") + "data:\n  x: " + strings.Repeat("x", 600<<10) + "\n",
				"kust/b.yaml":             cm("b") + "data:\n  x: " + strings.Repeat("x", 600<<10) + "\n",
			},
			limits: budget.Limits{Bytes: 1 << 20},
			bound:  budget.Bytes,
			what:   "kust/",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			repo := t.TempDir()
			for p, s := range tc.files {
				write(t, filepath.Join(repo, filepath.FromSlash(p)), s)
			}
			if tc.build != nil {
				tc.build(t, repo)
			}
			b := budget.New(tc.limits)
			r, err := repofs.OpenBudget(repo, b)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			_, _, err = LoadFromRepo(r, tc.dir, nil)
			if err == nil {
				// A loader may have swallowed the error.
				err = b.Err()
			}
			var e *budget.ExceededError
			if tc.bound == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if got := b.Used().Files; got != tc.charged {
					t.Errorf("charged %d files; want %d", got, tc.charged)
				}
				return
			}
			if !errors.As(err, &e) || e.Bound != tc.bound {
				t.Fatalf("err = %v; want the %v bound", err, tc.bound)
			}
			if !strings.Contains(err.Error(), tc.what) || !strings.Contains(err.Error(), "--"+tc.bound.Flag()) {
				t.Errorf("err = %v; want it to name %q and --%s", err, tc.what, tc.bound.Flag())
			}
		})
	}
}

// linkLevels makes levels 1 to n below dir (level 0 is there): each
// holds two links to the level below.
func linkLevels(t *testing.T, dir string, n int) {
	t.Helper()
	for i := 1; i <= n; i++ {
		for _, name := range []string{"a", "b"} {
			link(t, fmt.Sprintf("../l%d", i-1), filepath.Join(dir, fmt.Sprintf("l%d", i), name))
		}
	}
}

func writeBytes(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestUnpackedMatchesHelm: unpacked says of a chart file, and
// unpackedEntry of an archive entry, what Helm's loader does with it:
// unpack it as a subchart archive (with a budget of its own) or not.
// Each name is put in a chart (or a packaged chart) holding an archive
// of the chart "dep" there, and Helm's loader is asked.
func TestUnpackedMatchesHelm(t *testing.T) {
	dep := chartTgz(t, "dep", nil, nil)
	sub := []byte("apiVersion: v2\nname: sub\nversion: 0.1.0\n")
	hasDep := func(ch *chart.Chart) bool {
		var walk func(c *chart.Chart) bool
		walk = func(c *chart.Chart) bool {
			for _, d := range c.Dependencies() {
				if d.Name() == "dep" || walk(d) {
					return true
				}
			}
			return false
		}
		return ch != nil && walk(ch)
	}
	for _, name := range []string{
		"charts/dep.tgz",
		"charts/sub/charts/dep.tgz",
		"charts/sub/charts/sub2/charts/dep.tgz",
		"charts/_dep.tgz",
		"charts/.dep.tgz",
		"charts/_sub/charts/dep.tgz",
		"charts/sub/templates/charts/dep.tgz",
		"templates/charts/dep.tgz",
		"files/dep.tgz",
		"dep.tgz",
		"charts/dep.tar.gz",
		"charts/dep.tgz.prov",
	} {
		files := []*archive.BufferedFile{
			{Name: "Chart.yaml", Data: []byte("apiVersion: v2\nname: top\nversion: 0.1.0\n")},
			{Name: name, Data: dep},
		}
		for dir := name; strings.Contains(dir, "/"); {
			dir = dir[:strings.LastIndex(dir, "/")]
			if strings.HasPrefix(dir, "charts/") && strings.Count(strings.TrimPrefix(dir, "charts/"), "/")%2 == 0 && !strings.HasSuffix(dir, "/charts") {
				files = append(files, &archive.BufferedFile{Name: dir + "/Chart.yaml", Data: sub})
			}
		}
		ch, err := loader.LoadFiles(files)
		helm := err == nil && hasDep(ch)
		if got := unpacked(name); got != helm {
			t.Errorf("unpacked(%q) = %v; Helm's loader unpacks it: %v (%v)", name, got, helm, err)
		}
		// The same name in a packaged chart, and as Windows writes it.
		for _, entry := range []string{"top/" + name, strings.ReplaceAll("top/"+name, "/", `\`)} {
			packaged := map[string][]byte{}
			for _, f := range files {
				packaged[strings.ReplaceAll("top/"+f.Name, "/", string(entry[3]))] = f.Data
			}
			ch, err := loader.LoadArchive(bytes.NewReader(tgz(t, packaged, nil)))
			helm := err == nil && hasDep(ch)
			if got := unpackedEntry(entry); got != helm {
				t.Errorf("unpackedEntry(%q) = %v; Helm's loader unpacks it: %v (%v)", entry, got, helm, err)
			}
		}
	}
}
