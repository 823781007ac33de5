package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/helm-inject/helm-inject/internal/testfs"
)

// revisions returns the revision numbers in a release's history.
func revisions(t *testing.T, rel, ns string) []int {
	t.Helper()
	var h []struct{ Revision int }
	if err := json.Unmarshal([]byte(mustHelm(t, "history", rel, "-n", ns, "-o", "json").stdout), &h); err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, r := range h {
		out = append(out, r.Revision)
	}
	return out
}

// TestBadInjectorsApplyNothing: every kind of injector failure is reported
// with the release and the injector named, exits non-zero, creates no
// release revision and leaves no temporary file behind.
func TestBadInjectorsApplyNothing(t *testing.T) {
	ns := namespace(t)
	mustHelmInject(t, "apply", "guarded", webappChart, "-n", ns, "--injector", "sidecar-injector f=FILE")
	before := mustHelm(t, "get", "manifest", "guarded", "-n", ns).stdout

	tests := []struct {
		name  string
		flags []string
		want  []string
	}{
		{"unknown command", []string{"--injector", "no-such-injector f=FILE"},
			[]string{`injector "no-such-injector f=FILE"`, `program "no-such-injector" is in no folder of $PATH`}},
		{"exit 1", []string{"--injector", "sidecar-injector f=FILE,fail=exit1"},
			[]string{`injector "sidecar-injector f=FILE,fail=exit1"`, "exited with status 1", "failing on purpose"}},
		{"hangs past the timeout", []string{"--injector", "sidecar-injector f=FILE,fail=hang", "--injector-timeout", "2s"},
			[]string{`injector "sidecar-injector f=FILE,fail=hang"`, "did not finish within 2s (--injector-timeout)"}},
		{"invalid YAML", []string{"--injector", "sidecar-injector f=FILE,fail=invalid-yaml"},
			[]string{`injector "sidecar-injector f=FILE,fail=invalid-yaml"`, "invalid YAML"}},
		{"drops a resource", []string{"--injector", "sidecar-injector f=FILE,fail=drop"},
			[]string{`injector "sidecar-injector f=FILE,fail=drop"`, "dropped or renamed v1 Secret guarded-credentials"}},
		{"renames a resource", []string{"--injector", "sidecar-injector f=FILE,fail=rename"},
			[]string{"dropped or renamed v1 Secret guarded-credentials; added v1 Secret renamed-by-injector"}},
		{"adds a resource", []string{"--injector", "sidecar-injector f=FILE,fail=add"},
			[]string{"added v1 ConfigMap added-by-injector"}},
		{"second injector fails after the first worked", []string{"--injector", "sidecar-injector f=FILE", "--inject", "sidecar-injector --fail=empty"},
			[]string{`injector "sidecar-injector --fail=empty"`, "dropped or renamed"}},
		{"killed by a signal", []string{"--injector", "sidecar-injector f=FILE,fail=signal"},
			[]string{`injector "sidecar-injector f=FILE,fail=signal"`, "killed by signal killed"}},
		{"two documents merged into one", []string{"--injector", "sidecar-injector f=FILE,fail=merge"},
			[]string{"output document 1 of", `mapping key "apiVersion" already defined`}},
		{"moves a resource to another namespace", []string{"--injector", "sidecar-injector f=FILE,fail=namespace"},
			[]string{`moved Secret guarded-credentials from namespace "` + ns + `" to "elsewhere"`}},
		{"changes a kind", []string{"--injector", "sidecar-injector f=FILE,fail=kind"},
			[]string{"changed the kind of guarded-credentials from v1 Secret to v1 ConfigMap"}},
		{"empty spec", []string{"--injector", ""},
			[]string{`--injector: injector "": empty injector command`}},
		{"k=v=w", []string{"--injector", "sidecar-injector f=FILE,label=a=b"},
			[]string{`"label=a=b" has more than one '='`}},
		{"no command", []string{"--injector", "f=FILE"},
			[]string{`no command: the spec starts with the option "f=FILE"`}},
		{"unknown built-in injector", []string{"--with", "no-such", "--injector-library", "examples/injectors"},
			[]string{`injector "no-such" is not in the library examples/injectors`}},
		{"no such built-in version", []string{"--with", "log-shipper@9.9.9", "--injector-library", "examples/injectors"},
			[]string{`no version of injector "log-shipper" in examples/injectors matches "9.9.9"`}},
		{"malformed spec", []string{"--injector", "sidecar-injector f=FILE,,x"},
			[]string{`--injector: injector "sidecar-injector f=FILE,,x": empty element between commas`}},
		{"unbalanced quotes", []string{"--inject", "sidecar-injector 'FILE"},
			[]string{`--inject: injector "sidecar-injector 'FILE": unbalanced quotes`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp := t.TempDir()
			args := append([]string{"apply", "guarded", webappChart, "-n", ns}, tt.flags...)
			r := command{env: []string{"TMPDIR=" + tmp}}.run(t, filepath.Join(binDir, "helm-inject"), args...)
			if r.code == 0 {
				t.Fatalf("apply succeeded:\n%s", r)
			}
			if !strings.Contains(r.stderr, `release "guarded"`) {
				t.Errorf("error does not name the release:\n%s", r.stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("error lacks %q:\n%s", w, r.stderr)
				}
			}
			if revs := revisions(t, "guarded", ns); len(revs) != 1 {
				t.Errorf("release history is %v after a failed apply, want [1]", revs)
			}
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				t.Errorf("temporary files left behind: %s", left[0].Name())
			}
		})
	}
	if after := mustHelm(t, "get", "manifest", "guarded", "-n", ns).stdout; after != before {
		t.Errorf("the release manifest changed after failed applies")
	}
}

