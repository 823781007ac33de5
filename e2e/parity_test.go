package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
)

// parityChart is a widely used chart nobody here wrote, as its project
// publishes it in its Go module (hack/versions.env PARITY_CHARTS, copied
// by hack/tools.sh charts).
type parityChart struct {
	name string
	// dir is the chart's folder under the tools' share folder.
	dir string
	// flags are given to helm and helm-inject alike, for every command.
	flags []string
	// nsValues are values set to the release's namespace: istio's charts
	// put their objects in global.istioNamespace, istio-system unless set.
	nsValues []string
	// upgrade changes a value, so that the upgrade changes objects.
	upgrade []string
}

// parityCorpus: fourteen charts of ten projects: one each of cert-manager,
// metrics-server, descheduler, sealed-secrets, node-feature-discovery,
// ingress-nginx, gatekeeper, cilium and kyverno, and five of istio's.
// kyverno's is the corpus's chart with subcharts: it vendors crds and
// grafana in its charts/ (its entry has one on, the other off).
var parityCorpus = []parityChart{
	{name: "cert-manager", dir: "charts/cert-manager", upgrade: []string{"--set", "replicaCount=2"}},
	{name: "metrics-server", dir: "charts/metrics-server", upgrade: []string{"--set", "replicas=2"}},
	{name: "descheduler", dir: "charts/descheduler", upgrade: []string{"--set", "schedule=*/5 * * * *"}},
	// A new full name renames every object: the upgrade removes and adds.
	{name: "sealed-secrets", dir: "charts/sealed-secrets", upgrade: []string{"--set", "fullnameOverride=sealed"}},
	{name: "node-feature-discovery", dir: "charts/node-feature-discovery", upgrade: []string{"--set", "master.replicaCount=2"}},
	{name: "ingress-nginx", dir: "charts/ingress-nginx", upgrade: []string{"--set", "controller.replicaCount=2"}},
	{name: "gatekeeper", dir: "charts/gatekeeper", upgrade: []string{"--set", "replicas=2"}},
	// Cilium generates its TLS certificates with genCA unless a CronJob
	// does: two renders would never be equal.
	{name: "cilium", dir: "charts/cilium",
		flags:   []string{"--set", "hubble.tls.auto.method=cronJob", "--set", "clustermesh.apiserver.tls.auto.method=cronJob"},
		upgrade: []string{"--set", "operator.replicas=1"}},
	{name: "istio-base", dir: "charts/istio-base", nsValues: []string{"global.istioNamespace"}, upgrade: []string{"--set", "defaultRevision=canary"}},
	{name: "istiod", dir: "istio-discovery", nsValues: []string{"global.istioNamespace"}, upgrade: []string{"--set", "replicaCount=2"}},
	{name: "istio-gateway", dir: "charts/istio-gateway", upgrade: []string{"--set", "labels.team=edge"}},
	{name: "istio-cni", dir: "charts/istio-cni", upgrade: []string{"--set", "global.logging.level=debug"}},
	{name: "ztunnel", dir: "charts/ztunnel", upgrade: []string{"--set", "logLevel=debug"}},
	// Of its two subcharts, grafana is turned on (a dashboard ConfigMap
	// built with tpl and .Files.Glob) and crds off: an apiserver can take
	// minutes to delete CRDs made seconds before ("could not list
	// instances: storage is (re)initializing"), and uninstall --wait failed
	// on them in two runs of four. The upgrade changes an object of the
	// subchart and one of the parent. kyverno's admission webhooks are not
	// in the chart: its controller registers them when it runs, and kwok's
	// pods run nothing. Its four controllers' RBAC is off (they run as the
	// namespace's default service account): each has an aggregated
	// ClusterRole, and when uninstall deletes ClusterRoles,
	// kube-controller-manager's clusterrole-aggregation controller, syncing
	// from its cache, force-applies a deleted one again (no rules, no
	// owner), so uninstall --wait failed, for helm 4 as for us, in two runs
	// of six.
	{name: "kyverno", dir: "charts/kyverno",
		flags: []string{
			"--set", "grafana.enabled=true", "--set", "crds.install=false",
			"--set", "admissionController.rbac.create=false", "--set", "admissionController.rbac.serviceAccount.name=default",
			"--set", "backgroundController.rbac.create=false", "--set", "backgroundController.rbac.serviceAccount.name=default",
			"--set", "cleanupController.rbac.create=false", "--set", "cleanupController.rbac.serviceAccount.name=default",
			"--set", "reportsController.rbac.create=false", "--set", "reportsController.rbac.serviceAccount.name=default",
		},
		upgrade: []string{"--set", "grafana.labels.team=policy", "--set", "metricsConfig.metricsRefreshInterval=24h"}},
}

