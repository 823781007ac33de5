package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/helm-inject/helm-inject/internal/testfs"
)

// TestEmptyRenderAgainstTheCluster: a chart that renders no object
// installs as an empty release whose stored manifest is the one helm 4's
// install stores; an upgrade that would delete the release's objects is
// refused before any write (the object is still in the cluster, the
// release at its revision) unless --allow-empty is given, which deletes
// it as helm's upgrade would.
func TestEmptyRenderAgainstTheCluster(t *testing.T) {
	ns := namespace(t)
	chart := filepath.Join(t.TempDir(), "switched")
	testfs.Write(t, chart, map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: switched\nversion: 0.1.0\n",
		"values.yaml":       "enabled: false\n",
		"templates/cm.yaml": "# the switch\n{{- if .Values.enabled }}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: switched\n{{- end }}\n",
	})
	h4 := command{}

	// helm 4 installs it as an empty release; so does apply.
	h4.mustRun(t, helm4Bin(t), "install", "by-helm", chart, "-n", ns)
	want := h4.mustRun(t, helm4Bin(t), "get", "manifest", "by-helm", "-n", ns).stdout
	mustHelmInject(t, "apply", "empty", chart, "-n", ns)
	if got := h4.mustRun(t, helm4Bin(t), "get", "manifest", "empty", "-n", ns).stdout; got != want {
		t.Errorf("the empty release's manifest differs from helm 4 install's:\n%s", firstDifference(want, got))
	}
	if st := h4.mustRun(t, helm4Bin(t), "status", "empty", "-n", ns).stdout; !strings.Contains(st, "STATUS: deployed") {
		t.Errorf("helm status of the empty release:\n%s", st)
	}

	mustHelmInject(t, "apply", "empty", chart, "-n", ns, "--set", "enabled=true")
	for _, verb := range [][]string{{"diff", "upgrade"}, {"apply"}} {
		// Without values an upgrade reuses the last ones, as helm's does.
		r := helmInject(t, append(verb, "empty", chart, "-n", ns, "--set", "enabled=false")...)
		if r.code != 1 || !strings.Contains(r.stderr, `release "empty": `+chart+` rendered no object, so this upgrade would delete all 1 objects of revision 2`) ||
			!strings.Contains(r.stderr, "--allow-empty") {
			t.Errorf("%s to no object: want a refusal naming the release and --allow-empty\n%s", verb[0], r)
		}
	}
	if _, err := clientset(t).CoreV1().ConfigMaps(ns).Get(t.Context(), "switched", metav1.GetOptions{}); err != nil {
		t.Errorf("after the refusal the ConfigMap is gone: %v", err)
	}
	if h := h4.mustRun(t, helm4Bin(t), "history", "empty", "-n", ns, "-o", "json").stdout; strings.Count(h, `"revision"`) != 2 {
		t.Errorf("after the refusal the history is %s, want 2 revisions", h)
	}

	mustHelmInject(t, "apply", "empty", chart, "-n", ns, "--set", "enabled=false", "--allow-empty")
	if _, err := clientset(t).CoreV1().ConfigMaps(ns).Get(t.Context(), "switched", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("--allow-empty kept the ConfigMap: %v", err)
	}
	h4.mustRun(t, helm4Bin(t), "uninstall", "empty", "-n", ns)
	h4.mustRun(t, helm4Bin(t), "uninstall", "by-helm", "-n", ns)
}
