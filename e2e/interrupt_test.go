package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/helm-inject/helm-inject/internal/testenv"
	"github.com/helm-inject/helm-inject/internal/testfs"
)

// TestInterruptDuringInjection sends SIGINT (Ctrl-C) and SIGTERM while the
// injector runs, and while a --post-renderer executable runs: helm-inject
// stops it, removes its temporary files, exits non-zero and writes no
// release.
func TestInterruptDuringInjection(t *testing.T) {
	for _, stage := range []string{"injector", "post-renderer"} {
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
			t.Run(stage+"/"+sig.String(), func(t *testing.T) {
				interruptWhileRunning(t, stage, sig)
			})
		}
	}
}

// interruptWhileRunning starts an apply whose injector (stage "injector")
// or post-renderer (stage "post-renderer") hangs, and sends sig once it
// runs.
func interruptWhileRunning(t *testing.T, stage string, sig syscall.Signal) {
	ns := namespace(t)
	tmp := t.TempDir()
	started := filepath.Join(t.TempDir(), "started")
	hanging := "sidecar-injector f=FILE,fail=hang,count-file=" + started
	args := []string{"apply", "halted", webappChart, "-n", ns, "--injector", hanging}
	wantErr := `release "halted": injector "` + hanging
	if stage == "post-renderer" {
		args = []string{"apply", "halted", webappChart, "-n", ns, "--injector", "sidecar-injector f=FILE",
			"--post-renderer", "sidecar-injector", "--post-renderer-args=--fail=hang", "--post-renderer-args=--count-file=" + started}
		wantErr = `release "halted": post-renderer: `
	}
	cmd := exec.Command(filepath.Join(binDir, "helm-inject"), args...)
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	// Wait until the program is running (it writes its count file).
	waitForFile(t, started)
	if stage == "injector" {
		// While it runs, its input is private: a 0700 folder, 0600 files.
		checkPrivate(t, tmp)
	}
	// The program's own command line, as helm-inject built it.
	running := "--count-file[= ]" + started
	if out, _ := exec.Command("pgrep", "-f", "--", running).Output(); len(out) == 0 {
		t.Fatalf("no running %s matches %q", stage, running)
	}
	_ = cmd.Process.Signal(sig)
	if err := cmd.Wait(); err == nil {
		t.Fatalf("helm-inject exited 0 after %s", sig)
	}
	if !strings.Contains(stderr.String(), wantErr) || !strings.Contains(stderr.String(), "interrupted") {
		t.Errorf("stderr lacks %q and \"interrupted\":\n%s", wantErr, stderr.String())
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("temporary files left behind: %s", left[0].Name())
	}
	if out, _ := exec.Command("pgrep", "-f", "--", running).Output(); len(out) != 0 {
		t.Errorf("the %s is still running: pid %s", stage, out)
	}
	if r := helm(t, "history", "halted", "-n", ns); r.code == 0 {
		t.Errorf("a release was recorded:\n%s", r.stdout)
	}
}

// checkPrivate checks that every helm-inject temporary folder in tmp is
// 0700 and every file in it 0600.
func checkPrivate(t *testing.T, tmp string) {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(tmp, "helm-inject-*"))
	if len(dirs) == 0 {
		t.Fatalf("no helm-inject temporary folder in %s while the injector runs", tmp)
	}
	for _, d := range dirs {
		err := filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			fi, err := e.Info()
			if err != nil {
				return err
			}
			want := fs.FileMode(0o600)
			if e.IsDir() {
				want = 0o700
			}
			if fi.Mode().Perm() != want {
				t.Errorf("%s has mode %v, want %v", p, fi.Mode().Perm(), want)
			}
			return nil
		})
		if err != nil {
			t.Error(err)
		}
	}
}

// started is a helm-inject process running in the background.
type started struct {
	cmd    *exec.Cmd
	stderr *bytes.Buffer
}

// startHelmInject starts helm-inject with its own TMPDIR and extra
// environment variables env.
func startHelmInject(t *testing.T, env []string, tmp string, args ...string) started {
	t.Helper()
	return startProgram(t, filepath.Join(binDir, "helm-inject"), env, tmp, args...)
}

// startProgram starts bin as startHelmInject starts helm-inject.
func startProgram(t *testing.T, bin string, env []string, tmp string, args ...string) started {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Env = append(cmd.Env, env...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return started{cmd, &stderr}
}

// stop sends sig and waits (at most 30 s) for the process to end; it fails
// the test if the process exits 0 or does not end.
func (s started) stop(t *testing.T, sig syscall.Signal) {
	t.Helper()
	_ = s.cmd.Process.Signal(sig)
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatalf("helm-inject exited 0 after %s:\n%s", sig, s.stderr)
		}
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		t.Fatalf("helm-inject did not end within 30s of %s:\n%s", sig, s.stderr)
	}
}

