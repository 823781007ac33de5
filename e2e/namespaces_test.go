package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/tools/clientcmd"
)

// listed is one row of `list -o json`, of helm's and of helm-inject's.
type listed struct{ Name, Namespace string }

// rows reads `list -o json` output, keeping the rows of namespaces nss
// (the cluster is shared with other tests), sorted.
func rows(t *testing.T, out string, nss ...string) []listed {
	t.Helper()
	var all []listed
	if err := json.Unmarshal([]byte(out), &all); err != nil {
		t.Fatalf("list -o json: %v\n%s", err, out)
	}
	var kept []listed
	for _, r := range all {
		if slices.Contains(nss, r.Namespace) {
			kept = append(kept, r)
		}
	}
	return sortRows(kept)
}

func sortRows(r []listed) []listed {
	slices.SortFunc(r, func(a, b listed) int { return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name) })
	return r
}

// TestNamespacesLikeHelm: list, list -A, status and diff find releases in
// the namespaces helm finds them, with -n, -A and --kube-context, on the
// same cluster as the helm CLI.
func TestNamespacesLikeHelm(t *testing.T) {
	alpha, beta := namespace(t), namespace(t)
	mustHelmInject(t, "apply", "in-alpha", apiChart, "-n", alpha, "--injector", "sidecar-injector f=FILE")
	mustHelmInject(t, "apply", "in-beta", apiChart, "-n", beta, "--injector", "sidecar-injector f=FILE")

	both := sortRows([]listed{{"in-alpha", alpha}, {"in-beta", beta}})
	if got := rows(t, mustHelm(t, "list", "-A", "-o", "json").stdout, alpha, beta); !cmp.Equal(got, both) {
		t.Fatalf("helm list -A = %v, want %v", got, both)
	}
	if got := rows(t, mustHelmInject(t, "list", "-A", "-o", "json").stdout, alpha, beta); !cmp.Equal(got, both) {
		t.Errorf("helm-inject list -A = %v, want %v as helm list -A", got, both)
	}
	onlyBeta := []listed{{"in-beta", beta}}
	for _, args := range [][]string{{"list", "-n", beta, "-o", "json"}, {"list", "--namespace=" + beta, "-o", "json"}} {
		if got := rows(t, mustHelmInject(t, args...).stdout, alpha, beta); !cmp.Equal(got, onlyBeta) {
			t.Errorf("helm-inject %v = %v, want %v", args, got, onlyBeta)
		}
	}
	if got := rows(t, command{env: []string{"HELM_NAMESPACE=" + beta}}.mustRun(t, filepath.Join(binDir, "helm-inject"), "list", "-o", "json").stdout, alpha, beta); !cmp.Equal(got, onlyBeta) {
		t.Errorf("helm-inject list with HELM_NAMESPACE=%s = %v", beta, got)
	}

	// status and diff look in -n's namespace only, as helm status does.
	if r := mustHelmInject(t, "status", "in-beta", "-n", beta); !strings.Contains(r.stdout, "NAMESPACE: "+beta) {
		t.Errorf("status -n %s:\n%s", beta, r)
	}
	if h, r := helm(t, "status", "in-beta", "-n", alpha), helmInject(t, "status", "in-beta", "-n", alpha); h.code == 0 || r.code == 0 || !strings.Contains(r.stderr, "not found") {
		t.Errorf("status of a release in another namespace: helm exit %d, helm-inject:\n%s", h.code, r)
	}
	d := helmInject(t, "diff", "upgrade", "in-beta", apiChart, "-n", beta, "--injector", "sidecar-injector f=FILE", "--detailed-exitcode")
	if d.code != 0 {
		t.Errorf("diff of an unchanged release in -n %s: exit %d (a diff against nothing would be 2):\n%s", beta, d.code, d)
	}

	// --kube-context picks a context of the kubeconfig, as helm's does:
	// the current context points at nothing listening.
	kc, err := clientcmd.LoadFromFile(cluster.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	live := kc.Contexts[kc.CurrentContext].DeepCopy()
	dead := live.DeepCopy()
	dead.Cluster = "nowhere"
	nowhere := kc.Clusters[live.Cluster].DeepCopy()
	nowhere.Server = "https://127.0.0.1:1"
	kc.Clusters["nowhere"] = nowhere
	kc.Contexts["live"], kc.Contexts["dead"] = live, dead
	kc.CurrentContext = "dead"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	c := command{env: []string{"KUBECONFIG=" + path}}
	if r := c.run(t, filepath.Join(binDir, "helm-inject"), "list", "-A"); r.code == 0 {
		t.Errorf("list on a dead current context succeeded:\n%s", r)
	}
	hl := rows(t, c.mustRun(t, helmBin(t), "list", "-A", "-o", "json", "--kube-context", "live").stdout, alpha, beta)
	ours := rows(t, c.mustRun(t, filepath.Join(binDir, "helm-inject"), "list", "-A", "-o", "json", "--kube-context", "live").stdout, alpha, beta)
	if !cmp.Equal(hl, both) || !cmp.Equal(ours, hl) {
		t.Errorf("--kube-context live: helm %v, helm-inject %v", hl, ours)
	}
	if r := c.run(t, filepath.Join(binDir, "helm-inject"), "status", "in-alpha", "-n", alpha, "--kube-context", "live"); r.code != 0 {
		t.Errorf("status --kube-context live:\n%s", r)
	}
	_ = os.Remove(path)
}
