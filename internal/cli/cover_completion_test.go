package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/release/common"
)

// completeCLI runs cobra's __complete as a shell does and returns the
// suggestions, one a line, and the directive line (":4" is
// ShellCompDirectiveNoFileComp, ":0" the shell's own file completion,
// ":5" an error with no file completion).
func completeCLI(t *testing.T, args ...string) (suggestions []string, directive string) {
	t.Helper()
	out, errOut, code := runCLI(t, append([]string{"__complete"}, args...)...)
	if code != 0 {
		t.Fatalf("__complete %v: exit %d: %s%s", args, code, out, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	return lines[:len(lines)-1], lines[len(lines)-1]
}

// writeKubeconfig writes a kubeconfig with the given content and returns
// its path.
func writeKubeconfig(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCompleteReleaseNames: the release argument of apply, upgrade,
// status, diff and diff upgrade completes to the releases of the
// namespace -n names whose names start with what was typed, each with its
// chart and status, as helm completes them; a release of another
// namespace is not offered, and no file names are.
func TestCompleteReleaseNames(t *testing.T) {
	c := newFakeCluster(t)
	c.addRelease(shopRelease("shop", "prod"))
	failed := shopRelease("shipping", "prod")
	failed.Info.Status = common.StatusFailed
	c.addRelease(failed)
	c.addRelease(shopRelease("web", "prod"))
	c.addRelease(shopRelease("stage-only", "stage"))
	kubeconfig := c.kubeconfig()

	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"apply", "-n", "prod", "--kubeconfig", kubeconfig, "sh"}, []string{"shipping\tapi-0.9.0 -> failed", "shop\tapi-0.9.0 -> deployed"}},
		{[]string{"upgrade", "-n", "prod", "--kubeconfig", kubeconfig, "w"}, []string{"web\tapi-0.9.0 -> deployed"}},
		{[]string{"status", "-n", "prod", "--kubeconfig", kubeconfig, ""}, []string{"shipping\tapi-0.9.0 -> failed", "shop\tapi-0.9.0 -> deployed", "web\tapi-0.9.0 -> deployed"}},
		{[]string{"diff", "upgrade", "-n", "prod", "--kubeconfig", kubeconfig, "shop"}, []string{"shop\tapi-0.9.0 -> deployed"}},
		{[]string{"status", "-n", "stage", "--kubeconfig", kubeconfig, ""}, []string{"stage-only\tapi-0.9.0 -> deployed"}},
		// Nothing starts with x: no suggestion, and still no files.
		{[]string{"apply", "-n", "prod", "--kubeconfig", kubeconfig, "x"}, nil},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			got, directive := completeCLI(t, tt.args...)
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") || directive != ":4" {
				t.Errorf("offered %q, directive %s; want %q and :4 (no file completion)", got, directive, tt.want)
			}
		})
	}
}

// TestCompleteAfterTheReleaseName: once the release is given, apply,
// upgrade and diff complete the CHART as a path (the shell's file
// completion), status completes nothing more, and the cluster is not
// asked.
func TestCompleteAfterTheReleaseName(t *testing.T) {
	c := newFakeCluster(t)
	c.addRelease(shopRelease("shop", "prod"))
	kubeconfig := c.kubeconfig()
	for _, tt := range []struct {
		args      []string
		directive string
	}{
		{[]string{"apply", "shop", ""}, ":0"},
		{[]string{"upgrade", "shop", "./"}, ":0"},
		{[]string{"diff", "shop", ""}, ":0"},
		{[]string{"diff", "upgrade", "shop", ""}, ":0"},
		{[]string{"status", "shop", ""}, ":4"},
	} {
		got, directive := completeCLI(t, append([]string{"-n", "prod", "--kubeconfig", kubeconfig}, tt.args...)...)
		if len(got) != 0 || directive != tt.directive {
			t.Errorf("%v: offered %q, directive %s; want nothing and %s", tt.args, got, directive, tt.directive)
		}
	}
	if c.requested("/api/v1/namespaces/prod/secrets") {
		t.Error("completing the CHART listed the releases")
	}
}

