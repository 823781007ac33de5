package release

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"helm.sh/helm/v4/pkg/cli"
	"helm.sh/helm/v4/pkg/kube"
)

// TestExplainClusterError: an error of the cluster connection is told as
// what happened and what to do, keeping `release "NAME": `; others, and
// requests to other hosts (a chart download), are left as they are.
func TestExplainClusterError(t *testing.T) {
	forbidden := func(msg string) error {
		return fmt.Errorf(`release "web": install: %w`, &apierrors.StatusError{ErrStatus: metav1.Status{Reason: metav1.StatusReasonForbidden, Message: msg}})
	}
	refused := func(u string) error {
		return fmt.Errorf(`release "web": %w`, &url.Error{Op: "Get", URL: u, Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}})
	}
	other := errors.New(`release "web": something else`)
	apiserver := "https://127.0.0.1:6443"
	tests := []struct {
		name   string
		err    error
		server string
		want   string
	}{
		{"namespaced RBAC", forbidden(`secrets is forbidden: User "ci" cannot create resource "secrets" in API group "" in the namespace "shop"`), apiserver,
			`release "web": forbidden: user "ci" may not create secrets in namespace "shop" (the cluster's RBAC refused it); helm-inject acts with your rights, as helm does, and keeps each release in Secrets of its namespace: ask for a Role that grants create on secrets in namespace "shop"`},
		{"cluster-scoped RBAC of a group", forbidden(`User "ci" cannot list resource "deployments" in API group "apps" at the cluster scope`), apiserver,
			`release "web": forbidden: user "ci" may not list deployments.apps at cluster scope (the cluster's RBAC refused it)`},
		{"another refusal", forbidden("admission webhook said no"), apiserver, `release "web": forbidden by the cluster: admission webhook said no`},
		{"the cluster does not answer", refused(apiserver + "/version"), apiserver,
			`release "web": Kubernetes cluster unreachable at https://127.0.0.1:6443 (--kube-apiserver): connection refused; check that the cluster is running`},
		{"a bare host:port server", refused("https://127.0.0.1:6443/api"), "127.0.0.1:6443",
			`release "web": Kubernetes cluster unreachable at 127.0.0.1:6443 (--kube-apiserver): connection refused`},
		{"a bare name:port server", refused("https://localhost:6443/api"), "localhost:6443",
			`release "web": Kubernetes cluster unreachable at localhost:6443 (--kube-apiserver): connection refused`},
		{"another host (a chart repository)", refused("https://charts.example/index.yaml"), apiserver, `release "web": Get "https://charts.example/index.yaml": connect: connection refused`},
		{"not a connection error", other, apiserver, `release "web": something else`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := cli.New()
			s.KubeAPIServer = tt.server
			got := ExplainClusterError(tt.err, s)
			if got == nil || !strings.HasPrefix(got.Error(), tt.want) {
				t.Errorf("got  %v\nwant %s...", got, tt.want)
			}
		})
	}
	if ExplainClusterError(nil, cli.New()) != nil {
		t.Error("nil became an error")
	}
}

// TestCheckKubeconfig: a connection that cannot work is refused before
// any request, naming the file, the variable or the context to fix.
func TestCheckKubeconfig(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "config")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {}}]
contexts: [{name: b, context: {cluster: c, user: u}}, {name: a, context: {cluster: c, user: u}}]
current-context: gone
`), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")
	tests := []struct {
		name                           string
		apiserver, file, ctx, envValue string
		want                           string
	}{
		{name: "--kube-apiserver needs no kubeconfig", apiserver: "https://127.0.0.1:6443", file: missing},
		{name: "--kubeconfig names no file", file: missing, want: "no kubeconfig: --kubeconfig names " + missing + ", which does not exist"},
		{name: "$KUBECONFIG names no file", envValue: missing, want: `no kubeconfig: $KUBECONFIG is "` + missing + `" and no file it names exists; set KUBECONFIG or pass --kubeconfig`},
		{name: "an unknown --kube-context", file: kubeconfig, ctx: "nope", want: `kube context "nope" (--kube-context) is not in the kubeconfig ` + kubeconfig + `, which has the contexts a, b; pass one of them with --kube-context`},
		{name: "an unknown current-context", file: kubeconfig, want: `kube context "gone" (its current-context) is not in the kubeconfig`},
		{name: "a known context", file: kubeconfig, ctx: "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", tt.envValue)
			t.Setenv("HOME", dir)
			t.Setenv("KUBERNETES_SERVICE_HOST", "")
			s := cli.New()
			s.KubeAPIServer, s.KubeConfig, s.KubeContext = tt.apiserver, tt.file, tt.ctx
			err := checkKubeconfig(s)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("error %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error %v\nwant %s", err, tt.want)
			}
		})
	}

	// An unreachable cluster says which kubeconfig and context led there.
	s := cli.New()
	s.KubeConfig, s.KubeContext = kubeconfig, "a"
	err := ExplainClusterError(&url.Error{Op: "Get", URL: "https://127.0.0.1:1/version", Err: errors.New("i/o timeout")}, s)
	want := `Kubernetes cluster unreachable at https://127.0.0.1:1 (kubeconfig ` + kubeconfig + `, context "a"): i/o timeout`
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("got  %v\nwant %s", err, want)
	}
}

