package cli

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/helm-inject/helm-inject/internal/testfs"
)

// TestArgoCDGenerateKustomizeFetchesNothing: argocd generate, run as
// Argo CD runs it (a process of its own in the application's folder) with
// the kernel's confinement off, refuses a kustomization that names a URL
// in a generator's configuration file or in the folder kustomize reads
// for "link/../sub": it exits non-zero, prints no manifest, names the
// application and the file on stderr, and the server the URL names sees
// no request.
func TestArgoCDGenerateKustomizeFetchesNothing(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		fmt.Fprint(w, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fetched\n")
	}))
	defer srv.Close()
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n"
	tests := []struct {
		name  string
		files map[string]string
		// links are symbolic links in the repository, to their targets.
		links map[string]string
		// stderr is what stderr names besides the application.
		stderr string
	}{
		{
			name: "a generator file with an http files entry",
			files: map[string]string{
				"apps/web/kustomization.yaml": "generators: [gen.yaml]\n",
				"apps/web/gen.yaml":           "apiVersion: builtin\nkind: ConfigMapGenerator\nmetadata:\n  name: g\nfiles: [k={{URL}}/x]\n",
			},
			stderr: `kustomization apps/web/kustomization.yaml: generators file apps/web/gen.yaml: ConfigMapGenerator files entry "{{URL}}/x" is remote`,
		},
		{
			name: "link/../sub with an http resource in the folder kustomize reads",
			files: map[string]string{
				"apps/web/kustomization.yaml":     "resources: [link/../sub]\n",
				"apps/web/sub/kustomization.yaml": "resources: [{{URL}}/cm.yaml]\n",
				"apps/other/cm.yaml":              cm,
				"apps/sub/kustomization.yaml":     "resources: [cm.yaml]\n",
				"apps/sub/cm.yaml":                cm,
			},
			links:  map[string]string{"apps/web/link": "../other"},
			stderr: `kustomization apps/web/sub/kustomization.yaml: resources entry "{{URL}}/cm.yaml" is remote`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requests.Store(0)
			repo := t.TempDir()
			files := map[string]string{}
			for name, content := range tt.files {
				files[name] = strings.ReplaceAll(content, "{{URL}}", srv.URL)
			}
			testfs.Write(t, repo, files)
			for link, target := range tt.links {
				if err := os.Symlink(target, filepath.Join(repo, filepath.FromSlash(link))); err != nil {
					t.Fatal(err)
				}
			}
			stdout, stderr, code := argocdGenerateIn(t, filepath.Join(repo, "apps", "web"))
			if code == 0 {
				t.Errorf("generate exited 0, want a failure")
			}
			if stdout != "" {
				t.Errorf("generate printed on stdout:\n%s", stdout)
			}
			for _, want := range []string{"application web", strings.ReplaceAll(tt.stderr, "{{URL}}", srv.URL)} {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr %q does not say %q", stderr, want)
				}
			}
			if strings.Contains(stderr, repo) {
				t.Errorf("stderr %q names the sidecar's folder %s", stderr, repo)
			}
			if n := requests.Load(); n != 0 {
				t.Errorf("the server saw %d requests", n)
			}
		})
	}
}

// argocdGenerateIn runs the test binary as helm-inject argocd generate in
// the application's folder appDir (apps/web of its repository), with the
// environment Argo CD gives the plugin and the kernel's confinement off,
// so that nothing but helm-inject's own construction stops a fetch.
func argocdGenerateIn(t *testing.T, appDir string) (stdout, stderr string, code int) {
	t.Helper()
	// The operator's --confine=off: the kernel is not what stops a fetch.
	r := runChild(t, "helm-inject", appDir, []string{"ARGOCD_APP_NAME=web", "ARGOCD_APP_NAMESPACE=shop", "ARGOCD_APP_SOURCE_PATH=apps/web", "KUBE_VERSION=1.31.4"},
		"argocd", "generate", "--confine=off")
	return r.stdout, r.stderr, r.code
}