// TestCompleteReleasesWithoutACluster: when the releases cannot be
// listed (no kubeconfig, an API server that fails) completion offers
// nothing and says so (an error directive, no file names), rather than
// failing the shell.
func TestCompleteReleasesWithoutACluster(t *testing.T) {
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"etcd is down","code":500}`, http.StatusInternalServerError)
	}))
	t.Cleanup(broken.Close)
	t.Setenv("KUBECACHEDIR", t.TempDir())
	failing := writeKubeconfig(t, "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: \""+broken.URL+"\"}\ncontexts:\n- name: c\n  context: {cluster: c}\ncurrent-context: c\n")
	for _, kubeconfig := range []string{filepath.Join(t.TempDir(), "missing"), failing} {
		got, directive := completeCLI(t, "status", "--kubeconfig", kubeconfig, "")
		if len(got) != 0 || directive != ":5" {
			t.Errorf("--kubeconfig %s: offered %q, directive %s; want nothing and :5 (error, no files)", kubeconfig, got, directive)
		}
	}
}

// namespaceServer is an API server that answers only the namespace list,
// with names.
func namespaceServer(t *testing.T, names ...string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/namespaces" {
			http.NotFound(w, r)
			return
		}
		items := []map[string]any{}
		for _, n := range names {
			items = append(items, map[string]any{"metadata": map[string]any{"name": n}})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"kind": "NamespaceList", "apiVersion": "v1", "metadata": map[string]any{}, "items": items})
	}))
	t.Cleanup(srv.Close)
	return writeKubeconfig(t, "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: \""+srv.URL+"\"}\ncontexts:\n- name: c\n  context: {cluster: c}\ncurrent-context: c\n")
}

// TestCompleteNamespaces: -n/--namespace completes to the cluster's
// namespaces, on every command; a cluster that cannot list them gives no
// suggestion and an error directive.
func TestCompleteNamespaces(t *testing.T) {
	kubeconfig := namespaceServer(t, "default", "prod", "stage")
	for _, args := range [][]string{
		{"status", "--kubeconfig", kubeconfig, "-n", ""},
		{"apply", "--kubeconfig", kubeconfig, "--namespace", ""},
		{"list", "--kubeconfig", kubeconfig, "--namespace="},
	} {
		got, directive := completeCLI(t, args...)
		if strings.Join(got, " ") != "default prod stage" || directive != ":4" {
			t.Errorf("%v: offered %q, directive %s; want default prod stage and :4", args, got, directive)
		}
	}
	// The fake cluster has no namespaces resource: nothing offered.
	c := newFakeCluster(t)
	got, directive := completeCLI(t, "status", "--kubeconfig", c.kubeconfig(), "-n", "")
	if len(got) != 0 || directive != ":5" {
		t.Errorf("a cluster without a namespace list: offered %q, directive %s; want nothing and :5", got, directive)
	}
	got, directive = completeCLI(t, "status", "--kubeconfig", filepath.Join(t.TempDir(), "missing"), "-n", "")
	if len(got) != 0 || directive != ":5" {
		t.Errorf("no kubeconfig: offered %q, directive %s; want nothing and :5", got, directive)
	}
}

// TestCompleteContexts: --kube-context completes to the kubeconfig's
// contexts, sorted, each described by its cluster; a kubeconfig that does
// not parse gives no suggestion and an error directive.
func TestCompleteContexts(t *testing.T) {
	kubeconfig := writeKubeconfig(t, `apiVersion: v1
kind: Config
clusters:
- {name: east, cluster: {server: "https://east.example"}}
- {name: west, cluster: {server: "https://west.example"}}
contexts:
- {name: prod-west, context: {cluster: west}}
- {name: dev, context: {cluster: east}}
- {name: prod-east, context: {cluster: east}}
current-context: dev
`)
	got, directive := completeCLI(t, "status", "--kubeconfig", kubeconfig, "--kube-context", "")
	want := []string{"dev\tcluster east", "prod-east\tcluster east", "prod-west\tcluster west"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") || directive != ":4" {
		t.Errorf("offered %q, directive %s; want %q and :4", got, directive, want)
	}
	bad := writeKubeconfig(t, "clusters: [this is not\n")
	got, directive = completeCLI(t, "status", "--kubeconfig", bad, "--kube-context", "")
	if len(got) != 0 || directive != ":5" {
		t.Errorf("an unreadable kubeconfig: offered %q, directive %s; want nothing and :5", got, directive)
	}
}

// TestCompleteReleasesGivesUpOnASilentCluster: an API server that never
// answers costs the shell completionTimeout, then no suggestion and an
// error directive, not a hung shell.
func TestCompleteReleasesGivesUpOnASilentCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("waits completionTimeout")
	}
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	t.Setenv("KUBECACHEDIR", t.TempDir())
	kubeconfig := writeKubeconfig(t, "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: \""+srv.URL+"\"}\ncontexts:\n- name: c\n  context: {cluster: c}\ncurrent-context: c\n")
	start := time.Now()
	got, directive := completeCLI(t, "status", "--kubeconfig", kubeconfig, "")
	if took := time.Since(start); took > completionTimeout+5*time.Second {
		t.Errorf("completion took %s; it should give up after %s", took, completionTimeout)
	}
	if len(got) != 0 || directive != ":5" {
		t.Errorf("offered %q, directive %s; want nothing and :5 after %s", got, directive, completionTimeout)
	}
}
