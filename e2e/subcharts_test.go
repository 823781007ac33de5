package e2e

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/helm-inject/helm-inject/manifest"
)

// sidecar110 is a newer version of the fixture library's sidecar
// injector (fixtures/injectors/library/sidecar/1.0.0.yaml): another
// image, so that moving to it would change every injected workload.
const sidecar110 = `name: sidecar
version: 1.1.0
description: The fixture sidecar from a newer image.
parameters:
  - name: image
    default: registry.example/sidecar:1.1
template: |
  containers:
    - name: sidecar
      image: {{ .Params.image }}
      ports:
        - containerPort: 15001
`

// sidecarLibrary makes an injector library in a temporary folder holding
// the fixture library's sidecar 1.0.0, locked. It selects every kind of
// workload (Deployments, hook Jobs, test Pods alike).
func sidecarLibrary(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "fixtures", "injectors", "library", "sidecar", "1.0.0.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	lib := t.TempDir()
	if err := os.Mkdir(filepath.Join(lib, "sidecar"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(lib, "sidecar", "1.0.0.yaml"), string(b))
	mustHelmInject(t, "injectors", "lock", "--injector-library", lib)
	return lib
}

// kyvernoChart is the parity corpus's chart with subcharts (hack/tools.sh
// charts): kyverno vendors crds (on by default) and grafana (off) in its
// charts/. Neither renders a workload: crds holds CustomResourceDefinitions,
// grafana a dashboard ConfigMap.
func kyvernoChart(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(filepath.Dir(cluster.ToolsBin), "share", "charts", "kyverno")
	if _, err := os.Stat(filepath.Join(dir, "Chart.yaml")); err != nil {
		t.Fatalf("the kyverno chart: %v (run bash hack/tools.sh charts)", err)
	}
	return dir
}

// platformChart is an umbrella chart, "platform", with no template of its
// own, that vendors kyverno in its charts/, as many teams install it: every
// workload it renders comes from a subchart (platform/charts/kyverno/...),
// and grafana and crds are subcharts of a subchart. Its values turn
// kyverno's controllers' RBAC off, as the parity corpus does and for the
// same reason (parityCorpus): their aggregated ClusterRoles make
// `uninstall --wait` fail in about one run of three.
func platformChart(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "platform")
	if err := os.CopyFS(filepath.Join(dir, "charts", "kyverno"), os.DirFS(kyvernoChart(t))); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "Chart.yaml"), `apiVersion: v2
name: platform
version: 0.1.0
dependencies:
  - name: kyverno
    version: 3.3.6
`)
	values := "kyverno:\n"
	for _, c := range []string{"admissionController", "backgroundController", "cleanupController", "reportsController"} {
		values += "  " + c + ":\n    rbac:\n      create: false\n      serviceAccount:\n        name: default\n"
	}
	writeFile(t, filepath.Join(dir, "values.yaml"), values)
	return dir
}

// sourcesOf maps each document of a manifest stream, by KIND/NAME (the
// keys of workloads), to the template its "# Source:" line names.
func sourcesOf(t *testing.T, stream string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, doc := range manifest.Split(stream) {
		d, err := manifest.Parse("", doc)
		if err != nil {
			t.Fatalf("%v\n%s", err, doc)
		}
		if d.Empty() {
			continue
		}
		for line := range strings.Lines(doc) {
			if src, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "# Source: "); ok {
				out[d.ID.Kind+"/"+d.ID.Name] = src
				break
			}
		}
	}
	return out
}

// uninstallOnCleanup uninstalls a release with helm 4 when the test ends,
// whatever its outcome, waiting for its objects to go (TestParityWithHelm4
// needs a release's webhooks gone before the next chart). Hooks are left
// out: kyverno's pre-delete Job needs an image that never runs here.
func uninstallOnCleanup(t *testing.T, rel, ns string) {
	t.Helper()
	bin := helm4Bin(t)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, "uninstall", rel, "-n", ns, "--no-hooks", "--wait", "--timeout", "2m")
		cmd.Env = os.Environ()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("helm uninstall %s: %v\n%s", rel, err, out)
		}
	})
}

