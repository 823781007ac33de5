package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/helm-inject/helm-inject/internal/testenv"
	"github.com/helm-inject/helm-inject/internal/testfs"
)

// faultChart has one Deployment: without kube-controller-manager (the
// control plane of these tests has none) it never becomes ready, so an
// apply with --wait stays in Helm's pending state as long as the test needs.
func faultChart(t *testing.T) string {
	t.Helper()
	chart := filepath.Join(t.TempDir(), "faulty")
	testfs.Write(t, chart, map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: faulty\nversion: 0.1.0\n",
		"values.yaml": "level: info\n",
		"templates/all.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}
data:
  level: {{ .Values.level | quote }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  selector:
    matchLabels: {app: {{ .Release.Name }}}
  template:
    metadata:
      labels: {app: {{ .Release.Name }}}
    spec:
      containers:
        - name: app
          image: registry.example/app:1
`,
	})
	return chart
}

// ownControlPlane starts etcd and kube-apiserver for one test, so that
// stopping its API server disturbs no other test.
func ownControlPlane(t *testing.T) (*testenv.Env, command) {
	t.Helper()
	env, err := testenv.Start(t.Context(), testenv.Options{ToolsBin: cluster.ToolsBin})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	return env, command{env: []string{"KUBECONFIG=" + env.Kubeconfig}}
}

// releaseState returns a release's newest revision and its status, as
// `helm status` shows them; 0 and "" when there is no release.
func releaseState(t *testing.T, c command, name string) (int, string) {
	t.Helper()
	r := c.run(t, helmBin(t), "status", name, "-o", "json")
	if r.code != 0 {
		return 0, ""
	}
	var s struct {
		Version int
		Info    struct{ Status string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		t.Fatal(err)
	}
	return s.Version, s.Info.Status
}

func releaseStatus(t *testing.T, c command, name string) string {
	t.Helper()
	_, status := releaseState(t, c, name)
	return status
}

// TestAPIServerStopsDuringApply: the API server goes away while an apply
// runs, first before its first write (while the injector runs), then
// while it waits after writing. Each apply fails with the release named;
// after the restart a re-run converges, using Helm's rollback where Helm
// could not record the failure.
func TestAPIServerStopsDuringApply(t *testing.T) {
	env, c := ownControlPlane(t)
	chart := faultChart(t)
	hi := filepath.Join(binDir, "helm-inject")
	c.mustRun(t, hi, "apply", "faulty", chart, "--injector", "sidecar-injector f=FILE")

	// 1. Down while the injector runs: nothing can be written.
	started := filepath.Join(t.TempDir(), "started")
	p := startHelmInject(t, c.env, t.TempDir(), "apply", "faulty", chart, "--set", "level=debug",
		"--inject", "sidecar-injector --sleep 3s --count-file "+started+" FILE")
	waitForFile(t, started)
	restart, err := env.StopAPIServer()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Wait(); err == nil {
		t.Fatalf("apply succeeded without an API server:\n%s", p.stderr)
	}
	if !strings.Contains(p.stderr.String(), `release "faulty"`) || !strings.Contains(p.stderr.String(), "connection refused") {
		t.Errorf("apply without an API server:\n%s", p.stderr)
	}
	if err := restart(t.Context()); err != nil {
		t.Fatal(err)
	}
	if revs := c.mustRun(t, helmBin(t), "history", "faulty", "-o", "json").stdout; strings.Count(revs, `"revision"`) != 1 {
		t.Errorf("history after the failed apply: %s", revs)
	}
	c.mustRun(t, hi, "apply", "faulty", chart, "--set", "level=debug", "--injector", "sidecar-injector f=FILE")
	if s := releaseStatus(t, c, "faulty"); s != "deployed" {
		t.Fatalf("re-run after the restart: release is %q", s)
	}

	// 2. Down after the writes, while --wait polls: Helm cannot record the
	// failure, so the revision stays pending-upgrade.
	p = startHelmInject(t, c.env, t.TempDir(), "apply", "faulty", chart, "--set", "level=warn",
		"--injector", "sidecar-injector f=FILE", "--wait", "--timeout", "10s")
	waitForStatus(t, c, "faulty", "pending-upgrade")
	restart, err = env.StopAPIServer()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Wait(); err == nil {
		t.Fatalf("apply succeeded without an API server:\n%s", p.stderr)
	}
	if err := restart(t.Context()); err != nil {
		t.Fatal(err)
	}
	if s := releaseStatus(t, c, "faulty"); s != "pending-upgrade" {
		t.Fatalf("after losing the API server mid-wait the release is %q, want pending-upgrade", s)
	}
	r := c.run(t, hi, "apply", "faulty", chart, "--set", "level=warn", "--injector", "sidecar-injector f=FILE")
	if r.code == 0 || !strings.Contains(r.stderr, `release "faulty": another operation (install/upgrade/rollback) is in progress (revision 3 is pending-upgrade)`) ||
		!strings.Contains(r.stderr, "helm rollback faulty") {
		t.Errorf("apply on a pending release:\n%s", r)
	}
	// The documented recovery: Helm's rollback ends the pending revision.
	c.mustRun(t, helmBin(t), "rollback", "faulty")
	c.mustRun(t, hi, "apply", "faulty", chart, "--set", "level=warn", "--injector", "sidecar-injector f=FILE")
	if s := releaseStatus(t, c, "faulty"); s != "deployed" {
		t.Fatalf("re-run after rollback: release is %q", s)
	}
	if got := c.mustRun(t, helmBin(t), "get", "values", "faulty", "-o", "json").stdout; !strings.Contains(got, `"level":"warn"`) {
		t.Errorf("values after recovery: %s", got)
	}
}

// TestConcurrentApplies: a second apply of a release that another apply is
// installing gets Helm's "another operation is in progress" error and
// writes nothing; applies of two different releases run side by side.
func TestConcurrentApplies(t *testing.T) {
	_, c := ownControlPlane(t)
	chart := faultChart(t)
	hi := filepath.Join(binDir, "helm-inject")
	c.mustRun(t, hi, "apply", "busy", chart, "--injector", "sidecar-injector f=FILE")

	first := startHelmInject(t, c.env, t.TempDir(), "apply", "busy", chart, "--set", "level=debug",
		"--injector", "sidecar-injector f=FILE", "--wait", "--timeout", "8s")
	waitForStatus(t, c, "busy", "pending-upgrade")
	r := c.run(t, hi, "apply", "busy", chart, "--set", "level=warn", "--injector", "sidecar-injector f=FILE")
	if r.code == 0 || !strings.Contains(r.stderr, `release "busy": another operation (install/upgrade/rollback) is in progress (revision 2 is pending-upgrade)`) {
		t.Errorf("second apply while the first runs:\n%s", r)
	}
	_ = first.cmd.Wait() // times out waiting: the Deployment never becomes ready
	if got := c.mustRun(t, helmBin(t), "history", "busy", "-o", "json").stdout; strings.Count(got, `"revision"`) != 2 {
		t.Errorf("the refused apply wrote a revision: %s", got)
	}

	var wg sync.WaitGroup
	results := make([]result, 2)
	for i, name := range []string{"left", "right"} {
		wg.Go(func() {
			results[i] = c.run(t, hi, "apply", name, chart, "--injector", "sidecar-injector f=FILE")
		})
	}
	wg.Wait()
	for i, name := range []string{"left", "right"} {
		if results[i].code != 0 {
			t.Errorf("parallel apply of %s:\n%s", name, results[i])
		}
		if s := releaseStatus(t, c, name); s != "deployed" {
			t.Errorf("release %s is %q after parallel applies", name, s)
		}
	}
}

func waitForFile(t *testing.T, path string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		_, err := os.Stat(path)
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("%s never appeared", path)
	}
}

func waitForStatus(t *testing.T, c command, name, want string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return releaseStatus(t, c, name) == want, nil
	})
	if err != nil {
		t.Fatalf("release %s never became %s", name, want)
	}
}
