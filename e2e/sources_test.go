package e2e

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// chartRepo packages the webapp fixture with the real helm CLI and serves it
// as a chart repository on a loopback port.
func chartRepo(t *testing.T) (url, tgz string) {
	t.Helper()
	dir := t.TempDir()
	mustHelm(t, "package", webappChart, "-d", dir)
	tgz = filepath.Join(dir, "webapp-1.4.2.tgz")
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)
	mustHelm(t, "repo", "index", dir, "--url", srv.URL)
	return srv.URL, tgz
}

// TestChartSources applies every kind of chart reference helm accepts, plus
// a kustomization and a folder of plain manifests, and checks that each
// became an injected release named after its chart.
func TestChartSources(t *testing.T) {
	ns := namespace(t)
	url, tgz := chartRepo(t)
	repoName := "fixtures-" + ns
	// The repositories file is in this run's private HELM_CONFIG_HOME, which
	// goes away with the control plane.
	mustHelm(t, "repo", "add", repoName, url)

	tests := []struct {
		release string
		args    []string
		chart   string
		pods    []string
	}{
		{"from-repo-flag", []string{"webapp", "--repo", url, "--version", "1.4.2"}, "webapp-1.4.2", []string{"Deployment/from-repo-flag-web"}},
		{"from-repo-name", []string{repoName + "/webapp"}, "webapp-1.4.2", []string{"Deployment/from-repo-name-web"}},
		{"from-tgz", []string{tgz}, "webapp-1.4.2", []string{"Deployment/from-tgz-web"}},
		{"from-kustomize", []string{"fixtures/kustomize/overlay"}, "overlay-0.0.0", []string{"Deployment/staging-api"}},
		{"from-manifests", []string{"fixtures/manifests/plain"}, "plain-0.0.0", []string{"Deployment/plain-app"}},
	}
	for _, tt := range tests {
		t.Run(tt.release, func(t *testing.T) {
			args := append([]string{"apply", tt.release}, tt.args...)
			mustHelmInject(t, append(args, "-n", ns, "--injector", "sidecar-injector f=FILE")...)
			list := mustHelm(t, "list", "-n", ns, "--filter", "^"+tt.release+"$").stdout
			if !strings.Contains(list, tt.chart) {
				t.Errorf("helm list does not show chart %s:\n%s", tt.chart, list)
			}
			got := workloads(t, mustHelm(t, "get", "manifest", tt.release, "-n", ns).stdout)
			for _, p := range tt.pods {
				if !contains(got[p].containers, "sidecar") {
					t.Errorf("%s has containers %v, want a sidecar", p, got[p].containers)
				}
			}
		})
	}

	// Template delimiters in plain manifests reach the cluster as written.
	if data := configMapData(t, ns, "plain-config"); data["motd"] != "Hello {{ .User }}" {
		t.Errorf("ConfigMap plain-config motd = %q", data["motd"])
	}
}

// TestKeptChartRendersBackWithHelm: the temporary chart that --keep-chart
// writes is an ordinary chart; the real `helm template` (helm 4, whose
// SDK helm-inject renders with) renders it to exactly what helm-inject
// printed.
func TestKeptChartRendersBackWithHelm(t *testing.T) {
	kept := filepath.Join(t.TempDir(), "webapp")
	printed := mustHelmInject(t, "template", "kept", webappChart, "-n", "prod", "--keep-chart", kept,
		"--injector", "sidecar-injector f=FILE", "-f", "fixtures/values/webapp-prod.yaml").stdout
	if _, err := os.Stat(filepath.Join(kept, "Chart.yaml")); err != nil {
		t.Fatal(err)
	}
	helm4 := helm4Bin(t)
	byHelm := command{}.mustRun(t, helm4, "template", "kept", kept, "-n", "prod", "-f", "fixtures/values/webapp-prod.yaml").stdout
	if byHelm != printed {
		t.Errorf("helm template of the kept chart differs from helm-inject template\n--- helm:\n%s\n--- helm-inject:\n%s", byHelm, printed)
	}
	if !strings.Contains(byHelm, "name: sidecar") || !strings.Contains(byHelm, `greeting: "welcome, {{ user }}"`) {
		t.Errorf("kept chart output lacks the sidecar or the literal braces")
	}

	// apply --keep-chart keeps the chart it installed: rendered by helm,
	// it gives the manifest the release holds.
	ns := namespace(t)
	applied := filepath.Join(t.TempDir(), "applied")
	mustHelmInject(t, "apply", "keptapply", apiChart, "-n", ns, "--keep-chart", applied, "--injector", "sidecar-injector f=FILE")
	stored := mustHelm(t, "get", "manifest", "keptapply", "-n", ns).stdout
	// helm template prints the test hook too; the manifest holds no hooks.
	rendered := command{}.mustRun(t, helm4, "template", "keptapply", applied, "-n", ns, "--skip-tests").stdout
	if strings.TrimSpace(rendered) != strings.TrimSpace(stored) || !strings.Contains(stored, "name: sidecar") {
		t.Errorf("helm template of the chart apply --keep-chart kept differs from the release's manifest\n--- kept:\n%s\n--- release:\n%s", rendered, stored)
	}
}
