package cli

import (
	"bytes"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v4/pkg/cli"
)

// TestGlobalFlagsParse: helm's global flags land in helm's EnvSettings,
// which every command hands to the Helm SDK.
func TestGlobalFlagsParse(t *testing.T) {
	settings := cli.New()
	root := newRootCommandWith(settings, strings.NewReader(""), io.Discard, io.Discard)
	root.SetArgs([]string{"version", "--short",
		"--kubeconfig", "/k/config", "--kube-context", "ctx", "-n", "shop", "--debug",
		"--kube-apiserver", "https://api.example:6443", "--kube-token", "tok", "--kube-as-user", "alice", "--kube-as-group", "devs",
		"--kube-ca-file", "/k/ca.pem", "--kube-insecure-skip-tls-verify", "--kube-tls-server-name", "api.example",
		"--burst-limit", "7", "--qps", "3.5",
		"--registry-config", "/h/registry.json", "--repository-config", "/h/repositories.yaml", "--repository-cache", "/h/cache",
		"--content-cache", "/h/content", "--colour", "never"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	got := map[string]any{
		"kubeconfig": settings.KubeConfig, "kube-context": settings.KubeContext, "namespace": settings.Namespace(), "debug": settings.Debug,
		"kube-apiserver": settings.KubeAPIServer, "kube-token": settings.KubeToken, "kube-as-user": settings.KubeAsUser,
		"kube-as-group": settings.KubeAsGroups, "kube-ca-file": settings.KubeCaFile, "kube-insecure-skip-tls-verify": settings.KubeInsecureSkipTLSVerify,
		"kube-tls-server-name": settings.KubeTLSServerName, "burst-limit": settings.BurstLimit, "qps": settings.QPS,
		"registry-config": settings.RegistryConfig, "repository-config": settings.RepositoryConfig, "repository-cache": settings.RepositoryCache,
		"content-cache": settings.ContentCache, "colour": settings.ColorMode,
	}
	want := map[string]any{
		"kubeconfig": "/k/config", "kube-context": "ctx", "namespace": "shop", "debug": true,
		"kube-apiserver": "https://api.example:6443", "kube-token": "tok", "kube-as-user": "alice",
		"kube-as-group": []string{"devs"}, "kube-ca-file": "/k/ca.pem", "kube-insecure-skip-tls-verify": true,
		"kube-tls-server-name": "api.example", "burst-limit": 7, "qps": float32(3.5),
		"registry-config": "/h/registry.json", "repository-config": "/h/repositories.yaml", "repository-cache": "/h/cache",
		"content-cache": "/h/content", "colour": "never",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("settings (-want +got):\n%s", diff)
	}
}

// TestGlobalFlagsReachTheAPIServer: list talks to the API server the
// global flags name, with their credentials and identity: --kube-apiserver
// with --kube-token, --kube-as-user and --kube-as-group, trusting
// --kube-ca-file under --kube-tls-server-name (or skipping verification
// with --kube-insecure-skip-tls-verify); and --kubeconfig.
func TestGlobalFlagsReachTheAPIServer(t *testing.T) {
	var mu sync.Mutex
	var seen []http.Header
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"kind":"SecretList","apiVersion":"v1","metadata":{},"items":[]}`)
	}))
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	list := func(args ...string) (http.Header, string, int) {
		t.Helper()
		mu.Lock()
		seen = nil
		mu.Unlock()
		var out, errb bytes.Buffer
		code := Run(t.Context(), append([]string{"list"}, args...), strings.NewReader(""), &out, &errb)
		mu.Lock()
		defer mu.Unlock()
		if len(seen) == 0 {
			return nil, errb.String(), code
		}
		return seen[len(seen)-1], errb.String(), code
	}
	h, errOut, code := list("--kube-apiserver", srv.URL, "--kube-token", "tok-1", "--kube-as-user", "alice", "--kube-as-group", "devs",
		"--kube-ca-file", ca, "--kube-tls-server-name", "example.com", "--burst-limit", "50", "--qps", "20")
	if code != 0 || h.Get("Authorization") != "Bearer tok-1" || h.Get("Impersonate-User") != "alice" || h.Get("Impersonate-Group") != "devs" {
		t.Errorf("exit %d, headers %v: %s", code, h, errOut)
	}
	if _, errOut, code := list("--kube-apiserver", srv.URL, "--kube-token", "tok-1"); code == 0 || !strings.Contains(errOut, "certificate") {
		t.Errorf("without --kube-ca-file the server's certificate was trusted: exit %d: %s", code, errOut)
	}
	if h, errOut, code := list("--kube-apiserver", srv.URL, "--kube-token", "tok-2", "--kube-insecure-skip-tls-verify"); code != 0 || h.Get("Authorization") != "Bearer tok-2" {
		t.Errorf("--kube-insecure-skip-tls-verify: exit %d: %s", code, errOut)
	}
	kubeconfig := filepath.Join(t.TempDir(), "config")
	kc := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: " + srv.URL + "\n    insecure-skip-tls-verify: true\n" +
		"users:\n- name: u\n  user:\n    token: from-kubeconfig\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n"
	if err := os.WriteFile(kubeconfig, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	if h, errOut, code := list("--kubeconfig", kubeconfig); code != 0 || h.Get("Authorization") != "Bearer from-kubeconfig" {
		t.Errorf("--kubeconfig: exit %d, headers %v: %s", code, h, errOut)
	}
}
