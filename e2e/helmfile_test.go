package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/helm-inject/helm-inject/internal/testenv"
	"github.com/helm-inject/helm-inject/internal/testfs"
)

// helmfileEnv is what helmfile needs to find helm-inject, the real helm and
// the fixture injector.
func helmfileRun(t *testing.T, dir string, args ...string) result {
	t.Helper()
	return helmfileRunWith(t, helmBin(t), dir, args...)
}

// helmfileRunWith runs `helm-inject helmfile ARGS` in dir with realHelm as
// the helm binary helmfile was told to use.
func helmfileRunWith(t *testing.T, realHelm, dir string, args ...string) result {
	t.Helper()
	hf, err := testenv.Tool(cluster.ToolsBin, "helmfile")
	if err != nil {
		t.Fatal(err)
	}
	env := []string{
		"HELMFILE_BINARY=" + hf,
		"HELMFILE_HELM_BINARY=" + realHelm,
		// helmfile keeps its own cache under HOME; keep it per test.
		"HOME=" + t.TempDir(),
	}
	return command{env: env, dir: dir}.run(t, filepath.Join(binDir, "helm-inject"), append([]string{"helmfile"}, args...)...)
}

func writeState(t *testing.T, name, body string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestHelmfileInjectorFields runs the real helmfile on a state file with
// the seed's injector: field, an injectors: list mixing a built-in template
// and a command, and a release without injectors.
func TestHelmfileInjectorFields(t *testing.T) {
	ns := namespace(t)
	root := repoRoot(t)
	api := filepath.Join(root, apiChart)
	lib := filepath.Join(root, "examples", "injectors")
	state := fmt.Sprintf(`releases:
- name: seeded
  namespace: %[1]s
  chart: %[2]s
  injector: "sidecar-injector f=FILE,image=registry.example/proxy:1"
- name: mixed
  namespace: %[1]s
  chart: %[2]s
  injectors:
  - with: log-shipper@^1
    library: %[3]s
    params:
      destination: logs.example:24224
  - inject: sidecar-injector --name audit FILE
- name: untouched
  namespace: %[1]s
  chart: %[2]s
`, ns, api, lib)
	dir := writeState(t, "helmfile.yaml", state)

	r := helmfileRun(t, dir, "sync")
	if r.code != 0 {
		t.Fatalf("helmfile sync:\n%s", r)
	}
	got := workloads(t, mustHelm(t, "get", "manifest", "seeded", "-n", ns).stdout)["Deployment/seeded"]
	if !contains(got.containers, "sidecar") {
		t.Errorf("seeded: containers %v, want the sidecar", got.containers)
	}
	got = workloads(t, mustHelm(t, "get", "manifest", "mixed", "-n", ns).stdout)["Deployment/mixed"]
	if !contains(got.initContainers, "log-shipper") || !contains(got.containers, "audit") {
		t.Errorf("mixed: containers %v init %v, want log-shipper (1.1.0, native sidecar) and audit", got.containers, got.initContainers)
	}
	// The release without injectors is exactly what plain helm makes.
	plain := mustHelm(t, "template", "untouched", api, "-n", ns, "--skip-tests").stdout
	if installed := mustHelm(t, "get", "manifest", "untouched", "-n", ns).stdout; installed != plain+"\n" {
		t.Errorf("untouched differs from plain helm:\n--- installed\n%s\n--- helm template\n%s", installed, plain)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".helm-inject-*")); len(left) != 0 {
		t.Errorf("translated state files left behind: %v", left)
	}

	// template prints injected manifests.
	r = helmfileRun(t, dir, "template", "--skip-tests")
	if r.code != 0 || !strings.Contains(r.stdout, "name: sidecar") || !strings.Contains(r.stdout, "name: audit") {
		t.Errorf("helmfile template:\n%s", r)
	}

	// A broken injector fails with the release named; the others stay.
	broken := strings.Replace(state, "image=registry.example/proxy:1", "fail=exit1", 1)
	bdir := writeState(t, "helmfile.yaml", broken+"  # changed\n")
	before := map[string]int{}
	for _, rel := range []string{"seeded", "mixed", "untouched"} {
		before[rel] = len(revisions(t, rel, ns))
	}
	r = helmfileRun(t, bdir, "sync", "--concurrency", "1")
	if r.code == 0 || !strings.Contains(r.stdout+r.stderr, `release "seeded": injector "sidecar-injector f=FILE,fail=exit1"`) {
		t.Errorf("helmfile sync with a broken injector:\n%s", r)
	}
	for rel, n := range before {
		if got := len(revisions(t, rel, ns)); got != n {
			t.Errorf("%s went from %d to %d revisions in the failed run", rel, n, got)
		}
	}

	// destroy removes them all.
	if r := helmfileRun(t, dir, "destroy"); r.code != 0 {
		t.Fatalf("helmfile destroy:\n%s", r)
	}
	if out := mustHelm(t, "list", "-n", ns, "-q").stdout; strings.TrimSpace(out) != "" {
		t.Errorf("releases left after destroy: %s", out)
	}
}

