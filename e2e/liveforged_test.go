package e2e

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	release "helm.sh/helm/v4/pkg/release/v1"

	"github.com/helm-inject/helm-inject/chartify"
	"github.com/helm-inject/helm-inject/internal/testfs"
)

// forgedRecord is rel as helm's Secret storage keeps it: a Secret named
// sh.helm.release.v1.NAME.vN, type helm.sh/release.v1, labelled
// owner=helm, its release data the base64 of the gzipped JSON record.
// Anyone who may create Secrets in a namespace can write one.
func forgedRecord(t *testing.T, rel *release.Release) *corev1.Secret {
	t.Helper()
	js, err := json.Marshal(rel)
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	if _, err := w.Write(js); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("sh.helm.release.v1.%s.v%d", rel.Name, rel.Version),
			Labels: map[string]string{"owner": "helm", "name": rel.Name, "version": fmt.Sprint(rel.Version), "status": "deployed"}},
		Type: "helm.sh/release.v1",
		Data: map[string][]byte{"release": []byte(base64.StdEncoding.EncodeToString(gz.Bytes()))},
	}
}

// TestLiveForgedReleaseRecords: a tenant who may only create Secrets in
// its namespace writes release records (helm's storage format) whose
// manifests name payments/db-config, a ConfigMap holding a password that
// a genuine release in payments owns and that the tenant cannot read. An
// administrator's list -A --live and status --live read the records: the
// password is printed nowhere, the ConfigMap is shown as not owned by the
// forged release, a record that claims namespace payments is refused, a
// record whose kind the cluster does not serve is reported on its own row
// while the genuine release is still listed (exit 1), a record without a
// chart is shown as helm does (no panic), and the forged chart name's
// escape sequence reaches the terminal escaped.
func TestLiveForgedReleaseRecords(t *testing.T) {
	payments, tenant := namespace(t), namespace(t)
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	password := "pw-" + hex.EncodeToString(b)

	// The genuine release in payments owns db-config.
	dbChart := filepath.Join(t.TempDir(), "db")
	testfs.Write(t, dbChart, map[string]string{
		"Chart.yaml":         "apiVersion: v2\nname: db\nversion: 0.1.0\n",
		"templates/cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: db-config\ndata:\n  password: " + password + "\n",
		"templates/app.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: db-app\ndata:\n  level: info\n",
	})
	mustHelmInject(t, "apply", "db", dbChart, "-n", payments, "--injector", "sidecar-injector f=FILE")

	// The tenant: create Secrets in its namespace, nothing else.
	kubeconfig, err := cluster.AddUser("tenant-forger", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rbac := clientset(t).RbacV1()
	if _, err := rbac.Roles(tenant).Create(t.Context(), &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "forger"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rbac.RoleBindings(tenant).Create(t.Context(), &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "forger"},
		RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "forger"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: "tenant-forger"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	forger, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := forger.CoreV1().ConfigMaps(payments).Get(t.Context(), "db-config", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("the tenant reading payments/db-config: %v, want forbidden", err)
	}
	forge := func(rel *release.Release) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			_, err := forger.CoreV1().Secrets(tenant).Create(t.Context(), forgedRecord(t, rel), metav1.CreateOptions{})
			if err == nil {
				return
			}
			if !apierrors.IsForbidden(err) || time.Now().After(deadline) { // RBAC reaches the authorizer's cache
				t.Fatalf("the tenant writing the record of %s: %v", rel.Name, err)
			}
			time.Sleep(300 * time.Millisecond)
		}
	}
	managed := func(name string) *chart.Chart {
		return &chart.Chart{Metadata: &chart.Metadata{APIVersion: "v2", Name: name, Version: "1.0.0",
			Annotations: map[string]string{chartify.AnnotationSource: "./" + name}}}
	}
	info := &release.Info{Status: rcommon.StatusDeployed}
	stealManifest := "---\n# Source: steal/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: db-config\n  namespace: " + payments + "\ndata:\n  password: guess\n"
	forge(&release.Release{Name: "steal", Namespace: tenant, Version: 1, Info: info, Chart: managed("steal\x1b[31mred"), Manifest: stealManifest})
	forge(&release.Release{Name: "nochart", Namespace: tenant, Version: 1, Info: info, Manifest: stealManifest})
	forge(&release.Release{Name: "widgets", Namespace: tenant, Version: 1, Info: info, Chart: managed("widgets"),
		Manifest: "---\n# Source: widgets/templates/w.yaml\napiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n"})

	noPassword := func(what string, r result) {
		t.Helper()
		if strings.Contains(r.stdout+r.stderr, password) {
			t.Errorf("%s printed the password:\n%s", what, r)
		}
	}
	// The administrator's list -A --live: every release, each on its row.
	r := helmInject(t, "list", "-A", "--live")
	noPassword("list -A --live", r)
	rows := map[string]string{}
	for _, line := range strings.Split(r.stdout, "\n") {
		if f := strings.Fields(line); len(f) > 2 && (f[1] == tenant || f[1] == payments) {
			rows[f[0]] = line
		}
	}
	if r.code != 1 || !strings.Contains(r.stderr, "could not read ") {
		t.Errorf("list -A --live with an unreadable release: %s\nwant exit 1 after the rows", r)
	}
	if row := rows["steal"]; !strings.Contains(row, "1 object not owned by this release") || !strings.Contains(row, `steal\x1b[31mred-1.0.0`) {
		t.Errorf("the forged release's row: %q; want its object not owned, its chart name escaped", row)
	}
	if row := rows["widgets"]; !strings.Contains(row, `cannot read: release "widgets": example.com/v1 Widget w: the cluster does not serve example.com/v1`) {
		t.Errorf("the release whose kind is not served: %q", row)
	}
	if row := rows["db"]; !strings.Contains(row, "in sync") {
		t.Errorf("the genuine release after the unreadable one: %q; want in sync", row)
	}
	if _, ok := rows["nochart"]; ok || strings.Contains(r.stdout, "\x1b") {
		t.Errorf("list shows a release without a chart (helm-inject did not make it) or a raw escape:\n%s", r.stdout)
	}
	r = helmInject(t, "list", "-A", "--live", "-o", "json")
	noPassword("list -A --live -o json", r)
	var list []struct {
		Name, Namespace, Error string
		Live                   *struct {
			Drifted bool
			Objects []struct {
				Kind, Name, Namespace string
				NotOwned              bool
				Differences           []any
			}
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
		t.Fatalf("list -o json: %v\n%s", err, r)
	}
	seen := map[string]bool{}
	for _, rel := range list {
		switch rel.Namespace + "/" + rel.Name {
		case tenant + "/steal":
			if rel.Error != "" || rel.Live == nil || !rel.Live.Drifted || len(rel.Live.Objects) != 1 || !rel.Live.Objects[0].NotOwned ||
				rel.Live.Objects[0].Namespace != payments || len(rel.Live.Objects[0].Differences) != 0 {
				t.Errorf("steal in -o json: %+v; want db-config in %s not owned, no differences", rel, payments)
			}
		case tenant + "/widgets":
			if rel.Error == "" || rel.Live != nil {
				t.Errorf("widgets in -o json: %+v; want an error", rel)
			}
		case payments + "/db":
			if rel.Error != "" || rel.Live == nil || rel.Live.Drifted {
				t.Errorf("db in -o json: %+v; want in sync", rel)
			}
		default:
			continue
		}
		seen[rel.Name] = true
	}
	if len(seen) != 3 {
		t.Errorf("list -o json has %v of steal, widgets and db", seen)
	}

	// status --live of the forged release.
	r = helmInject(t, "status", "steal", "-n", tenant, "--live", "--detailed-exitcode")
	noPassword("status --live", r)
	want := "ConfigMap/db-config (namespace " + payments + ")  (the whole object)  not owned by this release (not read)"
	if r.code != 2 || !strings.Contains(r.stdout, want) || !strings.Contains(r.stdout, "LIVE: 1 object not owned by this release") ||
		!strings.Contains(r.stdout, `CHART: steal\x1b[31mred-1.0.0`) || strings.Contains(r.stdout, "\x1b") {
		t.Errorf("status --live of the forged release: %s\nwant exit 2, %q, the chart name escaped", r, want)
	}

	// A record without a chart: shown as helm shows it.
	r = helmInject(t, "status", "nochart", "-n", tenant)
	if r.code != 0 || !strings.Contains(r.stdout, "CHART: MISSING") || strings.Contains(r.stderr, "panic") {
		t.Errorf("status of a record without a chart: %s; want CHART: MISSING", r)
	}
	r = helmInject(t, "status", "nochart", "-n", tenant, "--live")
	noPassword("status --live of a record without a chart", r)
	if r.code != 0 || !strings.Contains(r.stdout, want) {
		t.Errorf("status --live of a record without a chart: %s", r)
	}

	// A record in tenant that claims payments' release: its objects would
	// pass the ownership test, so it is not read at all.
	forge(&release.Release{Name: "db", Namespace: payments, Version: 1, Info: info, Chart: managed("db"),
		Manifest: "---\n# Source: db/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: db-config\ndata:\n  password: guess\n"})
	r = helmInject(t, "status", "db", "-n", tenant, "--live")
	noPassword("status --live of a record claiming payments", r)
	if want := `its record names namespace "` + payments + `", whose release storage holds no such record of revision 1`; r.code != 1 || !strings.Contains(r.stderr, want) {
		t.Errorf("status --live of a record claiming payments: %s\nwant exit 1 and %q", r, want)
	}
	// The genuine release still reads as before.
	if r := helmInject(t, "status", "db", "-n", payments, "--live", "--detailed-exitcode"); r.code != 0 || !strings.Contains(r.stdout, "LIVE: in sync") {
		t.Errorf("status --live of the genuine release: %s", r)
	}
}
