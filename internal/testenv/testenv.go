// Package testenv starts a real, local Kubernetes control plane for
// integration tests and the demo: etcd and kube-apiserver (through
// controller-runtime's envtest), and optionally kube-controller-manager,
// kube-scheduler and kwok, so Deployments get pods and pods reach Running or
// Succeeded without a kubelet.
//
// The binaries are built by hack/tools.sh into the tool cache (ToolsBinDir); nothing is
// downloaded at test time. A missing binary is an error, never a skip.
package testenv

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/helm-inject/helm-inject/internal/reporoot"
)

//go:embed kwok-stages.yaml
var kwokStages []byte

// ToolsBinEnv names the environment variable that overrides where the
// tool binaries are looked up (default: ToolsDirEnv's bin folder).
const ToolsBinEnv = "HELM_INJECT_TOOLS_BIN"

// ToolsDirEnv names the environment variable that moves the whole tool
// cache (hack/tools.sh reads it too). Its default is helm-inject/tools in
// the user's cache folder ($XDG_CACHE_HOME, else ~/.cache), shared by every
// checkout on the machine, so a second clone builds nothing.
const ToolsDirEnv = "HELM_INJECT_TOOLS_DIR"

// FakeNodeName is the kwok-managed node that pods are scheduled to.
const FakeNodeName = "kwok-node-0"

// Options configures Start.
type Options struct {
	// ToolsBin is the folder holding etcd, kube-apiserver, helm, ...
	// Empty means ToolsBinDir().
	ToolsBin string
	// SimulatePods also starts kube-controller-manager, kube-scheduler and
	// kwok with one fake node, so workloads get running pods and test pods
	// succeed.
	SimulatePods bool
	// Dir receives the kubeconfig and component logs. Empty means a new
	// temporary folder that Stop removes.
	Dir string
}

// Env is a running control plane.
type Env struct {
	// Kubeconfig is the path of a kubeconfig file for an admin user.
	Kubeconfig string
	// Config is the admin REST config.
	Config *rest.Config
	// Dir holds the kubeconfig and the logs of the components started here.
	Dir string
	// ToolsBin is the folder the binaries were taken from.
	ToolsBin string

	removeDir bool
	envtest   *envtest.Environment
	procs     []*process
}

type process struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
}

// ToolsBinDir returns the folder holding the binaries built by
// hack/tools.sh: $HELM_INJECT_TOOLS_BIN, else $HELM_INJECT_TOOLS_DIR/bin,
// else helm-inject/tools/bin in the user's cache folder (the same rule as
// hack/tools.sh).
func ToolsBinDir() (string, error) {
	if dir := os.Getenv(ToolsBinEnv); dir != "" {
		return filepath.Abs(dir)
	}
	if dir := os.Getenv(ToolsDirEnv); dir != "" {
		return filepath.Abs(filepath.Join(dir, "bin"))
	}
	// os.UserCacheDir is $XDG_CACHE_HOME or ~/.cache on Linux, as in
	// hack/tools.sh.
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("testenv: no cache folder for the tools (set %s): %w", ToolsDirEnv, err)
	}
	return filepath.Join(cache, "helm-inject", "tools", "bin"), nil
}

// RepoRoot returns the folder of the nearest go.mod above the working
// directory.
func RepoRoot() (string, error) { return reporoot.Find() }

// Tool returns the path of a binary built by hack/tools.sh, or an error that
// says how to build it.
func Tool(bin, name string) (string, error) {
	p := filepath.Join(bin, name)
	if fi, err := os.Stat(p); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		return "", fmt.Errorf("testenv: %s not found in %s: run hack/tools.sh (or make tools) first", name, bin)
	}
	return p, nil
}