// TestBadChartInputsApplyNothing: charts, values and sources that cannot be
// installed are refused before anything is written, with an error that
// names the release and the chart.
func TestBadChartInputsApplyNothing(t *testing.T) {
	ns := namespace(t)
	mustHelmInject(t, "apply", "guarded", apiChart, "-n", ns, "--injector", "sidecar-injector f=FILE")
	repoURL, _ := chartRepo(t)
	dir := t.TempDir()

	// A chart whose only template renders nothing with its default values.
	empty := filepath.Join(dir, "empty")
	testfs.Write(t, empty, map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: empty\nversion: 0.1.0\n",
		"templates/cm.yaml": "{{- if .Values.enabled }}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n{{- end }}\n",
	})
	// A chart archive with an entry that climbs out of the chart.
	escaping := filepath.Join(dir, "escaping-0.1.0.tgz")
	writeTgz(t, escaping, map[string]string{
		"escaping/Chart.yaml":                   "apiVersion: v2\nname: escaping\nversion: 0.1.0\n",
		"escaping/templates/../../../evil.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: evil\n",
	})
	// 50 MB of values text in one ConfigMap.
	big := filepath.Join(dir, "big.txt")
	if err := os.WriteFile(big, bytes.Repeat([]byte("0123456789abcdef"), 50<<20/16), 0o600); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		args []string
		want string
	}{
		{"missing chart", []string{"fixtures/charts/nope"}, "chart fixtures/charts/nope: no such chart directory or archive"},
		{"values fail the schema", []string{apiChart, "--set", "logLevel=5"}, "at '/logLevel': got number, want string"},
		{"upgrade to a chart that renders nothing", []string{empty}, empty + " rendered no object, so this upgrade would delete all"},
		{"archive entry escapes the chart", []string{escaping}, "chart illegally"},
		{"50 MB manifest", []string{apiChart, "--set-file", "logLevel=" + big},
			"v1 ConfigMap guarded-config in api/templates/all.yaml is 52428"},
		{"unreachable repository", []string{"api", "--repo", "http://127.0.0.1:1"}, `"http://127.0.0.1:1" is not a valid chart repository or cannot be reached`},
		{"version matches nothing", []string{"webapp", "--repo", repoURL, "--version", ">=9"}, `chart "webapp" version ">=9" not found`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp := t.TempDir()
			args := append([]string{"apply", "guarded"}, tt.args...)
			args = append(args, "-n", ns, "--injector", "sidecar-injector f=FILE")
			r := command{env: []string{"TMPDIR=" + tmp}}.run(t, filepath.Join(binDir, "helm-inject"), args...)
			if r.code == 0 {
				t.Fatalf("apply succeeded:\n%s", r)
			}
			if !strings.Contains(r.stderr, `release "guarded"`) || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("error does not name the release or lacks %q:\n%s", tt.want, r.stderr)
			}
			if revs := revisions(t, "guarded", ns); len(revs) != 1 {
				t.Errorf("release history is %v after a failed apply, want [1]", revs)
			}
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				t.Errorf("temporary files left behind: %s", left[0].Name())
			}
		})
	}
}

// writeTgz writes a gzipped tar with the entries as named, unchecked.
func writeTgz(t *testing.T, path string, files map[string]string) {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(files[name])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(files[name])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
