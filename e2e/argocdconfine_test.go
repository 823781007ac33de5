package e2e

import (
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/helm-inject/helm-inject/internal/testenv"
	"github.com/helm-inject/helm-inject/internal/testfs"
)

// TestArgoCDConfinesInjectors: an injector that argocd generate runs tries
// to read a file outside the repository, connect to a listener on
// 127.0.0.1 and to a unix socket file (as the cmp-server's), write into
// the home folder and signal the test. Confined (the operator's required;
// best-effort with the Application asking ARGOCD_ENV_HELM_INJECT_CONFINE=off;
// best-effort with a request to the cmp-server carrying
// HELM_INJECT_CONFINE=off and more allowed programs), each attempt is
// denied: the listeners see no connection, the files are unchanged, no
// signal arrives. With the operator's --confine=off each succeeds, so the
// test proves something.
func TestArgoCDConfinesInjectors(t *testing.T) {
	plugin := shippedPlugin(t)
	repo := argoRepo(t)
	app := filepath.Join(repo, "apps", "web")
	secret := filepath.Join(t.TempDir(), "tenant-b-token")
	home := t.TempDir()
	if err := os.WriteFile(secret, []byte("tenant-b-token-4711"), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// A unix socket path has at most 107 bytes: keep it short.
	sockDir, err := os.MkdirTemp("", "cmp-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	sock := filepath.Join(sockDir, "helm-inject.sock")
	unixLn, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer unixLn.Close()
	accepted := make(chan struct{}, 8)
	for _, l := range []net.Listener{ln, unixLn} {
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close()
				accepted <- struct{}{}
			}
		}()
	}
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGUSR1)
	defer signal.Stop(signals)

	written := filepath.Join(home, ".escaped")
	generate := func(sidecar string, appEnv map[string]string, request ...string) result {
		env := argoEnv(t, "web", "apps/web", []argoParam{{Name: "inject", Array: []string{"escape-probe FILE"}}}, appEnv)
		env = append(env, "HOME="+home, "PROBE_UNIX="+sock,
			"PROBE_READ="+secret, "PROBE_DIAL="+ln.Addr().String(), "PROBE_WRITE="+written, "PROBE_SIGNAL="+strconv.Itoa(os.Getpid()))
		env = append(env, request...)
		return runPluginCommand(t, plugin.Spec.Generate.Command, app, env, "--allowed-commands=escape-probe", "--confine="+sidecar)
	}
	for _, tc := range []struct {
		name    string
		sidecar string
		app     map[string]string
		request []string
	}{
		{"required", "required", nil, nil},
		{"best-effort, an Application asking for off", "best-effort", map[string]string{"HELM_INJECT_CONFINE": "off"}, nil},
		// What anyone reaching the cmp-server's socket can send: the
		// cmp-server puts a request's variables after its own.
		{"best-effort, a request asking for off", "best-effort", nil, []string{"HELM_INJECT_CONFINE=off", "HELM_INJECT_ALLOWED_COMMANDS=escape-probe,sh"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := generate(tc.sidecar, tc.app, tc.request...)
			if r.code != 0 {
				t.Fatalf("generate failed:\n%s", r)
			}
			if strings.Contains(r.stdout, "tenant-b-token-4711") {
				t.Error("the injector read a file outside the repository into the output")
			}
			for _, want := range []string{
				"escape-probe/read: 'open " + secret + ": permission denied'",
				"escape-probe/dial: 'dial tcp " + ln.Addr().String() + ": socket: permission denied'",
				"escape-probe/unix: 'dial unix " + sock + ": socket: permission denied'",
				"escape-probe/write: 'open " + written + ": permission denied'",
				"escape-probe/signal: operation not permitted",
			} {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("the output does not say %q", want)
				}
			}
			if _, err := os.Stat(written); !os.IsNotExist(err) {
				t.Errorf("the injector wrote into the home folder (%v)", err)
			}
			if n := len(accepted); n != 0 {
				t.Errorf("the listener accepted %d connections", n)
			}
			select {
			case <-signals:
				t.Error("the injector signalled the test")
			case <-time.After(300 * time.Millisecond):
			}
			if t.Failed() {
				t.Logf("generate:\n%s", r)
			}
		})
	}

	t.Run("off", func(t *testing.T) {
		r := generate("off", nil)
		if r.code != 0 {
			t.Fatalf("generate failed:\n%s", r)
		}
		for _, what := range []string{"read", "dial", "unix", "write", "signal"} {
			if !strings.Contains(r.stdout, "escape-probe/"+what+": ok") {
				t.Errorf("off: the %s attempt did not succeed", what)
			}
		}
		if !strings.Contains(r.stdout, "tenant-b-token-4711") {
			t.Error("off: the file outside was not read")
		}
		if b, err := os.ReadFile(written); err != nil || string(b) != "escaped\n" {
			t.Errorf("off: the home folder holds %q, %v", b, err)
		}
		select {
		case <-accepted:
		case <-time.After(5 * time.Second):
			t.Error("off: the listener saw no connection")
		}
		select {
		case <-signals:
		case <-time.After(5 * time.Second):
			t.Error("off: no signal arrived")
		}
	})
}

