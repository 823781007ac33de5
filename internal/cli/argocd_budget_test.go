//go:build linux

package cli

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestArgoGenerateBudget: through argocd generate as Argo CD runs it, a
// fresh process each, with nothing kernel-level to help
// (the operator's --confine=off), each bomb an application can commit fails
// its own render: a non-zero exit, nothing on stdout, stderr naming the
// application and the bound passed, and a peak resident size far below a
// 512 MiB sidecar; the next application, a normal one, still renders.
// Before the budget each of these rendered (some past 1 GiB with a larger
// N): every case fails on code without it.
func TestArgoGenerateBudget(t *testing.T) {
	const maxRSS = 512 << 10 // KiB, as Maxrss counts on Linux
	tests := []struct {
		name string
		// build adds the bomb to the application's folder (the webapp
		// chart) and returns more environment.
		build func(t *testing.T, app string) []string
		want  string
	}{
		{
			// 2 links per level to the level below: 2^(N+1)-1 paths
			// to one file, 16,383 for N = 13, past the 10,000 files.
			name: "links that multiply",
			build: func(t *testing.T, app string) []string {
				linkBomb(t, filepath.Join(app, "files", "bomb"), 13)
				return nil
			},
			want: "--max-files",
		},
		{
			// Each [65536] is a list of 65,537 slots: 5 of them pass
			// the 262,144 list slots.
			name: "nested list indexes in a set key",
			build: func(t *testing.T, _ string) []string {
				params, err := json.Marshal([]map[string]any{{"name": "set", "map": map[string]string{"a" + strings.Repeat("[65536]", 5): "x"}}})
				if err != nil {
					t.Fatal(err)
				}
				return []string{"ARGOCD_APP_PARAMETERS=" + string(params)}
			},
			want: "--max-list-slots",
		},
		{
			// Two archives of 70 MiB unpacked (under Helm's own 100
			// MiB each), about 70 KB each on disk.
			name: "archives in charts/ large unpacked",
			build: func(t *testing.T, app string) []string {
				for _, name := range []string{"big-a", "big-b"} {
					writeFile(t, filepath.Join(app, "charts", name+".tgz"), chartArchive(t, name, map[string]int64{"files/zero": 70 << 20}, nil))
				}
				return nil
			},
			want: "--max-read-bytes",
		},
		{
			// One small archive (about 140 KB unpacked) holding two
			// of 70 MiB: Helm gives each its own 100 MiB.
			name: "nested archives",
			build: func(t *testing.T, app string) []string {
				inner := map[string][]byte{}
				for _, name := range []string{"in-a", "in-b"} {
					inner["charts/"+name+".tgz"] = chartArchive(t, name, map[string]int64{"files/zero": 70 << 20}, nil)
				}
				writeFile(t, filepath.Join(app, "charts", "outer.tgz"), chartArchive(t, "outer", nil, inner))
				return nil
			},
			want: "--max-read-bytes",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			app, env := argoApp(t)
			env = append(env, tc.build(t, app)...)
			stdout, stderr, code, rss := argoGenerate(t, app, env)
			if code == 0 {
				t.Fatalf("generate succeeded (%d bytes out, peak %d MiB); want it refused", len(stdout), rss>>10)
			}
			if stdout != "" {
				t.Errorf("generate printed %d bytes on stdout; want none", len(stdout))
			}
			if !strings.Contains(stderr, "application web") || !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr %q; want it to name application web and %s", stderr, tc.want)
			}
			if rss > maxRSS {
				t.Errorf("peak resident size %d MiB; want under %d MiB", rss>>10, maxRSS>>10)
			}
			t.Logf("peak resident size %d MiB: %s", rss>>10, strings.TrimSpace(stderr))

			next, env := argoApp(t)
			stdout, stderr, code, _ = argoGenerate(t, next, env)
			if code != 0 || !strings.Contains(stdout, "kind: Deployment") {
				t.Errorf("the next application: exit %d, stderr %s", code, stderr)
			}
		})
	}
}

// argoGenerate runs argocd generate in app, a fresh process as Argo CD
// runs it, unconfined, and returns its peak resident size in KiB.
func argoGenerate(t *testing.T, app string, env []string) (stdout, stderr string, code int, rssKiB int64) {
	t.Helper()
	r := runChild(t, "helm-inject", app, env, "argocd", "generate", "--confine=off")
	return r.stdout, r.stderr, r.code, r.rssKiB
}

// linkBomb makes levels 0 to n below dir: level 0 holds a file, each
// other level two links to the level below.
func linkBomb(t *testing.T, dir string, n int) {
	t.Helper()
	writeFile(t, filepath.Join(dir, "l0", "f.txt"), []byte("x\n"))
	for i := 1; i <= n; i++ {
		level := filepath.Join(dir, fmt.Sprintf("l%d", i))
		if err := os.MkdirAll(level, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"a", "b"} {
			if err := os.Symlink(fmt.Sprintf("../l%d", i-1), filepath.Join(level, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// chartArchive is a packaged chart name: its Chart.yaml, files of zeros
// of the sizes given and files with the content given, streamed (a file
// of zeros is never held).
func chartArchive(t *testing.T, name string, zeros map[string]int64, files map[string][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	add := func(file string, size int64, r io.Reader) {
		if err := tw.WriteHeader(&tar.Header{Name: name + "/" + file, Mode: 0o644, Size: size, Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(tw, r); err != nil {
			t.Fatal(err)
		}
	}
	chartYAML := fmt.Sprintf("apiVersion: v2\nname: %s\nversion: 0.1.0\n", name)
	add("Chart.yaml", int64(len(chartYAML)), strings.NewReader(chartYAML))
	for file, size := range zeros {
		add(file, size, io.LimitReader(zeroReader{}, size))
	}
	for file, data := range files {
		add(file, int64(len(data)), bytes.NewReader(data))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