// TestInterruptWhileFetchingTheChart: a chart repository that never
// answers does not make Ctrl-C wait; nothing is written.
func TestInterruptWhileFetchingTheChart(t *testing.T) {
	ns := namespace(t)
	asked := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case asked <- struct{}{}:
		default:
		}
		<-r.Context().Done() // never answers
	}))
	defer srv.Close()
	defer srv.CloseClientConnections()
	tmp := t.TempDir()
	p := startHelmInject(t, nil, tmp, "apply", "unfetched", "webapp", "--repo", srv.URL, "-n", ns, "--injector", "sidecar-injector f=FILE")
	select {
	case <-asked:
	case <-time.After(time.Minute):
		t.Fatal("helm-inject never asked the repository")
	}
	p.stop(t, syscall.SIGINT)
	if !strings.Contains(p.stderr.String(), `release "unfetched": chart webapp: interrupted while loading it`) {
		t.Errorf("stderr:\n%s", p.stderr)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("temporary files left behind: %s", left[0].Name())
	}
	if r := helm(t, "history", "unfetched", "-n", ns); r.code == 0 {
		t.Errorf("a release was recorded:\n%s", r.stdout)
	}
}

// TestInterruptDuringInstallAndUpgrade: Ctrl-C during an install's wait
// and SIGTERM during an upgrade's wait (after the API writes began) leave
// the revision failed, as Helm does for a failed upgrade, never pending;
// the next apply finishes the job from there. The same with --wait=watcher
// and a --post-renderer (an executable, and a helm 4 postrenderer/v1
// plugin), which runs while planning: the interrupted wait is the SDK's.
func TestInterruptDuringInstallAndUpgrade(t *testing.T) {
	stripper, plugins := stripSources(t)
	variants := []struct {
		name  string
		extra []string
		env   []string
		// postRendered: the release holds the post-renderer's output.
		postRendered bool
	}{
		{"injector", []string{"--wait"}, nil, false},
		{"post-renderer", []string{"--wait=watcher", "--post-renderer", stripper}, nil, true},
		{"post-renderer-plugin", []string{"--wait=watcher", "--post-renderer", "strip-sources"}, []string{"HELM_PLUGINS=" + plugins}, true},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			interruptInstallAndUpgrade(t, v.extra, v.env, v.postRendered)
		})
	}
}