// TestHelmfileDiffAndApply: after sync, apply changes nothing; a value
// change in one release shows in diff for that release only, with
// helmfile's --detailed-exitcode, and apply upgrades only that release; an
// object deleted with kubectl shows as drift and apply creates it again.
// No helm-diff plugin is installed: helm-inject answers every diff.
func TestHelmfileDiffAndApply(t *testing.T) {
	ns := namespace(t)
	api := filepath.Join(repoRoot(t), apiChart)
	state := func(level string) string {
		return fmt.Sprintf(`releases:
- name: alpha
  namespace: %[1]s
  chart: %[2]s
  injector: sidecar-injector f=FILE
  set:
  - name: logLevel
    value: %[3]s
- name: beta
  namespace: %[1]s
  chart: %[2]s
  injector: sidecar-injector f=FILE
- name: gamma
  namespace: %[1]s
  chart: %[2]s
`, ns, api, level)
	}
	dir := writeState(t, "helmfile.yaml", state("info"))
	if r := helmfileRun(t, dir, "sync"); r.code != 0 {
		t.Fatalf("sync:\n%s", r)
	}
	if r := helmfileRun(t, dir, "apply"); r.code != 0 {
		t.Fatalf("apply after sync:\n%s", r)
	}
	for _, rel := range []string{"alpha", "beta", "gamma"} {
		if n := len(revisions(t, rel, ns)); n != 1 {
			t.Errorf("%s has %d revisions after apply with no change, want 1", rel, n)
		}
	}
	if r := helmfileRun(t, dir, "diff", "--detailed-exitcode"); r.code != 0 {
		t.Errorf("diff with no change: %s", r)
	}

	if err := os.WriteFile(filepath.Join(dir, "helmfile.yaml"), []byte(state("debug")), 0o644); err != nil {
		t.Fatal(err)
	}
	r := helmfileRun(t, dir, "diff", "--detailed-exitcode")
	if r.code != 2 {
		t.Fatalf("diff after a value change, --detailed-exitcode: %s", r)
	}
	if !strings.Contains(r.stdout, ns+", alpha-config, ConfigMap (v1) has changed:") || strings.Contains(r.stdout, ns+", beta") || strings.Contains(r.stdout, ns+", gamma") {
		t.Errorf("diff shows more or less than alpha's change:\n%s", r.stdout)
	}
	if r := helmfileRun(t, dir, "apply"); r.code != 0 {
		t.Fatalf("apply:\n%s", r)
	}
	want := map[string]int{"alpha": 2, "beta": 1, "gamma": 1}
	for rel, n := range want {
		if got := len(revisions(t, rel, ns)); got != n {
			t.Errorf("%s has %d revisions after apply, want %d", rel, got, n)
		}
	}
	if data := configMapData(t, ns, "alpha-config"); data["logLevel"] != "debug" {
		t.Errorf("alpha-config = %v", data)
	}

	// Nothing changed in the state, but beta's ConfigMap was deleted:
	// helmfile's diff sees the drift and its apply makes the revision
	// that creates it again, as helm 4's upgrade would.
	kubectl(t, "-n", ns, "delete", "configmap", "beta-config")
	if r := helmfileRun(t, dir, "diff", "--detailed-exitcode"); r.code != 2 || !strings.Contains(r.stdout, "drift: ConfigMap beta-config (namespace "+ns+"): missing from the cluster") {
		t.Errorf("diff after beta-config was deleted: %s; want exit 2 and the drift", r)
	}
	if r := helmfileRun(t, dir, "apply"); r.code != 0 {
		t.Fatalf("apply after beta-config was deleted:\n%s", r)
	}
	if got := len(revisions(t, "beta", ns)); got != 2 {
		t.Errorf("beta has %d revisions after the apply over its deleted ConfigMap, want 2", got)
	}
	if data := configMapData(t, ns, "beta-config"); data["logLevel"] != "info" {
		t.Errorf("beta-config after the apply = %v, want it back", data)
	}
	if got := len(revisions(t, "alpha", ns)); got != 2 {
		t.Errorf("alpha has %d revisions, want 2 (its cluster matched)", got)
	}
}

