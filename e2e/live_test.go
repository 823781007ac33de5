package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/helm-inject/helm-inject/internal/testenv"
)

// liveStatus is the part of `status --live -o json` the tests read.
type liveStatus struct {
	Injectors []struct {
		Name, Version, Newest string
		Outdated              bool
		Program               *struct{ Path, SHA256, Version string }
	}
	History []struct {
		Revision  int
		Injectors []struct {
			Name    string
			Program *struct{ Path, SHA256, Version string }
		}
	}
	Live struct {
		Drifted bool
		OldPods int
		Objects []struct {
			Kind, Name  string
			Missing     bool
			Differences []struct{ Path, Kind, Want, Got, Cause string }
		}
		Workloads []struct {
			Kind, Name string
			Templates  []struct {
				Name                                 string
				Current                              bool
				Pods, Ready                          int
				Injectors, Containers, NotInTemplate []string
			}
		}
		InjectorPods map[string]int
	}
}

// statusLive runs status --live -o json with extra flags and returns what
// it printed and its exit code.
func statusLive(t *testing.T, rel, ns string, extra ...string) (liveStatus, int) {
	t.Helper()
	r := helmInject(t, append([]string{"status", rel, "-n", ns, "--live", "-o", "json", "--detailed-exitcode"}, extra...)...)
	if r.code != 0 && r.code != 2 {
		t.Fatalf("status --live: %s", r)
	}
	var st liveStatus
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatalf("status --live -o json: %v\n%s", err, r.stdout)
	}
	return st, r.code
}

// waitLive polls status --live until done accepts what it shows.
func waitLive(t *testing.T, rel, ns, what string, done func(liveStatus, int) bool, extra ...string) (liveStatus, int) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		st, code := statusLive(t, rel, ns, extra...)
		if done(st, code) {
			return st, code
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: status --live shows %+v (exit %d)", what, st.Live, code)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func kubectl(t *testing.T, args ...string) result {
	t.Helper()
	bin, err := testenv.Tool(cluster.ToolsBin, "kubectl")
	if err != nil {
		t.Fatal(err)
	}
	return command{}.mustRun(t, bin, args...)
}