func interruptInstallAndUpgrade(t *testing.T, extra, env []string, postRendered bool) {
	ns := namespace(t)
	chart := stuckChart(t)
	// With this selector no node fits: the wait waits until interrupted.
	nowhere := []string{"--set-string", "nodeSelector.nowhere=true", "--timeout", "5m"}
	apply := func(more ...string) []string {
		args := append([]string{"apply", "stuck", chart, "-n", ns, "--injector", "sidecar-injector f=FILE"}, extra...)
		return append(args, more...)
	}
	run := command{env: env}
	// "REVISION STATUS" of the newest revision.
	status := func() string {
		v, s := releaseState(t, command{env: []string{"HELM_NAMESPACE=" + ns}}, "stuck")
		return fmt.Sprintf("%d %s", v, s)
	}
	interrupt := func(sig syscall.Signal, pending, flag, want string) {
		t.Helper()
		tmp := t.TempDir()
		args := apply(nowhere...)
		if flag != "" {
			args = append(args, flag)
		}
		p := startHelmInject(t, env, tmp, args...)
		err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			return status() == pending, nil
		})
		if err != nil {
			t.Fatalf("the release never became %q (it is %q):\n%s", pending, status(), p.stderr)
		}
		p.stop(t, sig)
		if !strings.Contains(p.stderr.String(), want) {
			t.Errorf("after %s, stderr lacks %q:\n%s", sig, want, p.stderr)
		}
		if left, _ := os.ReadDir(tmp); len(left) != 0 {
			t.Errorf("temporary files left behind: %s", left[0].Name())
		}
	}

	interrupt(syscall.SIGINT, "1 pending-install", "", `release "stuck": install interrupted (context canceled): revision 1 is failed; run apply again`)
	if s := status(); s != "1 failed" {
		t.Fatalf("after an interrupted install the release is %q, want 1 failed", s)
	}
	run.mustRun(t, filepath.Join(binDir, "helm-inject"), apply("--reset-values", "--timeout", "2m")...)
	if s := status(); s != "2 deployed" {
		t.Fatalf("the apply after the interrupted install left %q, want 2 deployed", s)
	}

	// An interrupted upgrade is failed; Helm's rollback returns to the
	// deployed revision, and the next apply then has nothing to do.
	interrupt(syscall.SIGTERM, "3 pending-upgrade", "", `release "stuck": upgrade interrupted (context canceled): revision 3 is failed; `+"`helm rollback stuck`")
	if s := status(); s != "3 failed" {
		t.Fatalf("after an interrupted upgrade the release is %q, want 3 failed", s)
	}
	mustHelm(t, "rollback", "stuck", "-n", ns, "--wait", "--timeout", "2m")
	run.mustRun(t, filepath.Join(binDir, "helm-inject"), apply("--reset-values", "--timeout", "2m")...)
	if s := status(); s != "4 deployed" {
		t.Fatalf("rollback and apply after the interrupted upgrade left %q, want 4 deployed", s)
	}

	// With --atomic, helm-inject's upgrade rolls back by itself.
	interrupt(syscall.SIGINT, "5 pending-upgrade", "--atomic", `release "stuck": upgrade interrupted: release stuck failed, and has been rolled back due to rollback-on-failure being set: context canceled`)
	if s := status(); s != "6 deployed" {
		t.Fatalf("after an interrupted --atomic upgrade the release is %q, want 6 deployed (a rollback)", s)
	}
	if sel := deploymentNodeSelector(t, ns, "stuck"); len(sel) != 0 {
		t.Errorf("after the rollback the Deployment still has nodeSelector %v", sel)
	}
	m := mustHelm(t, "get", "manifest", "stuck", "-n", ns).stdout
	if w := workloads(t, m)["Deployment/stuck"]; !contains(w.containers, "sidecar") {
		t.Errorf("final revision has containers %v", w.containers)
	}
	if got := strings.Contains(m, "generated-by-postrender.yaml"); got != postRendered {
		t.Errorf("the final revision holds the post-renderer's output: %v, want %v:\n%s", got, postRendered, m)
	}
}

