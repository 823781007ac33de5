package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/cli"

	"github.com/helm-inject/helm-inject/argocd"
	"github.com/helm-inject/helm-inject/inject"
	"github.com/helm-inject/helm-inject/internal/confine"
)

// cliChildEnv makes the test binary something else (see TestMain):
// "helm-inject" runs it as helm-inject with its arguments;
// "helm-inject-no-landlock" too, on a kernel without Landlock (the seam
// reports ABI 0; the seccomp filter is real);
// "confined-generate" confines itself exactly as argocd generate does,
// with PROBE_CONFINE as the operator's --confine, and then tries
// PROBE_READ and PROBE_DIAL.
const cliChildEnv = "HELM_INJECT_CLI_TEST_CHILD"

func TestMain(m *testing.M) {
	switch os.Getenv(cliChildEnv) {
	case "helm-inject":
		os.Exit(Run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	case "helm-inject-no-landlock":
		root := newRootCommandOn(cli.New(), confine.Kernel{ABI: func() int { return 0 }}, os.Stdin, os.Stdout, os.Stderr)
		root.SetArgs(os.Args[1:])
		if err := root.ExecuteContext(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "Error:", err)
			os.Exit(1)
		}
		os.Exit(0)
	case "confined-generate":
		os.Exit(confinedGenerateChild())
	}
	os.Exit(m.Run())
}

// confinedGenerateChild takes generate's steps up to its confinement, the
// same functions with the same inputs, then reads PROBE_READ and a file
// of the application, and dials PROBE_DIAL; it prints what each gave.
func confinedGenerateChild() int {
	fail := func(err error) int { fmt.Fprintln(os.Stderr, err); return 2 }
	pol, err := argocd.Operator{Confine: os.Getenv("PROBE_CONFINE")}.Policy(os.LookupEnv)
	if err != nil {
		return fail(err)
	}
	req, err := argocd.ReadRequest(os.Environ())
	if err != nil {
		return fail(err)
	}
	appDir, err := os.Getwd()
	if err != nil {
		return fail(err)
	}
	cleanup, err := confineApplication(confine.Kernel{}, req, appDir, pol, os.Stderr)
	if err != nil {
		return fail(err)
	}
	defer cleanup()
	outcome := func(err error) string {
		if err != nil {
			return err.Error()
		}
		return "ok"
	}
	res := map[string]string{}
	_, err = os.ReadFile(os.Getenv("PROBE_READ"))
	res["outside"] = outcome(err)
	_, err = os.ReadFile(filepath.Join(appDir, "values.yaml"))
	res["repository"] = outcome(err)
	c, err := net.DialTimeout("tcp", os.Getenv("PROBE_DIAL"), 5*time.Second)
	if err == nil {
		c.Close()
	}
	res["dial"] = outcome(err)
	b, _ := json.Marshal(res)
	os.Stdout.Write(b)
	return 0
}

// argoApp is a repository with the webapp chart as apps/web, and the
// environment Argo CD gives the plugin for it.
func argoApp(t *testing.T) (appDir string, env []string) {
	t.Helper()
	repo := t.TempDir()
	appDir = filepath.Join(repo, "apps", "web")
	copyChart(t, appDir)
	return appDir, []string{
		"ARGOCD_APP_NAME=web", "ARGOCD_APP_NAMESPACE=shop", "ARGOCD_APP_SOURCE_PATH=apps/web",
		"KUBE_VERSION=1.31.4", `ARGOCD_APP_PARAMETERS=[{"name":"set","map":{"replicaCount":"3"}}]`,
	}
}