// TestLiveViewUnderNever: a release kept at log-shipper 1.0.0 by
// --reconcile never while the library offers 1.1.0: the live view shows
// the version, OUTDATED and the pods by template; --update-injectors rolls
// the workload, and while kwok holds the new pod unready the view shows
// pods of both templates and exits 2, then only the new one.
func TestLiveViewUnderNever(t *testing.T) {
	ns := namespace(t)
	lib := library(t, "1.0.0")
	apply := func(extra ...string) {
		t.Helper()
		mustHelmInject(t, append([]string{"apply", "amalthea", slowstartChart, "-n", ns, "--set", "readyDelay=8s",
			"--injector-library", lib, "--with", "log-shipper@^1", "--with-set", "log-shipper.destination=logs:24224", "--reconcile", "never"}, extra...)...)
	}
	apply("--wait")
	addVersion(t, lib, "log-shipper", "1.1.0")
	mustHelmInject(t, "injectors", "lock", "--injector-library", lib)
	apply() // never: stays at 1.0.0, no new template

	st, code := statusLive(t, "amalthea", ns, "--injector-library", lib)
	if code != 0 || len(st.Injectors) != 1 || st.Injectors[0].Version != "1.0.0" || st.Injectors[0].Newest != "1.1.0" || !st.Injectors[0].Outdated {
		t.Fatalf("exit %d, injectors %+v: want 1.0.0, newest 1.1.0, outdated, exit 0", code, st.Injectors)
	}
	if len(st.Live.Workloads) != 1 || len(st.Live.Workloads[0].Templates) != 1 {
		t.Fatalf("workloads %+v, want amalthea-web with one template", st.Live.Workloads)
	}
	tpl := st.Live.Workloads[0].Templates[0]
	if !tpl.Current || tpl.Pods != 1 || tpl.Ready != 1 || !slices.Equal(tpl.Injectors, []string{"log-shipper@1.0.0"}) ||
		!slices.Contains(tpl.Containers, "log-shipper=cr.fluentbit.io/fluent/fluent-bit:2.2.0") || len(tpl.NotInTemplate) != 0 {
		t.Errorf("template %+v: want the current one, 1 ready pod running log-shipper@1.0.0 (fluent-bit 2.2.0)", tpl)
	}
	if want := map[string]int{"log-shipper@1.0.0": 1}; !mapsEqual(st.Live.InjectorPods, want) {
		t.Errorf("pods per injector version %v, want %v", st.Live.InjectorPods, want)
	}
	text := mustHelmInject(t, "status", "amalthea", "-n", ns, "--live", "--injector-library", lib).stdout
	for _, want := range []string{"log-shipper  1.0.0    -        1.1.0   yes", "LIVE: in sync", "(revision 1) current  1     1      log-shipper@1.0.0", "log-shipper@1.0.0  1"} {
		if !strings.Contains(text, want) {
			t.Errorf("status --live lacks %q:\n%s", want, text)
		}
	}

	apply("--update-injectors")
	st, code = waitLive(t, "amalthea", ns, "pods of both templates", func(st liveStatus, _ int) bool {
		return len(st.Live.Workloads) == 1 && len(st.Live.Workloads[0].Templates) == 2
	})
	tpls := st.Live.Workloads[0].Templates
	if code != 2 || st.Live.OldPods != 1 || !tpls[0].Current || tpls[0].Ready != 0 || !slices.Equal(tpls[0].Injectors, []string{"log-shipper@1.1.0"}) ||
		tpls[1].Current || tpls[1].Ready != 1 || !slices.Equal(tpls[1].Injectors, []string{"log-shipper@1.0.0"}) {
		t.Errorf("during the rollout: exit %d, old pods %d, templates %+v; want exit 2, the new template (1.1.0, unready) and the old (1.0.0, ready)", code, st.Live.OldPods, tpls)
	}
	if want := map[string]int{"log-shipper@1.0.0": 1, "log-shipper@1.1.0": 1}; !mapsEqual(st.Live.InjectorPods, want) {
		t.Errorf("pods per injector version during the rollout %v, want %v", st.Live.InjectorPods, want)
	}
	st, _ = waitLive(t, "amalthea", ns, "the rollout's end", func(st liveStatus, code int) bool { return code == 0 })
	if tpls := st.Live.Workloads[0].Templates; len(tpls) != 1 || !tpls[0].Current || tpls[0].Ready != 1 ||
		!slices.Contains(tpls[0].Containers, "init:log-shipper=cr.fluentbit.io/fluent/fluent-bit:3.0.4") {
		t.Errorf("after the rollout: %+v, want one current template with 1.1.0's native sidecar", tpls)
	}
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestLiveDrift: kubectl patch adds a container to an injected
// Deployment's template and changes its sidecar's image. status --live
// reports both with their paths and kubectl as the cause, exit 2, and
// none of the API server's defaults; diff --three-way-merge shows both
// (the plain diff, against the release record, sees nothing); the
// documented restore brings the release's state back.
func TestLiveDrift(t *testing.T) {
	ns := namespace(t)
	args := []string{"drifty", slowstartChart, "-n", ns, "--set", "readyDelay=0s",
		"--injector-library", "examples/injectors", "--with", "log-shipper@1.0.0", "--with-set", "log-shipper.destination=logs:24224"}
	mustHelmInject(t, append([]string{"apply"}, append(args, "--wait")...)...)
	if st, code := statusLive(t, "drifty", ns); code != 0 || st.Live.Drifted {
		t.Fatalf("right after apply: exit %d, drift %+v", code, st.Live.Objects)
	}

	kubectl(t, "-n", ns, "patch", "deployment", "drifty-web", "--type", "strategic", "-p",
		`{"spec":{"template":{"spec":{"containers":[{"name":"debug","image":"busybox:1.36"},{"name":"log-shipper","image":"cr.fluentbit.io/fluent/fluent-bit:9.9"}]}}}}`)
	st, code := statusLive(t, "drifty", ns)
	if code != 2 || len(st.Live.Objects) != 1 {
		t.Fatalf("after kubectl patch: exit %d, objects %+v; want exit 2 and the Deployment", code, st.Live.Objects)
	}
	var got []string
	for _, d := range st.Live.Objects[0].Differences {
		got = append(got, d.Kind+" "+d.Path+" "+d.Want+" "+d.Got+" "+d.Cause)
	}
	// The strategic merge puts debug first: containers are [debug web
	// log-shipper] in the live object.
	want := []string{
		`changed /spec/template/spec/containers/2/image "cr.fluentbit.io/fluent/fluent-bit:2.2.0" "cr.fluentbit.io/fluent/fluent-bit:9.9" edited by kubectl-patch`,
		`added /spec/template/spec/containers/0  {"image":"busybox:1.36","imagePullPolicy":"IfNotPresent","name":"debug","resources":{},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File"} added in the cluster by kubectl-patch`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("drift:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	text := helmInject(t, "status", "drifty", "-n", ns, "--live").stdout
	for _, lacks := range []string{"terminationMessagePath:", "dnsPolicy", "/spec/template/spec/containers/1"} {
		if strings.Contains(text, lacks) {
			t.Errorf("status --live reports %q, which the API server or nobody changed:\n%s", lacks, text)
		}
	}

	if r := helmInject(t, append([]string{"diff"}, append(args, "--detailed-exitcode", "--skip-live-check", "--no-hooks")...)...); r.code != 0 {
		t.Errorf("plain diff against the release record alone (--skip-live-check): %s; want exit 0", r)
	}
	// Read, the cluster shows the edited image, which an apply takes back
	// (--no-hooks: the chart's post-upgrade hook alone makes a revision);
	// the added container is kept, so it is not listed.
	if r := helmInject(t, append([]string{"diff"}, append(args, "--detailed-exitcode", "--no-hooks")...)...); r.code != 2 ||
		!strings.Contains(r.stdout, "drift: Deployment drifty-web (namespace "+ns+"): /spec/template/spec/containers/2/image edited by kubectl-patch") ||
		strings.Contains(r.stdout, "containers/0") {
		t.Errorf("plain diff with the cluster read: %s; want exit 2 and the edited image as drift", r)
	}
	r := helmInject(t, append([]string{"diff"}, append(args, "--three-way-merge", "--detailed-exitcode")...)...)
	for _, w := range []string{
		"-        image: cr.fluentbit.io/fluent/fluent-bit:9.9\n+        image: cr.fluentbit.io/fluent/fluent-bit:2.2.0",
		"-      - image: busybox:1.36",
		"drift: apps/v1 Deployment drifty-web: /spec/template/spec/containers/0 added in the cluster by kubectl-patch; an apply keeps it",
	} {
		if r.code != 2 || !strings.Contains(r.stdout, w) {
			t.Errorf("diff --three-way-merge lacks %q (want exit 2): %s", w, r)
		}
	}

	// An autoscaler's replicas: drift unless ignored.
	kubectl(t, "-n", ns, "scale", "deployment", "drifty-web", "--replicas", "2")
	// The restore docs/live.md gives.
	mustHelmInject(t, append([]string{"apply"}, append(args, "--force-upgrade", "--force-replace", "--server-side=false", "--wait")...)...)
	kubectl(t, "-n", ns, "scale", "deployment", "drifty-web", "--replicas", "3")
	st, code = waitLive(t, "drifty", ns, "the restored rollout", func(st liveStatus, _ int) bool { return st.Live.OldPods == 0 },
		"--ignore-drift", "Deployment/drifty-web:/spec/replicas")
	if code != 0 || st.Live.Drifted {
		t.Errorf("after the restore, replicas ignored: exit %d, drift %+v", code, st.Live.Objects)
	}
	// list --live: the same answer per release, with the same rules.
	if r := helmInject(t, "list", "-n", ns, "--live", "--detailed-exitcode"); r.code != 2 || !strings.Contains(r.stdout, "LIVE\n") || !strings.Contains(r.stdout, "1 object drifted") {
		t.Errorf("list --live with the replicas drifted: %s; want exit 2 and 1 object drifted", r)
	}
	if r := helmInject(t, "list", "-n", ns, "--live", "--detailed-exitcode", "--ignore-drift", "Deployment:/spec/replicas"); r.code != 0 || !strings.Contains(r.stdout, "in sync") {
		t.Errorf("list --live with replicas ignored: %s; want exit 0, in sync", r)
	}
	if st, code := statusLive(t, "drifty", ns); code != 2 || len(st.Live.Objects) != 1 || len(st.Live.Objects[0].Differences) != 1 ||
		st.Live.Objects[0].Differences[0].Path != "/spec/replicas" || !strings.HasPrefix(st.Live.Objects[0].Differences[0].Cause, "edited by kubectl") {
		t.Errorf("replicas not ignored: exit %d, drift %+v; want /spec/replicas edited by kubectl", code, st.Live.Objects)
	}
}

// TestLiveOnHelmReleases: releases plain helm 3 and helm 4 made (nothing
// injected) show their drift too; a user who may only read the release's
// namespace gets the view, and one who may not read its pods is told which
// permission is missing.
func TestLiveOnHelmReleases(t *testing.T) {
	ns := namespace(t)
	helm4, err := testenv.Tool(cluster.ToolsBin, "helm4")
	if err != nil {
		t.Fatal(err)
	}
	chart := filepath.Join(repoRoot(t), slowstartChart)
	mustHelm(t, "install", "three", chart, "-n", ns, "--set", "readyDelay=0s", "--wait")
	command{}.mustRun(t, helm4, "install", "four", chart, "-n", ns, "--set", "readyDelay=0s", "--wait")
	for _, rel := range []string{"three", "four"} {
		if st, code := statusLive(t, rel, ns); code != 0 || st.Live.Drifted || len(st.Live.Workloads) != 1 {
			t.Errorf("%s before any edit: exit %d, %+v", rel, code, st.Live)
		}
		kubectl(t, "-n", ns, "set", "image", "deployment/"+rel+"-web", "web=registry.example/web:6.6")
		st, code := statusLive(t, rel, ns)
		if code != 2 || len(st.Live.Objects) != 1 || len(st.Live.Objects[0].Differences) != 1 ||
			st.Live.Objects[0].Differences[0].Got != `"registry.example/web:6.6"` || st.Live.Objects[0].Differences[0].Cause != "edited by kubectl-set" {
			t.Errorf("%s after kubectl set image: exit %d, %+v", rel, code, st.Live.Objects)
		}
	}

	dir := t.TempDir()
	reader, err := cluster.AddUser("reader", dir)
	if err != nil {
		t.Fatal(err)
	}
	rules := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get"}}}
	rbac := clientset(t).RbacV1()
	if _, err := rbac.Roles(ns).Create(t.Context(), &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "reader"}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rbac.RoleBindings(ns).Create(t.Context(), &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "reader"},
		RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "reader"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: "reader"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	as := command{env: []string{"KUBECONFIG=" + reader}}
	r := as.run(t, filepath.Join(binDir, "helm-inject"), "status", "three", "-n", ns, "--live")
	want := `Error: release "three": forbidden: user "reader" may not list replicasets.apps in namespace "` + ns + `"`
	if r.code != 1 || !strings.HasPrefix(r.stderr, want) {
		t.Errorf("without list on replicasets: %s\nwant %s", r, want)
	}
	role, err := rbac.Roles(ns).Get(t.Context(), "reader", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"replicasets"}, Verbs: []string{"list"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}})
	if _, err := rbac.Roles(ns).Update(t.Context(), role, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		r = as.run(t, filepath.Join(binDir, "helm-inject"), "status", "three", "-n", ns, "--live", "--detailed-exitcode")
		if r.code != 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(300 * time.Millisecond) // RBAC updates reach the authorizer's cache
	}
	if r.code != 2 || !strings.Contains(r.stdout, "LIVE: 1 object drifted") {
		t.Errorf("with namespace read (get, list): %s; want the view and exit 2", r)
	}
}

// TestInjectorProgramIdentity: a release applied with one build of the
// fixture injector and re-applied with another (same spec, same path)
// records both: diff names the change, status shows both revisions'
// programs, list the newest.
func TestInjectorProgramIdentity(t *testing.T) {
	ns := namespace(t)
	dir := t.TempDir()
	inj := filepath.Join(dir, "sidecar-injector")
	build := func(version string) string {
		t.Helper()
		cmd := exec.Command("go", "build", "-ldflags", "-X main.version="+version, "-o", inj, "./fixtures/injectors/sidecar-injector")
		cmd.Dir = repoRoot(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("building the fixture injector %s: %v\n%s", version, err, out)
		}
		b, err := os.ReadFile(inj)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		return hex.EncodeToString(sum[:])
	}
	as := command{env: []string{"PATH=" + dir + string(os.PathListSeparator) + binDir + string(os.PathListSeparator) + os.Getenv("PATH")}}
	hi := filepath.Join(binDir, "helm-inject")
	args := []string{"ident", apiChart, "-n", ns, "--injector", "sidecar-injector f=FILE", "--injector-version", "sidecar-injector=sidecar-injector version"}
	first := build("1.0")
	as.mustRun(t, hi, append([]string{"apply"}, args...)...)
	second := build("1.1")
	if first == second {
		t.Fatal("the two builds are the same file")
	}
	r := as.run(t, hi, append([]string{"diff"}, append(args, "--detailed-exitcode")...)...)
	reason := "injector sidecar-injector f=FILE: program sidecar-injector 1.0 (sha256:" + first[:12] + ") → sidecar-injector 1.1 (sha256:" + second[:12] + ")"
	if r.code != 2 || !strings.Contains(r.stdout, reason) {
		t.Errorf("diff with the rebuilt injector: %s\nwant exit 2 and %q", r, reason)
	}
	as.mustRun(t, hi, append([]string{"apply"}, args...)...)
	if r := as.run(t, hi, append([]string{"diff"}, append(args, "--detailed-exitcode")...)...); r.code != 0 {
		t.Errorf("diff after the second apply: %s; want no change", r)
	}

	out := as.mustRun(t, hi, "status", "ident", "-n", ns).stdout
	for _, w := range []string{
		"1         superseded  sidecar-injector f=FILE [sidecar-injector 1.0 (sha256:" + first[:12] + ")]",
		"2         deployed    sidecar-injector f=FILE [sidecar-injector 1.1 (sha256:" + second[:12] + ")]",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("status lacks %q:\n%s", w, out)
		}
	}
	var st liveStatus
	if err := json.Unmarshal([]byte(as.mustRun(t, hi, "status", "ident", "-n", ns, "-o", "json").stdout), &st); err != nil {
		t.Fatal(err)
	}
	if p := st.Injectors[0].Program; p == nil || p.Path != inj || p.SHA256 != "sha256:"+second || p.Version != "1.1" {
		t.Errorf("status -o json program %+v, want %s, sha256:%s, 1.1", p, inj, second)
	}
	list := as.mustRun(t, hi, "list", "-n", ns).stdout
	if w := "sidecar-injector f=FILE [sidecar-injector 1.1 (sha256:" + second[:12] + ")]"; !strings.Contains(list, w) {
		t.Errorf("list lacks %q:\n%s", w, list)
	}
}