// TestHelmfileGotmplEnvironments: an injector string from environment
// values in a .gotmpl state file, and a selector.
func TestHelmfileGotmplEnvironments(t *testing.T) {
	ns := namespace(t)
	api := filepath.Join(repoRoot(t), apiChart)
	state := fmt.Sprintf(`environments:
  staging:
    values:
    - sidecarImage: registry.example/proxy:staging
  production:
    values:
    - sidecarImage: registry.example/proxy:production
---
releases:
- name: web
  namespace: %[1]s
  chart: %[2]s
  labels:
    tier: front
  injector: {{ printf "sidecar-injector f=FILE,image=%%s" .Values.sidecarImage | quote }}
- name: worker
  namespace: %[1]s
  chart: %[2]s
  labels:
    tier: back
  injector: sidecar-injector f=FILE
`, ns, api)
	dir := writeState(t, "helmfile.yaml.gotmpl", state)
	if r := helmfileRun(t, dir, "-e", "staging", "-l", "name=web", "sync"); r.code != 0 {
		t.Fatalf("sync:\n%s", r)
	}
	manifest := mustHelm(t, "get", "manifest", "web", "-n", ns).stdout
	if !strings.Contains(manifest, "image: registry.example/proxy:staging") {
		t.Errorf("web was not injected with the staging image:\n%s", manifest)
	}
	if r := helm(t, "status", "worker", "-n", ns); r.code == 0 {
		t.Errorf("the selector -l name=web also synced worker")
	}
}

// TestHelmfileIstioctlSeed: the seed's injector string with the real
// istioctl, its config files beside the state file (relative paths resolve
// against the state file's folder).
func TestHelmfileIstioctlSeed(t *testing.T) {
	istioctl, err := testenv.Tool(cluster.ToolsBin, "istioctl")
	if err != nil {
		t.Fatal(err)
	}
	ns := namespace(t)
	dir := writeState(t, "helmfile.yaml", fmt.Sprintf(`releases:
- name: mesh
  namespace: %s
  chart: %s
  injector: "istioctl kube-inject f=FILE,injectConfigFile=inject-config.yaml,meshConfigFile=mesh.yaml,valuesFile=values.json,revision=default"
`, ns, filepath.Join(repoRoot(t), webappChart)))
	istioInjectConfig(t, dir)
	hf, err := testenv.Tool(cluster.ToolsBin, "helmfile")
	if err != nil {
		t.Fatal(err)
	}
	env := []string{
		"HELMFILE_BINARY=" + hf, "HELMFILE_HELM_BINARY=" + helmBin(t), "HOME=" + t.TempDir(),
		"PATH=" + binDir + string(os.PathListSeparator) + filepath.Dir(istioctl) + string(os.PathListSeparator) + os.Getenv("PATH"),
	}
	// The chart's lookup ConfigMap is absent here; that is fine.
	r := command{env: env, dir: dir}.run(t, filepath.Join(binDir, "helm-inject"), "helmfile", "sync")
	if r.code != 0 {
		t.Fatalf("helmfile sync:\n%s", r)
	}
	got := workloads(t, mustHelm(t, "get", "manifest", "mesh", "-n", ns).stdout)
	for _, name := range []string{"Deployment/mesh-web", "StatefulSet/mesh-db", "CronJob/mesh-report"} {
		w := got[name]
		if !contains(w.containers, "istio-proxy") && !contains(w.initContainers, "istio-proxy") {
			t.Errorf("%s has no istio-proxy: %v %v", name, w.containers, w.initContainers)
		}
	}
}