// TestParityWithHelm4: on every chart of the corpus, with no injector,
// (1) `helm-inject template` prints the bytes helm 4's `helm template`
// prints; (2) the manifest and hooks `apply` stores are the ones helm 4's
// `install` stores, byte for byte, with hooks run and with --no-hooks;
// (3) after the apply, `diff upgrade` with a changed value names exactly
// the objects helm 4's own `upgrade` then changes, adds and removes, each
// with the document helm 4 stores (with --no-hooks on both sides).
//
// It is not parallel: some charts register admission webhooks that fail
// closed (gatekeeper's on namespaces, ingress-nginx's on Ingresses) and
// whose service never runs here; each release is uninstalled, waiting
// for its objects to go, before the next test starts. Hooks run here:
// kwok completes the pods of hook Jobs (and bare hook pods) once they are
// scheduled (internal/testenv/kwok-stages.yaml), though no image runs.
func TestParityWithHelm4(t *testing.T) {
	share := filepath.Join(filepath.Dir(cluster.ToolsBin), "share")
	h4 := command{}
	for _, c := range parityCorpus {
		t.Run(c.name, func(t *testing.T) {
			chart := filepath.Join(share, c.dir)
			ns := namespace(t)
			rel := "p-" + c.name
			flags := slices.Clone(c.flags)
			for _, key := range c.nsValues {
				flags = append(flags, "--set", key+"="+ns)
			}
			with := func(args ...string) []string {
				return append(append(args, chart, "-n", ns), flags...)
			}

			// (1) template.
			want := h4.mustRun(t, helm4Bin(t), with("template", rel)...).stdout
			got := mustHelmInject(t, with("template", rel)...).stdout
			if got != want {
				t.Errorf("helm-inject template differs from helm 4's:\n%s", firstDifference(want, got))
			}

			// (2) the stored manifest and hooks: first with the hooks run,
			// each release uninstalled after; then with --no-hooks, apply's
			// release kept for (3).
			storedParity(t, rel, ns, with, false, nil)
			h4.mustRun(t, helm4Bin(t), with("install", rel, "--no-hooks")...)
			want = h4.mustRun(t, helm4Bin(t), "get", "manifest", rel, "-n", ns).stdout
			wantHooks := h4.mustRun(t, helm4Bin(t), "get", "hooks", rel, "-n", ns).stdout
			h4.mustRun(t, helm4Bin(t), "uninstall", rel, "-n", ns, "--no-hooks", "--wait", "--timeout", "2m")
			mustHelmInject(t, with("apply", rel, "--no-hooks")...)
			// The next chart's namespace is created only once this
			// release's webhooks are gone, whatever the outcome.
			uninstallOnCleanup(t, rel, ns)
			before := h4.mustRun(t, helm4Bin(t), "get", "manifest", rel, "-n", ns).stdout
			if before != want {
				t.Errorf("the manifest apply stored differs from helm 4 install's:\n%s", firstDifference(want, before))
			}
			if hooks := h4.mustRun(t, helm4Bin(t), "get", "hooks", rel, "-n", ns).stdout; hooks != wantHooks {
				t.Errorf("the hooks apply stored differ from helm 4 install's:\n%s", firstDifference(wantHooks, hooks))
			}

			// (3) diff predicts helm 4's upgrade.
			d := mustHelmInject(t, append(with("diff", "upgrade", rel, "--no-hooks", "--output", "json"), c.upgrade...)...)
			var predicted struct {
				Changes []struct {
					Change string `json:"change"`
					Kind   string `json:"kind"`
					Name   string `json:"name"`
					Hook   bool   `json:"hook"`
					After  string `json:"after"`
				} `json:"changes"`
			}
			if err := json.Unmarshal([]byte(d.stdout), &predicted); err != nil {
				t.Fatalf("diff -o json: %v\n%s", err, d.stdout)
			}
			h4.mustRun(t, helm4Bin(t), append(with("upgrade", rel, "--no-hooks"), c.upgrade...)...)
			after := h4.mustRun(t, helm4Bin(t), "get", "manifest", rel, "-n", ns).stdout
			old, now := objectsOf(t, before), objectsOf(t, after)
			var wantChanges, gotChanges []string
			for key, o := range now {
				switch p, ok := old[key]; {
				case !ok:
					wantChanges = append(wantChanges, "added "+key)
				case !reflect.DeepEqual(p, o):
					wantChanges = append(wantChanges, "changed "+key)
				}
			}
			for key := range old {
				if _, ok := now[key]; !ok {
					wantChanges = append(wantChanges, "removed "+key)
				}
			}
			for _, ch := range predicted.Changes {
				if ch.Hook {
					continue
				}
				key := ch.Kind + "/" + ch.Name
				gotChanges = append(gotChanges, ch.Change+" "+key)
				// What diff shows as the new document is what helm 4 stored
				// (Secrets' values are masked in a diff, so not compared).
				if ch.Change != "removed" && ch.Kind != "Secret" {
					if o, ok := now[key]; ok && !reflect.DeepEqual(o, objectsOf(t, ch.After)[key]) {
						t.Errorf("%s: diff shows another new document than helm 4's upgrade stores:\n%s", key, ch.After)
					}
				}
			}
			slices.Sort(wantChanges)
			slices.Sort(gotChanges)
			if len(wantChanges) == 0 {
				t.Fatalf("the upgrade (%s) changed nothing: the case tests nothing", strings.Join(c.upgrade, " "))
			}
			if !slices.Equal(wantChanges, gotChanges) {
				t.Errorf("diff upgrade %s predicted\n  %s\nhelm 4's upgrade did\n  %s", strings.Join(c.upgrade, " "),
					strings.Join(gotChanges, "\n  "), strings.Join(wantChanges, "\n  "))
			}
		})
	}
}

