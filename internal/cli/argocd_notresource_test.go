package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestArgoCDGenerateRefusesNotResources: an application whose chart
// renders a document that is no Kubernetes object (values printed as
// YAML, as helm's issue-9027 chart does) is refused, with helm install's
// words and the template named, and nothing on stdout: Argo CD would fail
// on it naming no template.
func TestArgoCDGenerateRefusesNotResources(t *testing.T) {
	appDir, env := argoApp(t)
	if err := os.WriteFile(filepath.Join(appDir, "templates", "values.yaml"), []byte("{{ .Values | toYaml }}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code, _ := argoGenerate(t, appDir, env)
	const want = `application web: release "web": webapp/templates/values.yaml: unable to build kubernetes objects from release manifest: error validating data: [apiVersion not set, kind not set]`
	if code == 0 || stdout != "" || !strings.Contains(stderr, want) {
		t.Errorf("generate: exit %d, %d bytes on stdout, stderr %q; want exit 1, nothing on stdout and %q", code, len(stdout), stderr, want)
	}
}