// TestGenerateConfinesItself: the test binary, re-executed, confines
// itself with generate's own function and inputs, then cannot read a file
// outside the repository or connect to a listener on 127.0.0.1, while it
// reads its repository. With the operator's --confine=off both succeed,
// so the test proves something. A request's HELM_INJECT_CONFINE=off (what
// anyone reaching Argo CD's cmp-server socket can send: it appends a
// request's variables after the sidecar's) and an Application's
// ARGOCD_ENV_HELM_INJECT_CONFINE change nothing.
func TestGenerateConfinesItself(t *testing.T) {
	appDir, env := argoApp(t)
	secret := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(secret, []byte("tenant b"), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
			accepted <- struct{}{}
		}
	}()
	tmp := t.TempDir()
	run := func(mode ...string) map[string]string {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Dir = appDir
		cmd.Env = append(os.Environ(), env...)
		cmd.Env = append(cmd.Env, cliChildEnv+"=confined-generate", "PROBE_READ="+secret, "PROBE_DIAL="+ln.Addr().String(), "TMPDIR="+tmp)
		cmd.Env = append(cmd.Env, mode...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%v: %v", mode, err)
		}
		res := map[string]string{}
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("%v: %q: %v", mode, out, err)
		}
		return res
	}
	for _, mode := range [][]string{
		{"PROBE_CONFINE=required"}, {"PROBE_CONFINE=best-effort"}, nil,
		{"PROBE_CONFINE=best-effort", "ARGOCD_ENV_HELM_INJECT_CONFINE=off"},
		{"PROBE_CONFINE=best-effort", "HELM_INJECT_CONFINE=off"},
		{"PROBE_CONFINE=required", "HELM_INJECT_CONFINE=off"},
	} {
		res := run(mode...)
		if left, _ := os.ReadDir(filepath.Join(tmp, fmt.Sprintf("helm-inject-confined-%d", os.Getuid()))); len(left) != 0 {
			t.Errorf("%v: the confined render left its private folder: %v", mode, left)
		}
		if res["repository"] != "ok" {
			t.Errorf("%v: reading the repository: %s", mode, res["repository"])
		}
		for _, what := range []string{"outside", "dial"} {
			if !strings.Contains(res[what], "permission denied") {
				t.Errorf("%v: %s: %q, want permission denied", mode, what, res[what])
			}
		}
	}
	if n := len(accepted); n != 0 {
		t.Errorf("the listener accepted %d connections from confined processes", n)
	}
	res := run("PROBE_CONFINE=off")
	for _, what := range []string{"outside", "repository", "dial"} {
		if res[what] != "ok" {
			t.Errorf("off: %s: %s, want it to succeed", what, res[what])
		}
	}
	select {
	case <-accepted:
	case <-time.After(5 * time.Second):
		t.Error("off: the listener saw no connection")
	}
	if left, _ := os.ReadDir(filepath.Join(tmp, fmt.Sprintf("helm-inject-confined-%d", os.Getuid()))); len(left) != 0 {
		t.Errorf("confined renders left their private folders: %v", left)
	}
}

// TestGenerateWithoutLandlock: on a kernel without Landlock (the seam
// reports ABI 0, in a fresh process: the socket filter is real), the
// shipped best-effort renders, holds the network with the socket filter
// and says on stderr what is not confined; required (which a request's
// HELM_INJECT_CONFINE=off does not change) fails naming what is missing,
// and prints nothing on stdout.
func TestGenerateWithoutLandlock(t *testing.T) {
	appDir, env := argoApp(t)
	generate := func(extra []string, args ...string) result {
		return runChild(t, "helm-inject-no-landlock", appDir, append(slices.Clone(env), extra...), append([]string{"argocd", "generate"}, args...)...)
	}

	r := generate(nil, "--confine=best-effort")
	if r.err != nil {
		t.Fatalf("best-effort without Landlock: %v\n%s", r.err, r.stderr)
	}
	if !strings.Contains(r.stdout, "kind: Deployment") {
		t.Errorf("best-effort without Landlock printed no manifests:\n%s", r.stdout)
	}
	want := "helm-inject: --confine=best-effort: this kernel (Landlock not available) does not confine files (Landlock ABI 1, Linux 5.13), signals (ABI 6, Linux 6.12)\n"
	if r.stderr != want {
		t.Errorf("best-effort without Landlock: stderr\n%q\nwant\n%q", r.stderr, want)
	}

	r = generate([]string{"HELM_INJECT_CONFINE=off", "ARGOCD_ENV_HELM_INJECT_CONFINE=off"}, "--confine=required")
	if r.err == nil || !strings.Contains(r.stderr, "application web: --confine=required, but this kernel (Landlock not available) cannot confine files (Landlock ABI 1, Linux 5.13)") {
		t.Errorf("required without Landlock: %v, stderr %q; want it to name what is missing", r.err, r.stderr)
	}
	if r.stdout != "" {
		t.Errorf("required without Landlock printed on stdout:\n%s", r.stdout)
	}

	if r = generate(nil, "--confine=on"); r.err == nil || !strings.Contains(r.stderr, `--confine="on": say best-effort, required or off`) {
		t.Errorf("--confine=on: %v, stderr %q", r.err, r.stderr)
	}
}