// Start brings up the control plane and waits until it serves requests (and,
// with SimulatePods, until the fake node is Ready).
func Start(ctx context.Context, opts Options) (_ *Env, err error) {
	bin := opts.ToolsBin
	if bin == "" {
		if bin, err = ToolsBinDir(); err != nil {
			return nil, err
		}
	}
	required := []string{"etcd", "kube-apiserver"}
	if opts.SimulatePods {
		required = append(required, "kube-controller-manager", "kube-scheduler", "kwok")
	}
	for _, name := range required {
		if _, err := Tool(bin, name); err != nil {
			return nil, err
		}
	}

	e := &Env{Dir: opts.Dir, ToolsBin: bin}
	if e.Dir == "" {
		if e.Dir, err = os.MkdirTemp("", "helm-inject-testenv-"); err != nil {
			return nil, err
		}
		e.removeDir = true
	} else if err := os.MkdirAll(e.Dir, 0o700); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = e.Stop()
		}
	}()

	e.envtest = &envtest.Environment{
		BinaryAssetsDirectory:    bin,
		ControlPlaneStartTimeout: 60 * time.Second,
		ControlPlaneStopTimeout:  20 * time.Second,
	}
	api := e.envtest.ControlPlane.GetAPIServer()
	// Without it kube-apiserver exits: its endpoint reconciler refuses to
	// publish a loopback address for the kubernetes Service.
	api.Configure().Set("endpoint-reconciler-type", "none")
	// envtest disables the ServiceAccount admission plugin because it runs
	// no controllers. This environment does (with SimulatePods), and pods
	// must look as they do on a real cluster: with a service account and its
	// projected token volume (istio's injected volumes depend on it).
	if opts.SimulatePods {
		api.Configure().Disable("disable-admission-plugins")
	}
	if api.Out, err = logFile(e.Dir, "kube-apiserver"); err != nil {
		return nil, err
	}
	api.Err = api.Out
	if e.Config, err = e.envtest.Start(); err != nil {
		return nil, fmt.Errorf("testenv: starting etcd and kube-apiserver: %w (logs in %s)", err, e.Dir)
	}

	admin, err := e.envtest.AddUser(envtest.User{Name: "helm-inject-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, fmt.Errorf("testenv: creating admin user: %w", err)
	}
	e.Config = admin.Config()
	kubeconfig, err := admin.KubeConfig()
	if err != nil {
		return nil, fmt.Errorf("testenv: writing kubeconfig: %w", err)
	}
	e.Kubeconfig = filepath.Join(e.Dir, "kubeconfig")
	if err := os.WriteFile(e.Kubeconfig, kubeconfig, 0o600); err != nil {
		return nil, err
	}
	if err := e.watchEnvtest(); err != nil {
		return nil, err
	}

	if opts.SimulatePods {
		if err := e.startSimulation(ctx); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// AddUser creates a user of the API server with a client certificate and
// writes a kubeconfig for it into dir: a user with only the rights RBAC
// gives its name and groups (none, unless a test binds some).
func (e *Env) AddUser(name, dir string, groups ...string) (kubeconfig string, err error) {
	u, err := e.envtest.AddUser(envtest.User{Name: name, Groups: groups}, nil)
	if err != nil {
		return "", fmt.Errorf("testenv: creating user %s: %w", name, err)
	}
	b, err := u.KubeConfig()
	if err != nil {
		return "", fmt.Errorf("testenv: kubeconfig of user %s: %w", name, err)
	}
	kubeconfig = filepath.Join(dir, name+".kubeconfig")
	return kubeconfig, os.WriteFile(kubeconfig, b, 0o600)
}

func (e *Env) startSimulation(ctx context.Context) error {
	stages := filepath.Join(e.Dir, "kwok-stages.yaml")
	if err := os.WriteFile(stages, kwokStages, 0o600); err != nil {
		return err
	}
	kc := "--kubeconfig=" + e.Kubeconfig
	components := []struct {
		name string
		args []string
	}{
		{"kube-controller-manager", []string{kc, "--leader-elect=false", "--secure-port=0",
			// No node-lifecycle controller: kwok's node never sends kubelet
			// heartbeats, and the node must not be marked NotReady and
			// tainted half way through a test run.
			"--controllers=*,-serviceaccount-token,-node-lifecycle-controller", "--concurrent-deployment-syncs=10",
			"--concurrent-replicaset-syncs=10", "--concurrent-namespace-syncs=10"}},
		{"kube-scheduler", []string{kc, "--leader-elect=false", "--secure-port=0"}},
		{"kwok", []string{kc, "--config=" + stages, "--manage-all-nodes=false",
			"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
			"--cidr=10.0.1.0/24", "--node-ip=10.0.1.1", "--server-address="}},
	}
	for _, c := range components {
		if err := e.startProcess(c.name, c.args); err != nil {
			return err
		}
	}
	return e.createFakeNode(ctx)
}

// startProcess runs a component in the background; its output goes to
// Dir/NAME.log. Pdeathsig kills it if the test process dies without Stop.
func (e *Env) startProcess(name string, args []string) error {
	path, err := Tool(e.ToolsBin, name)
	if err != nil {
		return err
	}
	out, err := logFile(e.Dir, name)
	if err != nil {
		return err
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("testenv: starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); _ = out.Close(); close(p.done) }()
	e.procs = append(e.procs, p)
	return nil
}

func (e *Env) createFakeNode(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		return err
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("500"),
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        FakeNodeName,
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
			Labels: map[string]string{"kubernetes.io/hostname": FakeNodeName, "kubernetes.io/os": "linux",
				"kubernetes.io/arch": "amd64", "type": "kwok"},
		},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
	if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("testenv: creating fake node: %w", err)
	}
	// kwok marks the node Ready; until then the scheduler would not use it.
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, p := range e.procs {
			select {
			case <-p.done:
				return false, fmt.Errorf("%s exited early; the end of its log:\n%s", p.name, e.Logs(p.name, 15))
			default:
			}
		}
		n, err := cs.CoreV1().Nodes().Get(ctx, FakeNodeName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("testenv: waiting for kwok to mark node %s Ready: %w", FakeNodeName, err)
	}
	// The API server taints every new node not-ready; the node-lifecycle
	// controller, which would lift it, is off (see startSimulation).
	n, err := cs.CoreV1().Nodes().Get(ctx, FakeNodeName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	n.Spec.Taints = nil
	if _, err := cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("testenv: removing the not-ready taint of %s: %w", FakeNodeName, err)
	}
	return nil
}

// Stop stops every component (SIGTERM, then SIGKILL after 10s) and removes
// the temporary folder if Start created it. It is safe to call twice.
func (e *Env) Stop() error {
	var errs []error
	for i := len(e.procs) - 1; i >= 0; i-- {
		p := e.procs[i]
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
	e.procs = nil
	if e.envtest != nil {
		if err := e.envtest.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("testenv: stopping control plane: %w", err))
		}
		e.envtest = nil
	}
	if e.removeDir && e.Dir != "" {
		if err := os.RemoveAll(e.Dir); err != nil {
			errs = append(errs, err)
		}
		e.Dir = ""
	}
	return errors.Join(errs...)
}

// Environ returns the environment variables that point helm, kubectl and
// helm-inject at this control plane, with HOME-like Helm folders isolated
// under Dir so tests never read or write the user's Helm configuration.
func (e *Env) Environ() []string {
	helmHome := filepath.Join(e.Dir, "helm")
	return []string{
		"KUBECONFIG=" + e.Kubeconfig,
		"HELM_CACHE_HOME=" + filepath.Join(helmHome, "cache"),
		"HELM_CONFIG_HOME=" + filepath.Join(helmHome, "config"),
		"HELM_DATA_HOME=" + filepath.Join(helmHome, "data"),
	}
}

func logFile(dir, name string) (*os.File, error) {
	return os.OpenFile(filepath.Join(dir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
}

// Logs returns the last lines of a component's log, for test failure output.
func (e *Env) Logs(name string, lines int) string {
	b, err := os.ReadFile(filepath.Join(e.Dir, name+".log"))
	if err != nil {
		return err.Error()
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}