// TestArgoCDConfinedIstioctl: the real istioctl, as an operator's named
// injector with its mesh config files in a folder the operator names in
// --confine-read, injects under --confine=required;
// without that folder in the allowed set, it cannot read them and
// generate fails, printing nothing.
func TestArgoCDConfinedIstioctl(t *testing.T) {
	istioctl, err := testenv.Tool(cluster.ToolsBin, "istioctl")
	if err != nil {
		t.Fatal(err)
	}
	plugin := shippedPlugin(t)
	repo := argoRepo(t)
	meshDir := filepath.Join(t.TempDir(), "etc-istio")
	if err := os.Mkdir(meshDir, 0o755); err != nil {
		t.Fatal(err)
	}
	istioInjectConfig(t, meshDir)
	operator := filepath.Join(t.TempDir(), "injectors.yaml")
	testfs.Write(t, filepath.Dir(operator), map[string]string{"injectors.yaml": `injectors:
  - name: istio
    command: [istioctl, kube-inject, -f, FILE, --injectConfigFile, ` + meshDir + `/inject-config.yaml, --meshConfigFile, ` + meshDir + `/mesh.yaml, --valuesFile, ` + meshDir + `/values.json, --revision, default]
`})
	generate := func(confineRead string) result {
		env := argoEnv(t, "web", "apps/web", []argoParam{{Name: "operator-injector", Array: []string{"istio"}}}, nil)
		env = append(env, "PATH="+binDir+string(os.PathListSeparator)+filepath.Dir(istioctl)+string(os.PathListSeparator)+os.Getenv("PATH"))
		policy := []string{"--allowed-commands=", "--operator-injectors=" + operator}
		if confineRead != "" {
			policy = append(policy, "--confine-read="+confineRead)
		}
		return runPluginCommand(t, plugin.Spec.Generate.Command, filepath.Join(repo, "apps", "web"), env, policy...)
	}
	r := generate(meshDir)
	if r.code != 0 {
		t.Fatalf("generate with istioctl, confined, failed:\n%s", r)
	}
	d := workloads(t, r.stdout)["Deployment/web-web"]
	if !contains(d.containers, "istio-proxy") && !contains(d.initContainers, "istio-proxy") {
		t.Errorf("Deployment: containers %v, init containers %v: no istio-proxy", d.containers, d.initContainers)
	}

	r = generate("")
	if r.code == 0 || r.stdout != "" || !strings.Contains(r.stderr, "permission denied") {
		t.Errorf("istioctl without its mesh config folder in the allowed set: want a failure saying permission denied and nothing on stdout:\n%s", r)
	}
}