func deploymentNodeSelector(t *testing.T, ns, name string) map[string]string {
	t.Helper()
	d, err := clientset(t).AppsV1().Deployments(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d.Spec.Template.Spec.NodeSelector
}

// stuckChart writes a chart with one Deployment whose nodeSelector comes
// from values: with nodeSelector.nowhere set no node fits, and --wait
// waits until it is interrupted.
func stuckChart(t *testing.T) string {
	t.Helper()
	chart := filepath.Join(t.TempDir(), "stuck")
	testfs.Write(t, chart, map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: stuck\nversion: 0.1.0\n",
		"values.yaml": "nodeSelector: {}\n",
		"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  selector:
    matchLabels: {app: stuck}
  template:
    metadata:
      labels: {app: stuck}
    spec:
      nodeSelector: {{ toJson .Values.nodeSelector }}
      containers:
        - name: app
          image: registry.example/app:1
`,
	})
	return chart
}

// TestInterruptHelmfileSync: Ctrl-C (SIGINT to the whole process group, as
// a terminal sends it) or SIGTERM to helm-inject alone (as CI or kill
// sends it), while `helm-inject helmfile sync` waits for an injected
// release and a plain one, reaches helmfile and through it both helm
// calls: both revisions end failed, never pending; helmfile's temporary
// values files and helm-inject's own are gone; the exit code is
// helmfile's, 130 or 143.
func TestInterruptHelmfileSync(t *testing.T) {
	hf, err := testenv.Tool(cluster.ToolsBin, "helmfile")
	if err != nil {
		t.Fatal(err)
	}
	// Two charts: helmfile runs releases of one chart one after the other.
	injected, plain := stuckChart(t), stuckChart(t)
	for _, tt := range []struct {
		sig   syscall.Signal
		group bool
		code  int
	}{{syscall.SIGINT, true, 130}, {syscall.SIGTERM, false, 143}} {
		t.Run(tt.sig.String(), func(t *testing.T) {
			ns := namespace(t)
			state := fmt.Sprintf(`releases:
- name: waits-injected
  namespace: %[1]s
  chart: %[2]s
  wait: true
  timeout: 300
  values:
  - nodeSelector: {nowhere: "true"}
  injector: "sidecar-injector f=FILE"
- name: waits-plain
  namespace: %[1]s
  chart: %[3]s
  wait: true
  timeout: 300
  values:
  - nodeSelector: {nowhere: "true"}
`, ns, injected, plain)
			dir := writeState(t, "helmfile.yaml", state)
			tmp := t.TempDir()
			cmd := exec.Command(filepath.Join(binDir, "helm-inject"), "helmfile", "sync")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "HOME="+t.TempDir(),
				"HELMFILE_BINARY="+hf, "HELMFILE_HELM_BINARY="+helmBin(t),
				"PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
			c := command{env: []string{"HELM_NAMESPACE=" + ns}}
			pending := func() bool {
				_, a := releaseState(t, c, "waits-injected")
				_, b := releaseState(t, c, "waits-plain")
				return a == "pending-install" && b == "pending-install"
			}
			err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
				return pending(), nil
			})
			if err != nil {
				t.Fatalf("the releases never became pending-install:\n%s", out.String())
			}
			if left, _ := os.ReadDir(tmp); len(left) == 0 {
				t.Fatal("no temporary file while helmfile runs: the test cannot see a leak")
			}
			target := cmd.Process.Pid
			if tt.group {
				target = -target
			}
			if err := syscall.Kill(target, tt.sig); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(2 * time.Minute):
				t.Fatalf("helm-inject helmfile sync did not end within 2 minutes of %s:\n%s", tt.sig, out.String())
			}
			if code := cmd.ProcessState.ExitCode(); code != tt.code {
				t.Errorf("exit code %d after %s, want %d (helmfile's):\n%s", code, tt.sig, tt.code, out.String())
			}
			for _, rel := range []string{"waits-injected", "waits-plain"} {
				if v, st := releaseState(t, c, rel); v != 1 || st != "failed" {
					t.Errorf("after %s, %s is revision %d %q, want 1 failed", tt.sig, rel, v, st)
				}
			}
			var left []string
			_ = filepath.WalkDir(tmp, func(p string, _ fs.DirEntry, _ error) error {
				if p != tmp {
					left = append(left, strings.TrimPrefix(p, tmp+"/"))
				}
				return nil
			})
			if len(left) != 0 {
				t.Errorf("after %s, temporary files are left behind: %v", tt.sig, left)
			}
		})
	}
}

// TestInterruptAtomicInstallAndKill: Ctrl-C during an --atomic install
// uninstalls the release, as docs/reliability.md says; kill -9 during an
// install leaves it pending-install (nothing can record the failure), the
// next apply refuses with what to do, and after `helm uninstall` the apply
// installs it.
func TestInterruptAtomicInstallAndKill(t *testing.T) {
	ns := namespace(t)
	chart := stuckChart(t)
	c := command{env: []string{"HELM_NAMESPACE=" + ns}}
	status := func(rel string) string {
		v, s := releaseState(t, c, rel)
		return fmt.Sprintf("%d %s", v, s)
	}
	start := func(rel string, extra ...string) started {
		t.Helper()
		args := append([]string{"apply", rel, chart, "-n", ns, "--injector", "sidecar-injector f=FILE",
			"--set-string", "nodeSelector.nowhere=true", "--wait", "--timeout", "5m"}, extra...)
		p := startHelmInject(t, nil, t.TempDir(), args...)
		err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			return status(rel) == "1 pending-install", nil
		})
		if err != nil {
			t.Fatalf("%s never became pending-install (%s):\n%s", rel, status(rel), p.stderr)
		}
		return p
	}

	start("atomic", "--atomic").stop(t, syscall.SIGINT)
	if s := status("atomic"); s != "0 " {
		t.Errorf("after Ctrl-C during an --atomic install the release is %q, want it uninstalled", s)
	}

	p := start("killed")
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
	if s := status("killed"); s != "1 pending-install" {
		t.Fatalf("after kill -9 the release is %q, want 1 pending-install", s)
	}
	r := helmInject(t, "apply", "killed", chart, "-n", ns, "--injector", "sidecar-injector f=FILE")
	if r.code == 0 || !strings.Contains(r.stderr, "another operation (install/upgrade/rollback) is in progress") || !strings.Contains(r.stderr, "pending-install") {
		t.Errorf("apply over a killed install:\n%s", r)
	}
	mustHelm(t, "uninstall", "killed", "-n", ns)
	mustHelmInject(t, "apply", "killed", chart, "-n", ns, "--injector", "sidecar-injector f=FILE")
	if s := status("killed"); s != "1 deployed" {
		t.Errorf("after helm uninstall and apply the release is %q, want 1 deployed", s)
	}
}
