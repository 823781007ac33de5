package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/helm-inject/helm-inject/internal/testenv"
	"github.com/helm-inject/helm-inject/manifest"
)

// istioInjectConfig renders the istio-discovery chart that istioctl ships
// (copied by hack/tools.sh) and writes the three files `istioctl
// kube-inject` needs to inject without a cluster into dir.
func istioInjectConfig(t *testing.T, dir string) {
	t.Helper()
	chart := filepath.Join(filepath.Dir(cluster.ToolsBin), "share", "istio-discovery")
	out := mustHelm(t, "template", "istiod", chart, "-n", "istio-system").stdout
	files := map[string]string{}
	for _, doc := range manifest.Split(out) {
		var cm struct {
			Kind     string
			Metadata struct{ Name string }
			Data     map[string]string
		}
		if err := yaml.Unmarshal([]byte(doc), &cm); err != nil || cm.Kind != "ConfigMap" {
			continue
		}
		switch cm.Metadata.Name {
		case "istio-sidecar-injector":
			files["inject-config.yaml"] = cm.Data["config"]
			files["values.json"] = cm.Data["values"]
		case "istio":
			files["mesh.yaml"] = cm.Data["mesh"]
		}
	}
	for _, name := range []string{"inject-config.yaml", "values.json", "mesh.yaml"} {
		if files[name] == "" {
			t.Fatalf("the istio-discovery chart rendered no data for %s", name)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(files[name]), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestIstioctlSeedInjector uses the seed's injector string with the real
// istioctl: relative config paths resolve against --injector-dir, and every
// workload, hook and test pod gets istio-proxy.
func TestIstioctlSeedInjector(t *testing.T) {
	istioctl, err := testenv.Tool(cluster.ToolsBin, "istioctl")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	istioInjectConfig(t, dir)
	ns := namespace(t)
	spec := "istioctl kube-inject f=FILE,injectConfigFile=inject-config.yaml,meshConfigFile=mesh.yaml,valuesFile=values.json,revision=default"
	env := []string{"PATH=" + binDir + string(os.PathListSeparator) + filepath.Dir(istioctl) + string(os.PathListSeparator) + os.Getenv("PATH")}
	command{env: env}.mustRun(t, filepath.Join(binDir, "helm-inject"),
		"apply", "mesh", webappChart, "-n", ns, "--injector", spec, "--injector-dir", dir)

	manifests, hooks := webappWorkloads("mesh")
	got := workloads(t, mustHelm(t, "get", "manifest", "mesh", "-n", ns).stdout)
	gotHooks := workloads(t, mustHelm(t, "get", "hooks", "mesh", "-n", ns).stdout)
	for name, w := range got {
		gotHooks[name] = w
	}
	for _, name := range append(manifests, hooks...) {
		w, ok := gotHooks[name]
		if !ok {
			t.Errorf("release has no %s", name)
			continue
		}
		// istio injects istio-proxy as a container, or as a native sidecar
		// (an init container with restartPolicy Always) in newer versions.
		if !contains(w.containers, "istio-proxy") && !contains(w.initContainers, "istio-proxy") {
			t.Errorf("%s: containers %v, init containers %v: no istio-proxy", name, w.containers, w.initContainers)
		}
		if !strings.Contains(w.annotations["sidecar.istio.io/status"], "istio-proxy") {
			t.Errorf("%s has no sidecar.istio.io/status annotation", name)
		}
	}
	if t.Failed() {
		t.Logf("release manifest:\n%s", mustHelm(t, "get", "manifest", "mesh", "-n", ns).stdout)
	}
}