// TestNewConfiguration: the connection is checked first, the storage
// driver is HELM_DRIVER's as in helm, no log handler is needed, and the
// field manager is helm's.
func TestNewConfiguration(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "config")
	writeKubeconfig(t, kubeconfig, "https://127.0.0.1:1")
	t.Setenv("HELM_DRIVER", "memory")
	s := cli.New()
	s.KubeConfig = kubeconfig
	cfg, err := NewConfiguration(s, "shop", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Releases.Name(); got != "Memory" {
		t.Errorf("storage driver %q, want Memory (HELM_DRIVER=memory)", got)
	}
	cfg.Logger().Debug("a debug line with no log handler", "n", 1)
	// A handler given receives Helm's log.
	var logged bytes.Buffer
	cfg, err = NewConfiguration(s, "shop", slog.NewTextHandler(&logged, nil))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logger().Info("from helm")
	if !strings.Contains(logged.String(), "from helm") {
		t.Errorf("Helm's log did not reach the handler given: %q", logged.String())
	}
	// helm 4's CLI is the field manager "helm"; so is every apply.
	if kube.ManagedFieldsManager != "helm" {
		t.Errorf("the SDK's field manager is %q, want helm", kube.ManagedFieldsManager)
	}
	s.KubeConfig = filepath.Join(dir, "missing")
	if _, err := NewConfiguration(s, "shop", nil); err == nil || !strings.Contains(err.Error(), "which does not exist") {
		t.Errorf("a missing --kubeconfig: %v", err)
	}
}

// TestNewConfigurationSharesOneClusterView: the configuration and the kube
// client Helm builds in it read the kubeconfig once: a kubeconfig changed
// on disk afterwards is not read again by the client of an object (the
// client helm's settings would give loads it anew for each).
func TestNewConfigurationSharesOneClusterView(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "config")
	writeKubeconfig(t, kubeconfig, "https://127.0.0.1:1")
	t.Setenv("HELM_DRIVER", "memory")
	s := cli.New()
	s.KubeConfig = kubeconfig
	cfg, err := NewConfiguration(s, "shop", nil)
	if err != nil {
		t.Fatal(err)
	}
	if rc, err := cfg.RESTClientGetter.ToRESTConfig(); err != nil || rc.Host != "https://127.0.0.1:1" {
		t.Fatalf("the configuration's REST config: %v, %v", rc, err)
	}
	writeKubeconfig(t, kubeconfig, "https://127.0.0.1:2")
	kc, ok := cfg.KubeClient.(*kube.Client)
	if !ok {
		t.Fatalf("KubeClient is %T", cfg.KubeClient)
	}
	rc, err := kc.Factory.ToRESTConfig()
	if err != nil || rc.Host != "https://127.0.0.1:1" {
		t.Errorf("the kube client's REST config after the kubeconfig changed: %v, %v; want the one loaded first (https://127.0.0.1:1)", rc, err)
	}
}

// writeKubeconfig writes a kubeconfig of one cluster at server, with one
// context "a" that is current.
func writeKubeconfig(t *testing.T, path, server string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \""+server+"\"}}]\ncontexts: [{name: a, context: {cluster: c}}]\ncurrent-context: a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}
