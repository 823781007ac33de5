package argocde2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/helm-inject/helm-inject/internal/testenv"
)

// helmInjectOut runs the helm-inject binary of this run in the checkout.
func helmInjectOut(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "helm-inject"), args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("helm-inject %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr)
	}
	return string(out)
}

// comparable is an object as a test compares it: without what Argo CD
// adds to mark it as the application's.
func comparable(u *unstructured.Unstructured) map[string]any {
	c := u.DeepCopy()
	ann := c.GetAnnotations()
	delete(ann, "argocd.argoproj.io/tracking-id")
	if len(ann) == 0 {
		ann = nil
	}
	c.SetAnnotations(ann)
	return c.Object
}

func byKindAndName(objs []*unstructured.Unstructured) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, o := range objs {
		out[o.GetKind()+"/"+o.GetName()] = comparable(o)
	}
	return out
}

// TestArgoCDInstallsThePackagedChart: Argo CD's repo-server, with no
// plugin, generates from a Helm OCI source that is a chart helm-inject
// package pushed the objects helm-inject template prints for the same
// inputs; as another application (another release name) the chart's guard
// refuses.
func TestArgoCDInstallsThePackagedChart(t *testing.T) {
	addr := testenv.OCIRegistry(t)
	inputs := []string{"web", "fixtures/charts/webapp", "-n", "shop", "--inject", "sidecar-injector --name mesh-proxy FILE", "--set", "greeting=packaged"}
	out := helmInjectOut(t, append(append([]string{"package"}, inputs...), "-d", t.TempDir(), "--push", "oci://"+addr+"/charts", "--plain-http")...)
	_, archive, ok := strings.Cut(strings.TrimSpace(out), "saved it to: ")
	if !ok {
		t.Fatalf("package printed:\n%s", out)
	}
	archive, _, _ = strings.Cut(archive, "\n")
	version := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(archive), "webapp-"), ".tgz")
	if !strings.Contains(version, "+inject.") {
		t.Fatalf("version %q is not the default one", version)
	}

	// What helm-inject template prints, with the CRDs, as Argo CD asks
	// helm for them.
	var want []*unstructured.Unstructured
	for _, doc := range strings.Split(helmInjectOut(t, append(append([]string{"template"}, inputs...), "--include-crds")...), "\n---\n") {
		j, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		if string(j) == "null" {
			continue // a document of comments only
		}
		// As Argo CD decodes a manifest: numbers as int64.
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(j); err != nil {
			t.Fatal(err)
		}
		want = append(want, u)
	}

	s := repoServer(t, false)
	request := func(app string) ([]*unstructured.Unstructured, error) {
		repo := addr + "/charts"
		q := manifestRequest(repo, app, "", v1alpha1.ApplicationSource{Chart: "webapp"})
		q.ApplicationSource.TargetRevision, q.Revision = version, version
		q.Repo = &v1alpha1.Repository{Repo: repo, Type: "helm", EnableOCI: true, InsecureOCIForceHttp: true}
		res, err := s.GenerateManifest(t.Context(), q)
		if err != nil {
			return nil, err
		}
		if res.SourceType != string(v1alpha1.ApplicationSourceTypeHelm) {
			t.Errorf("source type %s, want Helm (no plugin)", res.SourceType)
		}
		return objects(t, res.Manifests), nil
	}
	got, err := request("web")
	if err != nil {
		t.Fatalf("GenerateManifest of the packaged chart: %v", err)
	}
	if diff := cmp.Diff(byKindAndName(want), byKindAndName(got)); diff != "" {
		t.Errorf("Argo CD generated other objects than helm-inject template (-template +argocd):\n%s", diff)
	}
	if names := containerNames(t, got, "web-web"); !slices.Contains(names, "mesh-proxy") {
		t.Errorf("containers %v: the injected sidecar is missing", names)
	}

	_, err = request("other")
	if err == nil || !strings.Contains(err.Error(), "rendered by helm-inject for release web in namespace shop") {
		t.Errorf("as application other: %v", err)
	}
}