// result is what a helm-inject process printed, how it ended (err is
// the exit's, code its status) and its peak resident size.
type result struct {
	stdout, stderr string
	err            error
	code           int
	rssKiB         int64
}

// runChild runs the test binary as child (cliChildEnv: "helm-inject", or
// "helm-inject-no-landlock") with args in dir, with the test's own
// environment, a fresh TMPDIR and env after them, a fresh process as Argo
// CD runs each plugin command. A process that cannot be started fails
// the test.
func runChild(t *testing.T, child, dir string, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), cliChildEnv+"="+child, "TMPDIR="+t.TempDir()), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return result{stdout: out.String(), stderr: errb.String(), err: err,
		code: cmd.ProcessState.ExitCode(), rssKiB: cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss}
}

// BenchmarkArgoCDGenerate runs argocd generate on the webapp chart, a
// fresh process each time as Argo CD runs it, unconfined and confined:
// the difference is what confinement costs a generate.
func BenchmarkArgoCDGenerate(b *testing.B) {
	repo := b.TempDir()
	appDir := filepath.Join(repo, "apps", "web")
	copyChart(b, appDir)
	env := append(os.Environ(), cliChildEnv+"=helm-inject", "TMPDIR="+b.TempDir(),
		"ARGOCD_APP_NAME=web", "ARGOCD_APP_NAMESPACE=shop", "ARGOCD_APP_SOURCE_PATH=apps/web", "KUBE_VERSION=1.31.4",
		`ARGOCD_APP_PARAMETERS=[{"name":"set","map":{"replicaCount":"3"}}]`)
	for _, mode := range []string{"off", "required"} {
		b.Run(mode, func(b *testing.B) {
			for b.Loop() {
				cmd := exec.Command(os.Args[0], "argocd", "generate", "--confine="+mode)
				cmd.Dir = appDir
				cmd.Env = env
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v: %s", err, out)
				}
			}
		})
	}
}

// copyChart copies the webapp chart to dir.
func copyChart(t testing.TB, dir string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "..", "fixtures", "charts", "webapp"))); err != nil {
		t.Fatal(err)
	}
}

// helmInject runs the test binary as helm-inject.
func helmInject(t *testing.T, env []string, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), cliChildEnv+"=helm-inject"), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