// storedCases are the installs issue 57 reported as storing another
// manifest than helm 4's install, beside the corpus's own flags.
var storedCases = []struct {
	name, dir string
	flags     []string
	// generated: the chart makes a new CA and certificates with genCA on
	// every render, which no two installs share, helm 4's included.
	generated bool
}{
	// The CRDs are templates, kept on uninstall (helm.sh/resource-policy).
	{name: "cert-manager-crds", dir: "charts/cert-manager", flags: []string{"--set", "crds.enabled=true"}},
	// Null chart defaults guarded by hasKey (debug.verbose,
	// policyCIDRMatchMode, nodePort.addresses, k8s.apiServerURLs): helm 4
	// renders none of them (helm 3 did).
	{name: "cilium-k8s-service", dir: "charts/cilium", flags: []string{"--set", "k8sServiceHost=10.0.0.1", "--set", "k8sServicePort=6443"}, generated: true},
}

// TestParityWithHelm4StoredManifests: for each of storedCases, with hooks
// run and with --no-hooks, the manifest and hooks apply stores are the
// bytes helm 4's install stores (generated certificates aside). Each case
// installs one release name in one namespace, so the CRDs an uninstall
// keeps belong to the next install too; they are deleted at the end.
func TestParityWithHelm4StoredManifests(t *testing.T) {
	share := filepath.Join(filepath.Dir(cluster.ToolsBin), "share")
	for _, c := range storedCases {
		t.Run(c.name, func(t *testing.T) {
			ns := namespace(t)
			t.Cleanup(func() { removeKeptCRDs(t, ns) })
			with := func(args ...string) []string {
				return append(append(args, filepath.Join(share, c.dir), "-n", ns), c.flags...)
			}
			var mask func(string) string
			if c.generated {
				mask = maskGenerated
			}
			for _, noHooks := range []bool{false, true} {
				t.Run(map[bool]string{false: "hooks", true: "no-hooks"}[noHooks], func(t *testing.T) {
					storedParity(t, "s-"+c.name, ns, with, noHooks, mask)
				})
			}
		})
	}
}

