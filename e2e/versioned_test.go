package e2e

import (
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// library makes an injector library in a temporary folder holding the
// given versions of the example log-shipper, locked.
func library(t *testing.T, versions ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, v := range versions {
		addVersion(t, dir, "log-shipper", v)
	}
	mustHelmInject(t, "injectors", "lock", "--injector-library", dir)
	return dir
}

func addVersion(t *testing.T, lib, name, version string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "examples", "injectors", name, version+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(lib, name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(lib, name, version+".yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// shipperVersion returns the log-shipper version recorded in the status
// annotation of the release's Deployment, and whether it is a container
// (1.0.0) or a native sidecar (1.1.0).
func shipperVersion(t *testing.T, rel, ns string) (version, where string) {
	t.Helper()
	manifest := mustHelm(t, "get", "manifest", rel, "-n", ns).stdout
	w := workloads(t, manifest)["Deployment/"+rel]
	var st struct {
		Injectors []struct{ Name, Version string }
	}
	if err := json.Unmarshal([]byte(w.annotations["helm-inject.io/status"]), &st); err != nil || len(st.Injectors) != 1 {
		t.Fatalf("Deployment/%s status annotation %q: %v", rel, w.annotations["helm-inject.io/status"], err)
	}
	switch {
	case contains(w.containers, "log-shipper"):
		where = "container"
	case contains(w.initContainers, "log-shipper"):
		where = "native sidecar"
	}
	return st.Injectors[0].Version, where
}

// shipperApply returns a function that applies a release of the api
// chart in ns with lib as the injector library and log-shipper's
// destination set; extra are more flags (--with, --reconcile, ...).
func shipperApply(t *testing.T, ns, lib string) func(rel string, extra ...string) result {
	return func(rel string, extra ...string) result {
		t.Helper()
		args := append([]string{"apply", rel, apiChart, "-n", ns, "--injector-library", lib,
			"--with-set", "log-shipper.destination=logs.example:24224"}, extra...)
		return mustHelmInject(t, args...)
	}
}

// TestVersionedInjectors walks through the life of a built-in injector:
// pinned on install, kept or moved by the reconcile strategy when a new
// version is released, frozen once locked, visible in status and list.
func TestVersionedInjectors(t *testing.T) {
	ns := namespace(t)
	lib := library(t, "1.0.0")
	apply := shipperApply(t, ns, lib)

	// 1. Install with ^1 while the library holds 1.0.0.
	apply("pinned", "--with", "log-shipper@^1")
	if v, where := shipperVersion(t, "pinned", ns); v != "1.0.0" || where != "container" {
		t.Fatalf("after install: log-shipper %s as %s, want 1.0.0 as container", v, where)
	}
	apply("moving", "--with", "log-shipper@^1")
	rev1 := mustHelm(t, "get", "manifest", "pinned", "-n", ns).stdout

	// 2. Release 1.1.0 and lock it.
	addVersion(t, lib, "log-shipper", "1.1.0")
	if out := mustHelmInject(t, "injectors", "lock", "--injector-library", lib).stdout; !strings.Contains(out, "locked log-shipper@1.1.0") {
		t.Fatalf("injectors lock: %s", out)
	}

	// never: nothing moves, no revision, not a byte changes.
	out := apply("pinned", "--with", "log-shipper@^1", "--reconcile", "never").stdout
	if !strings.Contains(out, "has no changes") || len(revisions(t, "pinned", ns)) != 1 {
		t.Errorf("--reconcile never made a revision:\n%s", out)
	}
	if now := mustHelm(t, "get", "manifest", "pinned", "-n", ns).stdout; now != rev1 {
		t.Errorf("--reconcile never changed the manifest")
	}
	// diff says what always would do.
	d := helmInject(t, "diff", "pinned", apiChart, "-n", ns, "--injector-library", lib, "--with", "log-shipper@^1",
		"--with-set", "log-shipper.destination=logs.example:24224", "--no-color")
	if !strings.Contains(d.stdout, "injector log-shipper: 1.0.0 → 1.1.0") {
		t.Errorf("diff does not report the injector upgrade:\n%s", d)
	}

	// 3. A helm-inject built with another version string changes nothing.
	other := filepath.Join(t.TempDir(), "helm-inject")
	build := exec.Command("go", "build", "-o", other, "-ldflags",
		"-X github.com/helm-inject/helm-inject/internal/version.version=v9.9.9-other", ".")
	build.Dir = repoRoot(t)
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building another helm-inject: %v\n%s", err, b)
	}
	if v := (command{}).mustRun(t, other, "version", "--short").stdout; strings.TrimSpace(v) != "v9.9.9-other" {
		t.Fatalf("the rebuilt binary says %q", v)
	}
	out = command{}.mustRun(t, other, "apply", "pinned", apiChart, "-n", ns, "--injector-library", lib, "--with", "log-shipper@^1",
		"--with-set", "log-shipper.destination=logs.example:24224", "--reconcile", "never").stdout
	if !strings.Contains(out, "has no changes") || mustHelm(t, "get", "manifest", "pinned", "-n", ns).stdout != rev1 {
		t.Errorf("another helm-inject build changed the release:\n%s", out)
	}

	// with-chart: no move until the release changes anyway, then one
	// revision with both changes.
	apply("pinned", "--with", "log-shipper@^1", "--reconcile", "with-chart")
	if revs := revisions(t, "pinned", ns); len(revs) != 1 {
		t.Errorf("--reconcile with-chart without a chart change made a revision: %v", revs)
	}
	apply("pinned", "--with", "log-shipper@^1", "--reconcile", "with-chart", "--set", "logLevel=debug")
	if revs := revisions(t, "pinned", ns); len(revs) != 2 {
		t.Errorf("history after a value change = %v, want 2 revisions", revs)
	}
	if v, where := shipperVersion(t, "pinned", ns); v != "1.1.0" || where != "native sidecar" {
		t.Errorf("after the value change: log-shipper %s as %s, want 1.1.0 as native sidecar", v, where)
	}
	if data := configMapData(t, ns, "pinned-config"); data["logLevel"] != "debug" {
		t.Errorf("the value change did not land with the injector upgrade: %v", data)
	}

	// always: the other release moves at once.
	apply("moving", "--with", "log-shipper@^1", "--reconcile", "always")
	if v, _ := shipperVersion(t, "moving", ns); v != "1.1.0" || len(revisions(t, "moving", ns)) != 2 {
		t.Errorf("--reconcile always: log-shipper %s, history %v", v, revisions(t, "moving", ns))
	}

	// A third release stays behind (~1.0), so status and list mark it.
	apply("behind", "--with", "log-shipper@~1.0")
	var st struct {
		Injectors []struct {
			Name, Version, Newest string
			Outdated              bool
		}
		Workloads []struct {
			Kind, Name string
			Injectors  []struct {
				Name, Version string
				Containers    []string
			}
		}
	}
	if err := json.Unmarshal([]byte(mustHelmInject(t, "status", "behind", "-n", ns, "--injector-library", lib, "-o", "json").stdout), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Injectors) != 1 || st.Injectors[0].Version != "1.0.0" || st.Injectors[0].Newest != "1.1.0" || !st.Injectors[0].Outdated {
		t.Errorf("status injectors = %+v", st.Injectors)
	}
	if len(st.Workloads) != 1 || st.Workloads[0].Name != "behind" || st.Workloads[0].Injectors[0].Containers[0] != "log-shipper" {
		t.Errorf("status workloads = %+v", st.Workloads)
	}
	table := mustHelmInject(t, "list", "-n", ns, "--injector-library", lib).stdout
	for _, want := range []string{"behind", "log-shipper@1.0.0", "pinned", "log-shipper@1.1.0"} {
		if !strings.Contains(table, want) {
			t.Errorf("list lacks %q:\n%s", want, table)
		}
	}
	// The last column, OUTDATED, of each release's row: every release
	// must have a row.
	outdated := map[string]string{}
	for _, line := range strings.Split(table, "\n")[1:] {
		if f := strings.Fields(line); len(f) > 0 {
			outdated[f[0]] = f[len(f)-1]
		}
	}
	if want := map[string]string{"behind": "yes", "moving": "no", "pinned": "no"}; !maps.Equal(outdated, want) {
		t.Errorf("OUTDATED by release = %v, want %v:\n%s", outdated, want, table)
	}

	// 4. Editing a locked version is refused, naming the file and the lock.
	file := filepath.Join(lib, "log-shipper", "1.0.0.yaml")
	b, _ := os.ReadFile(file)
	if err := os.WriteFile(file, []byte(strings.Replace(string(b), "2.2.0", "2.2.9", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	r := helmInject(t, "apply", "behind", apiChart, "-n", ns, "--injector-library", lib, "--with", "log-shipper@~1.0",
		"--with-set", "log-shipper.destination=x:1")
	if r.code == 0 || !strings.Contains(r.stderr, file+" was changed after log-shipper@1.0.0 was locked in "+filepath.Join(lib, "injectors.lock")) {
		t.Errorf("apply with an edited locked version: %s", r)
	}
	if revs := revisions(t, "behind", ns); len(revs) != 1 {
		t.Errorf("history after a refused apply = %v", revs)
	}
}

// TestVersionedInjectorBadInput: each mistake is a clear error and nothing
// is applied.
func TestVersionedInjectorBadInput(t *testing.T) {
	ns := namespace(t)
	lib := library(t, "1.0.0", "1.1.0")
	if err := os.MkdirAll(filepath.Join(lib, "clash"), 0o755); err != nil {
		t.Fatal(err)
	}
	defs := map[string]string{
		"clash/1.0.0.yaml":  "name: clash\nversion: 1.0.0\ntemplate: |\n  containers:\n    - name: api\n      image: x\n",
		"broken/1.0.0.yaml": "name: broken\nversion: 1.0.0\nparameters:\n  - name: port\ntemplate: |\n  containers:\n    - name: b\n      image: {{ .Params.image }}\n",
	}
	for f, body := range defs {
		_ = os.MkdirAll(filepath.Join(lib, filepath.Dir(f)), 0o755)
		if err := os.WriteFile(filepath.Join(lib, f), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mustHelmInject(t, "injectors", "lock", "--injector-library", lib)
	base := []string{"apply", "guard", apiChart, "-n", ns, "--injector-library", lib}
	mustHelmInject(t, append(base, "--with", "log-shipper@1.0.0", "--with-set", "log-shipper.destination=a:1")...)

	tests := []struct {
		name  string
		flags []string
		want  string
	}{
		{"unknown injector", []string{"--with", "nope"}, `injector "nope" is not in the library`},
		{"unknown version", []string{"--with", "log-shipper@3.0.0", "--with-set", "log-shipper.destination=a:1"}, `no version of injector "log-shipper" in ` + lib + ` matches "3.0.0" (it has 1.0.0, 1.1.0)`},
		{"constraint matching nothing", []string{"--with", "log-shipper@>=2, <3", "--with-set", "log-shipper.destination=a:1"}, `matches ">=2, <3"`},
		{"missing required parameter", []string{"--with", "log-shipper@1.1.0"}, `parameter "destination" is required`},
		{"unknown parameter", []string{"--with", "log-shipper", "--with-set", "log-shipper.destination=a:1", "--with-set", "log-shipper.colour=red"}, "has no parameter colour"},
		{"template error", []string{"--with", "broken"}, `map has no entry for key "image"`},
		{"container name clash", []string{"--with", "clash"}, `clash@1.0.0 would add container "api", but the pod already has a container of that name`},
		{"--with-set without --with", []string{"--with", "clash", "--with-set", "other.x=1"}, "--with-set other...: no --with other"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := helmInject(t, append(base, tt.flags...)...)
			if r.code == 0 || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("want an error containing %q, got %s", tt.want, r)
			}
			if revs := revisions(t, "guard", ns); len(revs) != 1 {
				t.Errorf("history = %v after a failed apply", revs)
			}
		})
	}
}

// TestReconcileEdges: --update-injectors moves a release whose strategy is
// never; never keeps the recorded version only while it satisfies the
// constraint; status -o yaml shows the version recorded.
func TestReconcileEdges(t *testing.T) {
	ns := namespace(t)
	lib := library(t, "1.0.0")
	apply := shipperApply(t, ns, lib)
	apply("forced", "--with", "log-shipper@^1", "--reconcile", "never")
	apply("narrow", "--with", "log-shipper@~1.0", "--reconcile", "never")
	addVersion(t, lib, "log-shipper", "1.1.0")
	mustHelmInject(t, "injectors", "lock", "--injector-library", lib)

	apply("forced", "--with", "log-shipper@^1", "--reconcile", "never", "--update-injectors")
	if v, _ := shipperVersion(t, "forced", ns); v != "1.1.0" || len(revisions(t, "forced", ns)) != 2 {
		t.Errorf("--update-injectors on a never release: log-shipper %s, history %v; want 1.1.0 in a second revision", v, revisions(t, "forced", ns))
	}
	// The constraint moves past the recorded 1.0.0: never cannot keep it.
	apply("narrow", "--with", "log-shipper@^1.1", "--reconcile", "never")
	if v, _ := shipperVersion(t, "narrow", ns); v != "1.1.0" {
		t.Errorf("never with a constraint 1.0.0 no longer satisfies: log-shipper %s, want 1.1.0", v)
	}
	var st struct {
		Revision  int
		Injectors []struct{ Name, Version string }
	}
	if err := yaml.Unmarshal([]byte(mustHelmInject(t, "status", "forced", "-n", ns, "-o", "yaml").stdout), &st); err != nil {
		t.Fatal(err)
	}
	if st.Revision != 2 || len(st.Injectors) != 1 || st.Injectors[0].Name != "log-shipper" || st.Injectors[0].Version != "1.1.0" {
		t.Errorf("status -o yaml = %+v", st)
	}
}