// TestHelmfileDefaults: injectors under helmDefaults apply to every release
// that has none of its own.
func TestHelmfileDefaults(t *testing.T) {
	ns := namespace(t)
	dir := writeState(t, "helmfile.yaml", fmt.Sprintf(`helmDefaults:
  injectors:
  - inject: sidecar-injector --name defaulted FILE
releases:
- name: one
  namespace: %[1]s
  chart: %[2]s
- name: two
  namespace: %[1]s
  chart: %[2]s
  injector: sidecar-injector f=FILE,name=own
`, ns, filepath.Join(repoRoot(t), apiChart)))
	if r := helmfileRun(t, dir, "sync"); r.code != 0 {
		t.Fatalf("sync:\n%s", r)
	}
	if w := workloads(t, mustHelm(t, "get", "manifest", "one", "-n", ns).stdout)["Deployment/one"]; !contains(w.containers, "defaulted") {
		t.Errorf("one: containers %v, want the default injector's", w.containers)
	}
	if w := workloads(t, mustHelm(t, "get", "manifest", "two", "-n", ns).stdout)["Deployment/two"]; !contains(w.containers, "own") || contains(w.containers, "defaulted") {
		t.Errorf("two: containers %v, want only its own injector's", w.containers)
	}
}

// TestHelmfileStateFolder: injector fields in a helmfile.d folder, read by
// default and with --file; values files beside the state files resolve as
// they do without helm-inject, and the original folder is left as it was.
func TestHelmfileStateFolder(t *testing.T) {
	ns := namespace(t)
	api := filepath.Join(repoRoot(t), apiChart)
	root := t.TempDir()
	files := map[string]string{
		"helmfile.d/10-front.yaml":       fmt.Sprintf("releases:\n- name: front\n  namespace: %s\n  chart: %s\n  values:\n  - values/front.yaml\n  injector: sidecar-injector f=FILE\n", ns, api),
		"helmfile.d/20-back.yaml.gotmpl": fmt.Sprintf("releases:\n- name: back\n  namespace: %s\n  chart: %s\n", ns, api),
		"helmfile.d/values/front.yaml":   "logLevel: debug-from-values-file\n",
	}
	testfs.Write(t, root, files)

	if r := helmfileRun(t, root, "sync"); r.code != 0 {
		t.Fatalf("helmfile sync in a folder with helmfile.d:\n%s", r)
	}
	front := mustHelm(t, "get", "manifest", "front", "-n", ns).stdout
	if !contains(workloads(t, front)["Deployment/front"].containers, "sidecar") || !strings.Contains(front, "debug-from-values-file") {
		t.Errorf("front: want the sidecar and the value from helmfile.d/values/front.yaml:\n%s", front)
	}
	back := mustHelm(t, "get", "manifest", "back", "-n", ns).stdout
	if contains(workloads(t, back)["Deployment/back"].containers, "sidecar") {
		t.Errorf("back has no injector but got the sidecar")
	}
	if r := helmfileRun(t, root, "--file", "helmfile.d", "template", "--skip-tests"); r.code != 0 || strings.Count(r.stdout, "name: sidecar") != 1 {
		t.Errorf("helmfile --file helmfile.d template: want one injected workload:\n%s", r)
	}
	if left, _ := filepath.Glob(filepath.Join(root, ".helm-inject-*")); len(left) != 0 {
		t.Errorf("translated state folders left behind: %v", left)
	}
	for name, body := range files {
		if data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name))); err != nil || string(data) != body {
			t.Errorf("%s changed: %q, %v", name, data, err)
		}
	}
}

