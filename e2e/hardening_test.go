package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/helm-inject/helm-inject/internal/testfs"
)

// TestKilledHelmInjectLeavesNoInjector: helm-inject killed outright (kill
// -9, as an OOM kill or Argo CD's timeout does it) cannot clean up, so the
// kernel ends its injector, and what it leaves in TMPDIR is readable by
// nobody else (0700 folders, 0600 files).
func TestKilledHelmInjectLeavesNoInjector(t *testing.T) {
	tmp := t.TempDir()
	counted := filepath.Join(t.TempDir(), "started")
	p := startHelmInject(t, nil, tmp, "template", "killed", webappChart,
		"--injector", "sidecar-injector f=FILE,fail=hang,count-file="+counted)
	waitForFile(t, counted)
	running := "--count-file " + counted
	if out, _ := exec.Command("pgrep", "-f", "--", running).Output(); len(out) == 0 {
		t.Fatalf("no running injector matches %q", running)
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	_ = p.cmd.Wait()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _ := exec.Command("pgrep", "-f", "--", running).Output()
		if len(out) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the injector still runs after helm-inject was killed: pid %s", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	checkPrivate(t, tmp)
}

// TestSigtermStopsAnEndlessDefinition: a built-in definition whose
// templates call each other exponentially (it writes nothing, calls no
// function) ends at SIGTERM as an external injector does, and at
// --injector-timeout.
func TestSigtermStopsAnEndlessDefinition(t *testing.T) {
	lib := t.TempDir()
	tmpl := `{{ define "a0" }}{{ end }}`
	for i := 1; i <= 60; i++ {
		tmpl += fmt.Sprintf(`{{ define "a%d" }}{{ template "a%d" }}{{ template "a%d" }}{{ end }}`, i, i-1, i-1)
	}
	tmpl += `{{ template "a60" }}annotations: {}`
	testfs.Write(t, lib, map[string]string{"endless/1.0.0.yaml": "name: endless\nversion: 1.0.0\ntemplate: |\n  " + tmpl + "\n"})
	args := []string{"template", "endless", webappChart, "--injector-library", lib, "--with", "endless"}

	p := startHelmInject(t, nil, t.TempDir(), args...)
	time.Sleep(2 * time.Second)
	p.stop(t, syscall.SIGTERM)
	if !strings.Contains(p.stderr.String(), "template of endless@1.0.0: stopped") {
		t.Errorf("stderr after SIGTERM:\n%s", p.stderr)
	}

	r := helmInject(t, append(args, "--injector-timeout", "1s")...)
	if r.code == 0 || !strings.Contains(r.stderr, "did not finish within 1s (--injector-timeout)") {
		t.Errorf("with --injector-timeout 1s:\n%s", r)
	}
}

// TestPlanCacheOnlyInAHelmfileRun: the plan cache variables mean nothing
// to a command a user runs: nothing is read from or written to the folder
// they name.
func TestPlanCacheOnlyInAHelmfileRun(t *testing.T) {
	ns := namespace(t)
	plans := t.TempDir()
	if err := os.Chmod(plans, 0o777); err != nil {
		t.Fatal(err)
	}
	env := []string{"HELM_INJECT_PLAN_CACHE=" + plans, "HELM_INJECT_PLAN_KEY=" + strings.Repeat("ab", 32)}
	for _, args := range [][]string{{"diff", "--allow-unreleased"}, {"apply"}} {
		command{env: env}.mustRun(t, filepath.Join(binDir, "helm-inject"), append(args, "planned", apiChart, "-n", ns, "--injector", "sidecar-injector f=FILE")...)
	}
	if left, _ := os.ReadDir(plans); len(left) != 0 {
		t.Errorf("a command run by hand wrote to the plan cache: %s", left[0].Name())
	}
}