// storedParity installs a chart (with(verb, rel) is the command line)
// with helm 4's install, then with apply, and fails t unless both stored
// the same manifest and hooks (`helm get manifest`, `helm get hooks`),
// compared after mask when it is set. Each release is uninstalled before
// the next step; what an uninstall keeps (helm.sh/resource-policy) the
// next install of the same release adopts.
func storedParity(t *testing.T, rel, ns string, with func(args ...string) []string, noHooks bool, mask func(string) string) {
	t.Helper()
	h4 := command{}
	var hookFlags []string
	if noHooks {
		hookFlags = []string{"--no-hooks"}
	}
	read := func() (manifest, hooks string) {
		manifest = h4.mustRun(t, helm4Bin(t), "get", "manifest", rel, "-n", ns).stdout
		hooks = h4.mustRun(t, helm4Bin(t), "get", "hooks", rel, "-n", ns).stdout
		h4.mustRun(t, helm4Bin(t), append([]string{"uninstall", rel, "-n", ns, "--wait", "--timeout", "2m"}, hookFlags...)...)
		if mask != nil {
			return mask(manifest), mask(hooks)
		}
		return manifest, hooks
	}
	h4.mustRun(t, helm4Bin(t), append(with("install", rel), hookFlags...)...)
	wantManifest, wantHooks := read()
	mustHelmInject(t, append(with("apply", rel), hookFlags...)...)
	manifest, hooks := read()
	what := "with hooks"
	if noHooks {
		what = "with --no-hooks"
	}
	if manifest != wantManifest {
		t.Errorf("%s, the manifest apply stored differs from helm 4 install's:\n%s", what, firstDifference(wantManifest, manifest))
	}
	if hooks != wantHooks {
		t.Errorf("%s, the hooks apply stored differ from helm 4 install's:\n%s", what, firstDifference(wantHooks, hooks))
	}
}

// removeKeptCRDs deletes the CustomResourceDefinitions that uninstalls of
// releases in ns kept (helm.sh/resource-policy: keep). It does not wait
// for them to go: the API server may hold a CRD deleted just after it was
// created for minutes ("could not list instances: storage is
// (re)initializing", its finalizer retrying), and no other test uses
// these kinds.
func removeKeptCRDs(t *testing.T, ns string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dc, err := dynamic.NewForConfig(cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	crds := dc.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	list, err := crds.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range list.Items {
		if crd.GetAnnotations()["meta.helm.sh/release-namespace"] == ns {
			if err := crds.Delete(ctx, crd.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting the CRD %s kept by an uninstall: %v", crd.GetName(), err)
			}
		}
	}
}

// generatedPEM is the base64 PEM value of a key in a Secret's data (or a
// caBundle) that a chart generates on every render (genCA, genPrivateKey,
// genSignedCert).
var generatedPEM = regexp.MustCompile(`(?m)^(\s+[\w.-]+:\s+)LS0tLS1CRUdJTi[A-Za-z0-9+/=]*$`)

// maskGenerated replaces each generated PEM value of a manifest stream,
// keeping every other byte.
func maskGenerated(stream string) string {
	return generatedPEM.ReplaceAllString(stream, "${1}<generated PEM>")
}

// objectsOf decodes a manifest stream into its objects by KIND/NAME.
func objectsOf(t *testing.T, stream string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(stream), 4096)
	for {
		var o map[string]any
		if err := dec.Decode(&o); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatalf("decoding a manifest: %v", err)
		}
		if o == nil {
			continue
		}
		md, _ := o["metadata"].(map[string]any)
		out[fmt.Sprintf("%v/%v", o["kind"], md["name"])] = o
	}
}

// firstDifference shows the first line where got departs from want, with
// the lines around it, and each one's bytes quoted (white space matters).
func firstDifference(want, got string) string {
	w, g := strings.SplitAfter(want, "\n"), strings.SplitAfter(got, "\n")
	i := 0
	for i < len(w) && i < len(g) && w[i] == g[i] {
		i++
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "first difference at line %d (want %d lines, got %d):\n", i+1, len(w), len(g))
	for j := max(0, i-3); j < i+3; j++ {
		var wl, gl string
		if j < len(w) {
			wl = w[j]
		}
		if j < len(g) {
			gl = g[j]
		}
		fmt.Fprintf(&b, "  %4d want %q\n       got  %q\n", j+1, wl, gl)
	}
	return b.String()
}