// TestHelmfileBasesAndNested: injector fields in a file pulled in with
// bases: and in a nested helmfile (helmfiles:) are translated too.
func TestHelmfileBasesAndNested(t *testing.T) {
	ns := namespace(t)
	api := filepath.Join(repoRoot(t), apiChart)
	root := t.TempDir()
	files := map[string]string{
		"helmfile.yaml":      "bases:\n- releases.yaml\nhelmfiles:\n- apps/helmfile.yaml\n",
		"releases.yaml":      fmt.Sprintf("releases:\n- name: based\n  namespace: %s\n  chart: %s\n  injector: sidecar-injector f=FILE\n", ns, api),
		"apps/helmfile.yaml": fmt.Sprintf("releases:\n- name: nested\n  namespace: %s\n  chart: %s\n  injectors:\n  - inject: sidecar-injector --name audit FILE\n", ns, api),
	}
	testfs.Write(t, root, files)
	if r := helmfileRun(t, root, "sync"); r.code != 0 {
		t.Fatalf("helmfile sync:\n%s", r)
	}
	if got := workloads(t, mustHelm(t, "get", "manifest", "based", "-n", ns).stdout)["Deployment/based"]; !contains(got.containers, "sidecar") {
		t.Errorf("based (from bases:): containers %v, want the sidecar", got.containers)
	}
	if got := workloads(t, mustHelm(t, "get", "manifest", "nested", "-n", ns).stdout)["Deployment/nested"]; !contains(got.containers, "audit") {
		t.Errorf("nested (from helmfiles:): containers %v, want audit", got.containers)
	}
	for _, d := range []string{root, filepath.Join(root, "apps")} {
		if left, _ := filepath.Glob(filepath.Join(d, ".helm-inject-*")); len(left) != 0 {
			t.Errorf("translated state files left behind: %v", left)
		}
	}
}

// TestShimRefusesToRunItself: a "real helm" that is helm-inject itself
// (by path, by name on PATH, a copy, or a script that runs it) is refused with an error that says
// what to set, instead of helm-inject starting itself without end; the
// wrapper refuses such a --helm-binary before helmfile starts.
func TestShimRefusesToRunItself(t *testing.T) {
	self := filepath.Join(binDir, "helm-inject")
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	copied := filepath.Join(t.TempDir(), "helm")
	if err := os.WriteFile(copied, b, 0o755); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "helm")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexec "+self+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// run starts helm-inject in a process group of its own and kills the
	// whole group at the end, so a chain of helm-injects cannot outlive a
	// failing test.
	run := func(env []string, args ...string) result {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, self, args...)
		cmd.Env = append(os.Environ(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
		cmd.Env = append(cmd.Env, env...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		_ = cmd.Run()
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if ctx.Err() != nil {
			t.Fatalf("helm-inject %v with %v did not end within a minute", args, env)
		}
		return result{stdout: out.String(), stderr: errb.String(), code: cmd.ProcessState.ExitCode()}
	}
	tests := []struct {
		name string
		helm string
		want string
	}{
		{"by path", self, "HELM_INJECT_HELM=" + self + " is helm-inject itself"},
		{"by name on PATH", "helm-inject", "HELM_INJECT_HELM=helm-inject is helm-inject itself"},
		{"a copy", copied, "HELM_INJECT_HELM=" + copied + " is helm-inject itself"},
		{"a script that runs it", script, "handed this call to " + script + " 3 times in a row"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run([]string{"HELM_INJECT_AS_HELM=1", "HELM_INJECT_HELM=" + tt.helm}, "version", "--short")
			if r.code != 1 || !strings.Contains(r.stderr, tt.want) || !strings.Contains(r.stderr, "set HELM_INJECT_HELM to the real helm binary") {
				t.Errorf("want exit 1 and %q:\n%s", tt.want, r)
			}
		})
	}
	hf, err := testenv.Tool(cluster.ToolsBin, "helmfile")
	if err != nil {
		t.Fatal(err)
	}
	dir := writeState(t, "helmfile.yaml", "releases: []\n")
	r := run([]string{"HELMFILE_BINARY=" + hf}, "helmfile", "--file", filepath.Join(dir, "helmfile.yaml"), "--helm-binary", self, "list")
	if r.code != 1 || !strings.Contains(r.stderr, "the helm binary "+self+" (--helm-binary") || !strings.Contains(r.stderr, "is helm-inject itself") {
		t.Errorf("helmfile --helm-binary helm-inject:\n%s", r)
	}
}

