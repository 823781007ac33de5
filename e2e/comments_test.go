package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/helm-inject/helm-inject/internal/testfs"
)

// TestCommentOnlyTemplates: a template switched off by a value but for a
// comment (a license header, a note) renders a document of comments only.
// helm template prints it and helm install stores it; helm-inject must do
// the same, and diff and status must read such releases, ours and Helm's.
func TestCommentOnlyTemplates(t *testing.T) {
	ns := namespace(t)
	chart := filepath.Join(t.TempDir(), "notes")
	testfs.Write(t, chart, map[string]string{
		"Chart.yaml":           "apiVersion: v2\nname: notes\nversion: 0.1.0\n",
		"values.yaml":          "cache: false\n",
		"templates/app.yaml":   "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  selector:\n    matchLabels: {app: notes}\n  template:\n    metadata:\n      labels: {app: notes}\n    spec:\n      containers:\n        - name: app\n          image: registry.example/app:1\n",
		"templates/cache.yaml": "# The cache is optional (values: cache).\n{{- if .Values.cache }}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cache\n{{- end }}\n",
	})
	inj := []string{"-n", ns, "--injector", "sidecar-injector f=FILE"}

	printed := mustHelmInject(t, append([]string{"template", "notes", chart}, inj...)...).stdout
	helmPrinted := mustHelm(t, "template", "notes", chart, "-n", ns).stdout
	const off = "---\n# Source: notes/templates/cache.yaml\n# The cache is optional (values: cache).\n"
	if !strings.Contains(printed, off) || !strings.Contains(helmPrinted, off) {
		t.Errorf("the comment-only document is not printed as helm template prints it\n--- helm-inject:\n%s\n--- helm:\n%s", printed, helmPrinted)
	}
	if !strings.Contains(printed, "name: sidecar") {
		t.Errorf("the deployment was not injected:\n%s", printed)
	}

	mustHelmInject(t, append([]string{"apply", "notes", chart}, inj...)...)
	if got := mustHelm(t, "get", "manifest", "notes", "-n", ns).stdout; !strings.Contains(got, "# The cache is optional") || !strings.Contains(got, "name: sidecar") {
		t.Errorf("helm get manifest:\n%s", got)
	}
	if r := helmInject(t, append([]string{"diff", "notes", chart, "--detailed-exitcode"}, inj...)...); r.code != 0 || r.stdout != "" {
		t.Errorf("diff with identical inputs:\n%s", r)
	}
	if r := helmInject(t, append([]string{"diff", "notes", chart, "--set", "cache=true"}, inj...)...); r.code != 0 || !strings.Contains(r.stdout, "notes-cache, ConfigMap (v1) has been added") {
		t.Errorf("diff turning the cache on:\n%s", r)
	}
	// status reads the release (comment-only document included) as helm
	// status does, and names the injector it recorded.
	var st struct {
		Revision  int
		Status    string
		Injectors []struct{ Name string }
	}
	if err := json.Unmarshal([]byte(mustHelmInject(t, "status", "notes", "-n", ns, "-o", "json").stdout), &st); err != nil {
		t.Fatal(err)
	}
	if v, s := releaseState(t, command{env: []string{"HELM_NAMESPACE=" + ns}}, "notes"); st.Revision != v || st.Status != s ||
		len(st.Injectors) != 1 || st.Injectors[0].Name != "sidecar-injector f=FILE" {
		t.Errorf("status = %+v, helm status says revision %d %s", st, v, s)
	}

	// A release installed by plain Helm, then taken over.
	mustHelm(t, "install", "plain", chart, "-n", ns)
	if r := helmInject(t, append([]string{"diff", "plain", chart}, inj...)...); r.code != 0 || !strings.Contains(r.stdout, "plain, Deployment (apps/v1) has changed") {
		t.Errorf("diff of a plain Helm release:\n%s", r)
	}
	mustHelmInject(t, append([]string{"apply", "plain", chart}, inj...)...)
	if revs := revisions(t, "plain", ns); len(revs) != 2 {
		t.Errorf("history of the taken-over release = %v, want [1 2]", revs)
	}
}