// TestTemplateConfine: template --confine renders a chart with values,
// set-file and a built-in injector exactly as without it; a chart whose
// template is a link to a file outside it, and a values URL, fail confined
// (the file is not read, the server gets no request) where unconfined they
// succeed.
func TestTemplateConfine(t *testing.T) {
	dir := t.TempDir()
	chartDir := filepath.Join(dir, "webapp")
	copyChart(t, chartDir)
	lib := filepath.Join(dir, "library")
	if err := os.CopyFS(lib, os.DirFS(filepath.Join("..", "..", "fixtures", "injectors", "library"))); err != nil {
		t.Fatal(err)
	}
	values := filepath.Join(dir, "prod.yaml")
	greeting := filepath.Join(dir, "greeting.txt")
	for p, s := range map[string]string{values: "replicas: 4\n", greeting: "hello from a file"} {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A registry configuration of the user's, which a confined render
	// must not need to read.
	registryConfig := filepath.Join(dir, "registry.json")
	if err := os.WriteFile(registryConfig, []byte(`{"auths":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	// An external injector (a script: it may run only its shell).
	injector := filepath.Join(dir, "pass-through")
	if err := os.WriteFile(injector, []byte("#!/bin/sh\nwhile IFS= read -r line; do printf '%s\\n' \"$line\"; done < \"$1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := []string{"TMPDIR=" + t.TempDir(), "HELM_REGISTRY_CONFIG=" + registryConfig}
	args := []string{"template", "web", chartDir, "-f", values, "--set-file", "greeting=" + greeting, "--with", "sidecar@^1", "--injector-library", lib, "--inject", injector + " FILE"}
	plain, stderr, code := helmInject(t, tmp, "", args...)
	if code != 0 {
		t.Fatalf("template: %s", stderr)
	}
	confined, stderr, code := helmInject(t, tmp, "", append(args, "--confine")...)
	if code != 0 {
		t.Fatalf("template --confine: %s", stderr)
	}
	if confined != plain {
		t.Errorf("template --confine printed something else than template:\n%s", cmpLines(plain, confined))
	}
	if !strings.Contains(confined, "hello from a file") || !strings.Contains(confined, "replicas: 4") {
		t.Errorf("template --confine lost the values")
	}

	// A chart with a link out of it.
	secret := filepath.Join(dir, "secret.yaml")
	if err := os.WriteFile(secret, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: stolen\ndata:\n  token: tenant-b-4711\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(chartDir, "templates", "stolen.yaml")); err != nil {
		t.Fatal(err)
	}
	out, _, code := helmInject(t, tmp, "", "template", "web", chartDir)
	if code != 0 || !strings.Contains(out, "tenant-b-4711") {
		t.Fatalf("unconfined, the link is followed (as helm does); got exit %d", code)
	}
	out, stderr, code = helmInject(t, tmp, "", "template", "web", chartDir, "--confine")
	if code == 0 || out != "" || strings.Contains(stderr, "tenant-b-4711") || !strings.Contains(stderr, "permission denied") {
		t.Errorf("template --confine of a chart linking outside: exit %d, stdout %q, stderr %q; want a permission denied and nothing printed", code, out, stderr)
	}
	if err := os.Remove(filepath.Join(chartDir, "templates", "stolen.yaml")); err != nil {
		t.Fatal(err)
	}

	// A values URL.
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		fmt.Fprintln(w, "replicas: 9")
	}))
	defer srv.Close()
	if _, stderr, code := helmInject(t, tmp, "", "template", "web", chartDir, "-f", srv.URL+"/values.yaml"); code != 0 || requests.Load() != 1 {
		t.Fatalf("unconfined, the values URL is fetched: exit %d, %d requests: %s", code, requests.Load(), stderr)
	}
	out, stderr, code = helmInject(t, tmp, "", "template", "web", chartDir, "-f", srv.URL+"/values.yaml", "--confine")
	if code == 0 || out != "" || requests.Load() != 1 || !strings.Contains(stderr, "permission denied") {
		t.Errorf("template --confine -f URL: exit %d, %d requests in all, stderr %q; want a permission denied and no request", code, requests.Load(), stderr)
	}

	// What needs the network or a cluster is refused up front.
	for _, flag := range [][]string{{"--validate"}, {"--enable-dns"}, {"--dependency-update"}, {"--repo", srv.URL}} {
		_, stderr, code := helmInject(t, tmp, "", append([]string{"template", "web", chartDir, "--confine"}, flag...)...)
		if code == 0 || !strings.Contains(stderr, "--confine renders from the files it is given, with no network: it cannot be used with "+flag[0]) {
			t.Errorf("template --confine %s: exit %d, %s", flag[0], code, stderr)
		}
	}
}

// TestPostRenderConfine: post-render --confine runs its injector confined:
// a script injector that copies a file from outside into the home folder
// (with shell builtins: it may run nothing else) gives the manifests back
// but copies nothing; unconfined it copies.
func TestPostRenderConfine(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(dir, "token")
	if err := os.WriteFile(secret, []byte("tenant-b-4711\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "copy-out")
	if err := os.WriteFile(script, []byte(`#!/bin/sh
while IFS= read -r line; do printf '%s\n' "$line"; done < "$1"
read -r token < `+secret+` 2>/dev/null
printf '%s\n' "$token" > "$HOME/leak" 2>/dev/null
exit 0
`), 0o755); err != nil {
		t.Fatal(err)
	}
	manifests := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  a: b\n"
	env := []string{"HOME=" + home, "TMPDIR=" + t.TempDir()}
	out, stderr, code := helmInject(t, env, manifests, "post-render", "--inject", script+" FILE", "--confine")
	if code != 0 || !strings.Contains(out, "name: web") {
		t.Fatalf("post-render --confine: exit %d, %q, %s", code, out, stderr)
	}
	if _, err := os.Stat(filepath.Join(home, "leak")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("post-render --confine: the injector wrote into the home folder (%v)", err)
	}
	if _, _, code := helmInject(t, env, manifests, "post-render", "--inject", script+" FILE"); code != 0 {
		t.Fatal("post-render failed")
	}
	if b, err := os.ReadFile(filepath.Join(home, "leak")); err != nil || string(b) != "tenant-b-4711\n" {
		t.Errorf("unconfined, the injector copies the file (the test proves something): %q, %v", b, err)
	}
}

// cmpLines shows where two outputs part.
func cmpLines(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range min(len(w), len(g)) {
		if w[i] != g[i] {
			return fmt.Sprintf("line %d: want %q, got %q", i+1, w[i], g[i])
		}
	}
	return fmt.Sprintf("want %d lines, got %d", len(w), len(g))
}

// TestInjectorProgramsRelativeToInjectorDir: an injector named by a
// relative path (./bin/inject) is the program of --injector-dir, where it
// runs, so that is the program --confine lets execute; a bare name is
// looked up on PATH; a program that does not exist is left out (it fails
// as it would unconfined).
func TestInjectorProgramsRelativeToInjectorDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(dir, "bin", "inject")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\ncat \"$1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	onPath := t.TempDir()
	named := filepath.Join(onPath, "named-injector")
	if err := os.WriteFile(named, []byte("#!/bin/sh\ncat\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", onPath)
	var d inject.Declared
	for _, line := range []string{"./bin/inject FILE", "named-injector", "./bin/missing FILE"} {
		c, err := inject.ParseCommand(line)
		if err != nil {
			t.Fatal(err)
		}
		d.Specs = append(d.Specs, c)
	}
	got := injectorPrograms(&d, dir)
	if want := []string{prog, named}; !slices.Equal(got, want) {
		t.Errorf("programs = %q, want %q", got, want)
	}
}

// TestParametersAndDiscoverConfineThemselves: argocd parameters (which
// loads the application's chart with Helm's loader) and discover confine
// themselves as generate does, before they read the application: on a
// kernel without Landlock best-effort says what it cannot hold, and
// required refuses, printing nothing, whatever a request's
// HELM_INJECT_CONFINE asks.
func TestParametersAndDiscoverConfineThemselves(t *testing.T) {
	appDir, env := argoApp(t)
	for _, verb := range []string{"parameters", "discover"} {
		run := func(extra []string, args ...string) result {
			return runChild(t, "helm-inject-no-landlock", appDir, append(slices.Clone(env), extra...), append([]string{"argocd", verb}, args...)...)
		}
		r := run(nil, "--confine=best-effort")
		if r.err != nil || !strings.HasPrefix(r.stderr, "helm-inject: --confine=best-effort: this kernel (Landlock not available) does not confine files") {
			t.Errorf("%s, best-effort without Landlock: %v, stderr %q; want the line naming what is not confined", verb, r.err, r.stderr)
		}
		if verb == "parameters" && !strings.Contains(r.stdout, `"chart-values"`) {
			t.Errorf("parameters, best-effort: stdout %q", r.stdout)
		}
		r = run([]string{"HELM_INJECT_CONFINE=off"}, "--confine=required")
		if r.err == nil || r.stdout != "" || !strings.Contains(r.stderr, "--confine=required, but this kernel (Landlock not available) cannot confine files") {
			t.Errorf("%s, required without Landlock: %v, stdout %q, stderr %q; want a refusal and nothing printed", verb, r.err, r.stdout, r.stderr)
		}
	}
}