// TestHelmfilePreflight: `helm-inject helmfile sync` (and `apply
// --skip-diff-on-install`), with the real helm given as --helm-binary, run
// a preflight diff of every release first; `apply` relies on helmfile's
// own diff of every release, which comes before any upgrade. When one
// release's injector fails, the run stops, naming the injector, and no
// release is installed, not even the good one that helmfile would have
// synced first.
func TestHelmfilePreflight(t *testing.T) {
	ns := namespace(t)
	hf, err := testenv.Tool(cluster.ToolsBin, "helmfile")
	if err != nil {
		t.Fatal(err)
	}
	state := fmt.Sprintf(`releases:
- name: good
  namespace: %[1]s
  chart: %[2]s
  injector: "sidecar-injector f=FILE"
- name: broken
  namespace: %[1]s
  chart: %[2]s
  needs: [good]
  injector: "sidecar-injector f=FILE,fail=exit1"
`, ns, filepath.Join(repoRoot(t), apiChart))
	dir := writeState(t, "helmfile.yaml", state)
	c := command{env: []string{"HELMFILE_BINARY=" + hf, "HOME=" + t.TempDir()}, dir: dir}
	for _, args := range [][]string{{"sync"}, {"apply", "--skip-diff-on-install"}, {"apply"}} {
		verb := strings.Join(args, " ")
		r := c.run(t, filepath.Join(binDir, "helm-inject"), append([]string{"helmfile", "--helm-binary", helmBin(t)}, args...)...)
		preflight := verb != "apply"
		if r.code == 0 || !strings.Contains(r.stderr, `injector "sidecar-injector f=FILE,fail=exit1"`) ||
			strings.Contains(r.stderr, "the preflight diff failed") != preflight || strings.Contains(r.stderr, "nothing was applied") != preflight {
			t.Errorf("helmfile %s with a broken injector (a preflight: %v):\n%s", verb, preflight, r)
		}
		if out := mustHelm(t, "list", "-n", ns, "-q").stdout; strings.TrimSpace(out) != "" {
			t.Fatalf("helmfile %s installed releases although the preflight failed: %s", verb, out)
		}
	}
	// helmfile's global flags may follow the command: the preflight diffs
	// the releases the sync selects, not the broken one it leaves out.
	r := c.run(t, filepath.Join(binDir, "helm-inject"), "helmfile", "--helm-binary", helmBin(t), "sync", "--selector", "name=good")
	if out := mustHelm(t, "list", "-n", ns, "-q").stdout; r.code != 0 || strings.TrimSpace(out) != "good" {
		t.Errorf("helmfile sync --selector name=good installed %q:\n%s", out, r)
	}
}

// TestHelmfilePlainForm: the plain form of docs/helmfile.md, with no
// wrapper: the real helmfile with helmBinary: helm-inject, a release whose
// postRenderer is helm-inject, and HELM_INJECT_AS_HELM and
// HELM_INJECT_HELM in its environment, installs an injected release; a
// release without the post-renderer goes to the real helm unchanged.
func TestHelmfilePlainForm(t *testing.T) {
	ns := namespace(t)
	hf, err := testenv.Tool(cluster.ToolsBin, "helmfile")
	if err != nil {
		t.Fatal(err)
	}
	state := fmt.Sprintf(`helmBinary: %[3]s
releases:
- name: plainform
  namespace: %[1]s
  chart: %[2]s
  postRenderer: helm-inject
  postRendererArgs:
  - --injector
  - "sidecar-injector f=FILE"
- name: untouched
  namespace: %[1]s
  chart: %[2]s
`, ns, filepath.Join(repoRoot(t), apiChart), filepath.Join(binDir, "helm-inject"))
	dir := writeState(t, "helmfile.yaml", state)
	c := command{env: []string{"HELM_INJECT_AS_HELM=1", "HELM_INJECT_HELM=" + helmBin(t), "HOME=" + t.TempDir()}, dir: dir}
	c.mustRun(t, hf, "sync")
	injected := workloads(t, mustHelm(t, "get", "manifest", "plainform", "-n", ns).stdout)["Deployment/plainform"]
	plain := workloads(t, mustHelm(t, "get", "manifest", "untouched", "-n", ns).stdout)["Deployment/untouched"]
	if !contains(injected.containers, "sidecar") || contains(plain.containers, "sidecar") {
		t.Errorf("plainform containers %v (want a sidecar), untouched %v (want none)", injected.containers, plain.containers)
	}
	if out := mustHelmInject(t, "list", "-n", ns).stdout; !strings.Contains(out, "plainform") || strings.Contains(out, "untouched") {
		t.Errorf("helm-inject list:\n%s", out)
	}
}