// TestInjectsSubchartWorkloads: `helm-inject template` of a chart with
// subcharts, with a built-in injector that selects every workload, puts
// the sidecar into every workload helm 4 renders (Deployments, hook Jobs,
// test Pods), subcharts' included, and prints each document under the
// `# Source:` helm 4 prints: a subchart's templates under
// CHART/charts/SUBCHART/templates/.
func TestInjectsSubchartWorkloads(t *testing.T) {
	lib := sidecarLibrary(t)
	tests := []struct {
		name  string
		chart string
		flags []string
		// subchart is the start of the `# Source:` of a subchart's
		// template that must be among the documents.
		subchart string
		// subchartWorkloads is how many of the workloads come from a
		// subchart, at least.
		subchartWorkloads int
	}{
		// Both subcharts render; neither has a workload.
		{name: "kyverno", chart: kyvernoChart(t), flags: []string{"--set", "grafana.enabled=true"},
			subchart: "kyverno/charts/grafana/templates/"},
		// Every workload comes from the kyverno subchart: its four
		// controllers' Deployments, four hook Jobs and five test Pods.
		{name: "umbrella", chart: platformChart(t), flags: []string{"--set", "kyverno.grafana.enabled=true"},
			subchart: "platform/charts/kyverno/charts/grafana/templates/", subchartWorkloads: 13},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"template", "subcharts", tt.chart, "-n", "subcharts"}, tt.flags...)
			want := command{}.mustRun(t, helm4Bin(t), args...).stdout
			got := mustHelmInject(t, append(args, "--injector-library", lib, "--with", "sidecar@1.0.0")...).stdout

			wantW, gotW := workloads(t, want), workloads(t, got)
			wantSrc, gotSrc := sourcesOf(t, want), sourcesOf(t, got)
			if len(wantW) == 0 {
				t.Fatal("helm 4 renders no workload: the case tests nothing")
			}
			fromSubchart := 0
			for key := range wantW {
				src := wantSrc[key]
				if strings.Contains(src, "/charts/") {
					fromSubchart++
				}
				w, ok := gotW[key]
				switch {
				case !ok:
					t.Errorf("%s (%s) is missing from helm-inject's output", key, src)
				case !contains(w.containers, "sidecar"):
					t.Errorf("%s (%s) has no sidecar: containers %v", key, src, w.containers)
				}
			}
			if fromSubchart < tt.subchartWorkloads {
				t.Errorf("%d workloads come from a subchart, want at least %d: %v", fromSubchart, tt.subchartWorkloads, wantSrc)
			}
			if len(gotW) != len(wantW) {
				t.Errorf("helm-inject's output has %d workloads, helm 4's %d", len(gotW), len(wantW))
			}

			// Every document under helm's `# Source:`.
			keys := make([]string, 0, len(wantSrc))
			for key := range wantSrc {
				keys = append(keys, key)
			}
			slices.Sort(keys)
			for _, key := range keys {
				if gotSrc[key] != wantSrc[key] {
					t.Errorf("%s: # Source: %s, helm 4's is %s", key, gotSrc[key], wantSrc[key])
				}
			}
			if !slices.ContainsFunc(slices.Collect(maps.Values(gotSrc)), func(s string) bool { return strings.HasPrefix(s, tt.subchart) }) {
				t.Errorf("no document's # Source: starts with %s", tt.subchart)
			}
		})
	}
}

