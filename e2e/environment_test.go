package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// TestEnvironmentIsReal proves the integration environment is a working
// cluster for Helm: the real helm CLI installs the webapp fixture with --wait
// (which needs the controllers, the scheduler and kwok to make pods ready),
// and list, status, test and uninstall behave as on a real cluster.
func TestEnvironmentIsReal(t *testing.T) {
	ns := namespace(t)
	chart := "fixtures/charts/webapp"

	mustHelm(t, "install", "envcheck", chart, "-n", ns, "--wait", "--timeout", "2m")

	var list []struct {
		Name, Chart, Status string
		AppVersion          string `json:"app_version"`
	}
	out := mustHelm(t, "list", "-n", ns, "-o", "json").stdout
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("helm list -o json: %v\n%s", err, out)
	}
	if len(list) != 1 || list[0].Name != "envcheck" || list[0].Chart != "webapp-1.4.2" ||
		list[0].AppVersion != "2.7.0" || list[0].Status != "deployed" {
		t.Fatalf("helm list = %+v, want one deployed envcheck webapp-1.4.2 (2.7.0)", list)
	}

	// --wait returned, so the Deployment must have a ready pod on the kwok node.
	dep, err := clientset(t).AppsV1().Deployments(ns).Get(t.Context(), "envcheck-web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if dep.Status.ReadyReplicas != 1 {
		t.Fatalf("deployment envcheck-web has %d ready replicas after --wait, want 1", dep.Status.ReadyReplicas)
	}

	status := mustHelm(t, "status", "envcheck", "-n", ns).stdout
	for _, want := range []string{"STATUS: deployed", "REVISION: 1", "webapp 2.7.0 is installed as envcheck in " + ns} {
		if !strings.Contains(status, want) {
			t.Errorf("helm status lacks %q:\n%s", want, status)
		}
	}

	test := mustHelm(t, "test", "envcheck", "-n", ns, "--timeout", "2m").stdout
	if !strings.Contains(test, "TEST SUITE:     envcheck-test-connection") || !strings.Contains(test, "Phase:          Succeeded") {
		t.Errorf("helm test did not report a succeeded test pod:\n%s", test)
	}

	mustHelm(t, "uninstall", "envcheck", "-n", ns, "--wait", "--timeout", "2m")
	if out := mustHelm(t, "list", "-n", ns, "-q").stdout; strings.TrimSpace(out) != "" {
		t.Fatalf("helm list after uninstall = %q, want empty", out)
	}
	err = wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := clientset(t).AppsV1().Deployments(ns).Get(ctx, "envcheck-web", metav1.GetOptions{})
		return err != nil, nil
	})
	if err != nil {
		t.Fatal("deployment envcheck-web still exists after helm uninstall")
	}
}