// TestHelmfileWithHelm4: with helm 4 as the real helm, helmfile passes its
// helm-4-only release fields as helm 4 flags (serverSide as --server-side,
// forceConflicts as --force-conflicts, rollbackOnFailure as
// --rollback-on-failure, trackMode helm-legacy as --wait=legacy), and the
// shim acts on each of them for injected releases.
func TestHelmfileWithHelm4(t *testing.T) {
	ns := namespace(t)
	api := filepath.Join(repoRoot(t), apiChart)
	stuck := stuckChart(t)
	state := func(level, nodeSelector string) string {
		return fmt.Sprintf(`releases:
- name: alpha
  namespace: %[1]s
  chart: %[2]s
  injector: sidecar-injector f=FILE
  serverSide: "true"
  forceConflicts: true
  set:
  - name: logLevel
    value: %[3]s
- name: beta
  namespace: %[1]s
  chart: %[2]s
  injector: sidecar-injector f=FILE
  serverSide: "false"
- name: gamma
  namespace: %[1]s
  chart: %[4]s
  injector: sidecar-injector f=FILE
  wait: true
  trackMode: helm-legacy
  timeout: 8
  rollbackOnFailure: true
%[5]s`, ns, api, level, stuck, nodeSelector)
	}
	helm4 := helm4Bin(t)
	// With this selector no node fits: the wait cannot end.
	nowhere := "  setString:\n  - name: nodeSelector.pool\n    value: nowhere\n"
	dir := writeState(t, "helmfile.yaml", state("info", ""))
	if r := helmfileRunWith(t, helm4, dir, "sync"); r.code != 0 {
		t.Fatalf("sync:\n%s", r)
	}
	methods := map[string]string{"alpha": "ssa", "beta": "csa", "gamma": "ssa"}
	for rel, want := range methods {
		if got := storedRevisions(t, ns, rel)[1].ApplyMethod; got != want {
			t.Errorf("%s revision 1 apply_method = %q, want %q", rel, got, want)
		}
		if c := liveContainers(t, ns, rel); !contains(c, "sidecar") {
			t.Errorf("%s runs containers %v, want the sidecar", rel, c)
		}
	}

	// Another field manager takes alpha's ConfigMap field "owner":
	// helm 4's server-side upgrade conflicts with it unless forced.
	cm := corev1ac.ConfigMap("alpha-config", ns).WithData(map[string]string{"owner": "someone-else"})
	if _, err := clientset(t).CoreV1().ConfigMaps(ns).Apply(t.Context(), cm, metav1.ApplyOptions{FieldManager: "other", Force: true}); err != nil {
		t.Fatal(err)
	}
	// gamma's upgrade asks for a node no one has: the wait times out and
	// the upgrade is rolled back.
	if err := os.WriteFile(filepath.Join(dir, "helmfile.yaml"), []byte(state("debug", nowhere)), 0o644); err != nil {
		t.Fatal(err)
	}
	r := helmfileRunWith(t, helm4, dir, "sync")
	if r.code == 0 {
		t.Errorf("sync with gamma's upgrade timing out exited 0:\n%s", r)
	}
	if data := configMapData(t, ns, "alpha-config"); data["logLevel"] != "debug" || data["owner"] != "platform" {
		t.Errorf("alpha-config after a forced server-side upgrade = %v, want logLevel debug and owner platform", data)
	}
	if got := storedRevisions(t, ns, "alpha")[2].ApplyMethod; got != "ssa" {
		t.Errorf("alpha revision 2 apply_method = %q, want ssa", got)
	}
	if v, s := releaseState(t, command{env: []string{"HELM_NAMESPACE=" + ns}}, "gamma"); v != 3 || s != "deployed" {
		t.Errorf("gamma after its upgrade timed out is revision %d %s, want 3 deployed (the rollback)", v, s)
	}
	if sel := deploymentNodeSelector(t, ns, "gamma"); len(sel) != 0 {
		t.Errorf("gamma's Deployment after the rollback has nodeSelector %v", sel)
	}
	if !strings.Contains(r.stderr+r.stdout, "rollback-on-failure") {
		t.Errorf("the output does not say gamma was rolled back:\n%s", r)
	}
}