// TestReconcileNeverKeepsSubchartWorkloads: a release of a chart whose
// workloads all come from subcharts, injected by sidecar 1.0.0 under
// --reconcile never, is not touched when sidecar 1.1.0 is released: no
// revision, the stored manifest byte for byte, the old version recorded,
// although the diff shows the new version would change every workload.
//
// kyverno's admission webhooks are not in the chart (its controller
// registers them when it runs, and kwok's pods run nothing), so the
// release blocks no other test; it is uninstalled, waiting, at the end.
func TestReconcileNeverKeepsSubchartWorkloads(t *testing.T) {
	ns := namespace(t)
	lib := sidecarLibrary(t)
	chart := platformChart(t)
	const rel = "plat"
	// Hooks are left out: kyverno's run on upgrade and delete, Jobs whose
	// images never run here. So are kyverno's CRDs: they are cluster-wide,
	// the parity corpus's kyverno installs them too, and an apiserver can
	// take minutes to delete a CRD made seconds before.
	flags := []string{"-n", ns, "--no-hooks", "--injector-library", lib, "--with", "sidecar@^1",
		"--set", "kyverno.grafana.enabled=true", "--set", "kyverno.crds.install=false"}
	apply := func(extra ...string) result {
		t.Helper()
		return mustHelmInject(t, append(append([]string{"apply", rel, chart}, flags...), extra...)...)
	}
	h4 := command{}
	manifestOf := func() string {
		t.Helper()
		return h4.mustRun(t, helm4Bin(t), "get", "manifest", rel, "-n", ns).stdout
	}

	apply("--reconcile", "never")
	uninstallOnCleanup(t, rel, ns)
	before := manifestOf()
	ws, sources := workloads(t, before), sourcesOf(t, before)
	if len(ws) < 4 {
		t.Fatalf("the release has %d workloads, want kyverno's four Deployments at least", len(ws))
	}
	for key, w := range ws {
		var st struct {
			Injectors []struct{ Name, Version string }
		}
		if err := json.Unmarshal([]byte(w.annotations["helm-inject.io/status"]), &st); err != nil ||
			len(st.Injectors) != 1 || st.Injectors[0].Version != "1.0.0" || !contains(w.containers, "sidecar") {
			t.Errorf("%s: containers %v, status annotation %q (%v); want sidecar 1.0.0",
				key, w.containers, w.annotations["helm-inject.io/status"], err)
		}
		// The stored manifest names the subchart's templates as helm does.
		if src := sources[key]; !strings.HasPrefix(src, "platform/charts/kyverno/templates/") {
			t.Errorf("%s: stored under # Source: %s, want helm's platform/charts/kyverno/templates/...", key, src)
		}
	}
	// kyverno.fullname in grafana's templates: RELEASE-grafana.
	if src := sources["ConfigMap/plat-grafana-grafana"]; src != "platform/charts/kyverno/charts/grafana/templates/dashboard.yaml" {
		t.Errorf("grafana's dashboard is stored under # Source: %q, want helm's platform/charts/kyverno/charts/grafana/templates/dashboard.yaml", src)
	}

	// Release sidecar 1.1.0 and lock it.
	writeFile(t, filepath.Join(lib, "sidecar", "1.1.0.yaml"), sidecar110)
	if out := mustHelmInject(t, "injectors", "lock", "--injector-library", lib).stdout; !strings.Contains(out, "locked sidecar@1.1.0") {
		t.Fatalf("injectors lock: %s", out)
	}

	// always would move every workload to 1.1.0: the case tests something.
	var d struct {
		InjectorsAfter []struct{ Name, Version string } `json:"injectorsAfter"`
		Changes        []struct{ Change, Kind, Name string }
	}
	diffArgs := append(append([]string{"diff", rel, chart}, flags...), "--reconcile", "always", "--output", "json")
	if err := json.Unmarshal([]byte(mustHelmInject(t, diffArgs...).stdout), &d); err != nil {
		t.Fatal(err)
	}
	if len(d.InjectorsAfter) != 1 || d.InjectorsAfter[0].Version != "1.1.0" {
		t.Errorf("diff --reconcile always: injectors after %+v, want sidecar 1.1.0", d.InjectorsAfter)
	}
	changed := map[string]bool{}
	for _, c := range d.Changes {
		if c.Change == "changed" {
			changed[c.Kind+"/"+c.Name] = true
		}
	}
	for key := range ws {
		if !changed[key] {
			t.Errorf("diff --reconcile always does not change %s: %+v", key, d.Changes)
		}
	}

	// never: no revision, not a byte changes, the old version recorded.
	out := apply("--reconcile", "never").stdout
	if !strings.Contains(out, "has no changes") || len(revisions(t, rel, ns)) != 1 {
		// A drifted ConfigMap's whole value is in the message: its start says enough.
		t.Errorf("--reconcile never made a revision (history %v):\n%.1500s", revisions(t, rel, ns), out)
	}
	if after := manifestOf(); after != before {
		t.Errorf("--reconcile never changed the stored manifest:\n%s", firstDifference(before, after))
	}
	var st struct {
		Injectors []struct {
			Name, Version, Newest string
			Outdated              bool
		}
	}
	if err := json.Unmarshal([]byte(mustHelmInject(t, "status", rel, "-n", ns, "--injector-library", lib, "-o", "json").stdout), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Injectors) != 1 || st.Injectors[0].Name != "sidecar" || st.Injectors[0].Version != "1.0.0" ||
		st.Injectors[0].Newest != "1.1.0" || !st.Injectors[0].Outdated {
		t.Errorf("status injectors = %+v, want sidecar 1.0.0, newest 1.1.0, outdated", st.Injectors)
	}
}
