package testenv

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// StopAPIServer stops kube-apiserver (SIGTERM, as a node shutdown or a
// crash-looping control plane would) and waits until its port is closed;
// etcd keeps running. It returns a function that starts kube-apiserver
// again with the same arguments, certificates and port, and waits until it
// serves requests. Tests use it to fail the API server during an apply.
func (e *Env) StopAPIServer() (restart func(context.Context) error, err error) {
	u, pid, argv, err := e.apiServerProcess()
	if err != nil {
		return nil, err
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return nil, fmt.Errorf("testenv: stopping kube-apiserver (pid %d): %w", pid, err)
	}
	err = wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		c, err := net.DialTimeout("tcp", u.Host, time.Second)
		if err != nil {
			return true, nil
		}
		_ = c.Close()
		return false, nil
	})
	if err != nil {
		return nil, fmt.Errorf("testenv: kube-apiserver still listens on %s after SIGTERM", u.Host)
	}
	return func(ctx context.Context) error {
		if err := e.startProcess("kube-apiserver", argv[1:]); err != nil {
			return err
		}
		cs, err := kubernetes.NewForConfig(e.Config)
		if err != nil {
			return err
		}
		return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
			return err == nil, nil
		})
	}, nil
}

// apiServerProcess finds the running kube-apiserver of this Env by its
// port, and returns its URL, pid and argv.
func (e *Env) apiServerProcess() (*url.URL, int, []string, error) {
	u, err := url.Parse(e.Config.Host)
	if err != nil {
		return nil, 0, nil, err
	}
	pid, argv, err := findProcess(filepath.Join(e.ToolsBin, "kube-apiserver"), "--secure-port="+u.Port())
	return u, pid, argv, err
}

// findProcess returns the pid and argv of the running process whose
// executable is exe and whose arguments include arg.
func findProcess(exe, arg string) (int, []string, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, nil, err
	}
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "cmdline"))
		if err != nil || len(raw) == 0 {
			continue
		}
		argv := strings0(raw)
		if argv[0] != exe {
			continue
		}
		for _, a := range argv[1:] {
			if a == arg {
				return pid, argv, nil
			}
		}
	}
	return 0, nil, fmt.Errorf("testenv: no running %s with %s", exe, arg)
}

// strings0 splits a NUL-separated /proc cmdline.
func strings0(raw []byte) []string {
	var out []string
	for _, f := range bytes.Split(bytes.TrimRight(raw, "\x00"), []byte{0}) {
		out = append(out, string(f))
	}
	return out
}

// watchEnvtest makes etcd and kube-apiserver, which envtest starts without
// a parent-death signal, end with this process even when it cannot run
// Stop (a `go test` timeout panics and exits at once): a small watchdog
// waits for this process to exit, then sends them SIGTERM. After a normal
// Stop they are gone already; in case a pid was reused meanwhile, the
// watchdog only signals a process whose command line still names envtest's
// k8s_test_framework folders.
func (e *Env) watchEnvtest() error {
	_, apiPid, _, err := e.apiServerProcess()
	if err != nil {
		return err
	}
	etcdURL := e.envtest.ControlPlane.Etcd.URL
	etcdPid, _, err := findProcess(filepath.Join(e.ToolsBin, "etcd"), "--listen-client-urls="+etcdURL.String())
	if err != nil {
		return err
	}
	script := `while kill -0 "$0" 2>/dev/null; do sleep 1; done
for p in "$@"; do
  grep -q k8s_test_framework "/proc/$p/cmdline" 2>/dev/null && kill "$p"
done`
	cmd := exec.Command("sh", "-c", script, strconv.Itoa(os.Getpid()), strconv.Itoa(apiPid), strconv.Itoa(etcdPid))
	// Its own process group, so a Ctrl-C to the tests does not end it first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("testenv: starting the watchdog: %w", err)
	}
	go func() { _ = cmd.Wait() }()
	return nil
}
