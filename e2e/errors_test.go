package e2e

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestErrorsSayWhatToDo: each way a first apply commonly fails, on real
// components, with its exact message.
func TestErrorsSayWhatToDo(t *testing.T) {
	ns := namespace(t)
	home := t.TempDir()
	dir := t.TempDir()

	// A port nothing listens on: one that was just free.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "https://" + l.Addr().String()
	l.Close()
	deadKubeconfig := filepath.Join(dir, "dead.kubeconfig")
	writeFile(t, deadKubeconfig, "apiVersion: v1\nkind: Config\nclusters:\n- name: gone\n  cluster: {server: \""+dead+"\", insecure-skip-tls-verify: true}\n"+
		"contexts:\n- name: gone\n  context: {cluster: gone, user: u}\ncurrent-context: gone\nusers:\n- name: u\n  user: {token: t}\n")

	// A user the API server knows, with read access to release Secrets
	// only: it can read the history but not create the chart's resources.
	limited, err := cluster.AddUser("limited", dir)
	if err != nil {
		t.Fatal(err)
	}
	nobody, err := cluster.AddUser("nobody", dir)
	if err != nil {
		t.Fatal(err)
	}
	rbac := clientset(t).RbacV1()
	if _, err := rbac.Roles(ns).Create(t.Context(), &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "secrets"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "create", "update", "delete"}}}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rbac.RoleBindings(ns).Create(t.Context(), &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "limited-secrets"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "secrets"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "limited"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubeconfig := os.Getenv("KUBECONFIG")
	path := binDir + string(os.PathListSeparator) + "/usr/bin:/bin"
	fix := "; check that the cluster is running and that this is the cluster you mean (kubectl cluster-info shows what the kubeconfig reaches)"
	rbacFix := func(verb, resource string) string {
		return `; helm-inject acts with your rights, as helm does, and keeps each release in Secrets of its namespace: ask for a Role that grants ` +
			verb + " on " + resource + ` in namespace "` + ns + `"`
	}
	apply := []string{"apply", "first", apiChart, "-n", ns, "--injector", "sidecar-injector f=FILE"}

	tests := []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"cluster unreachable", []string{"KUBECONFIG=" + deadKubeconfig}, apply,
			`release "first": Kubernetes cluster unreachable at ` + dead + ` (kubeconfig ` + deadKubeconfig + `, context "gone"): connection refused` + fix},
		{"cluster unreachable, --kube-apiserver", nil, []string{"status", "first", "--kube-apiserver", dead},
			`release "first": Kubernetes cluster unreachable at ` + dead + ` (--kube-apiserver): connection refused` + fix},
		{"no kubeconfig", []string{"KUBECONFIG=", "HOME=" + home}, apply,
			`release "first": no kubeconfig: $KUBECONFIG is not set and ` + filepath.Join(home, ".kube", "config") +
				` does not exist; set KUBECONFIG or pass --kubeconfig to reach a cluster (helm-inject template renders without one)`},
		{"$KUBECONFIG names no file", []string{"KUBECONFIG=" + filepath.Join(dir, "missing"), "HOME=" + home}, apply,
			`release "first": no kubeconfig: $KUBECONFIG is "` + filepath.Join(dir, "missing") +
				`" and no file it names exists; set KUBECONFIG or pass --kubeconfig to reach a cluster (helm-inject template renders without one)`},
		{"--kubeconfig names no file", nil, append(apply, "--kubeconfig", filepath.Join(dir, "missing")),
			`release "first": no kubeconfig: --kubeconfig names ` + filepath.Join(dir, "missing") + `, which does not exist`},
		{"wrong context", []string{"KUBECONFIG=" + deadKubeconfig}, append(apply, "--kube-context", "nope"),
			`release "first": kube context "nope" (--kube-context) is not in the kubeconfig ` + deadKubeconfig +
				`, which has the contexts gone; pass one of them with --kube-context`},
		{"forbidden: reading the release history", []string{"KUBECONFIG=" + nobody}, apply,
			`release "first": forbidden: user "nobody" may not list secrets in namespace "` + ns + `" (the cluster's RBAC refused it)` + rbacFix("list", "secrets")},
		// Helm reads each resource before it creates any (a resource
		// that exists and is not the release's stops the install).
		{"forbidden: reading the chart's resources", []string{"KUBECONFIG=" + limited}, apply,
			`release "first": forbidden: user "limited" may not get configmaps in namespace "` + ns + `" (the cluster's RBAC refused it)` + rbacFix("get", "configmaps")},
		{"chart not found", []string{"KUBECONFIG=" + kubeconfig}, []string{"apply", "first", "./no-such-chart", "-n", ns},
			`release "first": chart ./no-such-chart: no such chart directory or archive`},
		{"chart repository not added", []string{"KUBECONFIG=" + kubeconfig}, []string{"apply", "first", "no-such-repo/app", "-n", ns},
			`release "first": chart no-such-repo/app: no repository named "no-such-repo" is added (helm repo list shows those that are); add it with helm repo add no-such-repo URL, or give the chart's folder, .tgz or oci:// reference`},
		{"injector not on PATH", []string{"KUBECONFIG=" + kubeconfig, "PATH=" + path}, []string{"apply", "first", apiChart, "-n", ns, "--injector", "no-such-injector f=FILE"},
			`release "first": injector "no-such-injector f=FILE": program "no-such-injector" is in no folder of $PATH (` + path +
				`); install it there, or write its path in the injector spec (for example /usr/local/bin/no-such-injector)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := command{env: tt.env}.run(t, filepath.Join(binDir, "helm-inject"), tt.args...)
			if got := strings.TrimSpace(r.stderr); r.code != 1 || got != "Error: "+tt.want {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 1 and\nError: %s", r.code, got, tt.want)
			}
			if r.stdout != "" {
				t.Errorf("stdout: %q", r.stdout)
			}
		})
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
