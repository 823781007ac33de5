package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
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

// parityCorpus: twelve charts of eight projects (cert-manager,
// metrics-server, descheduler, sealed-secrets, node-feature-discovery,
// ingress-nginx, gatekeeper, cilium) and five of istio's.
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
}

// TestParityWithHelm4: on every chart of the corpus, with no injector,
// (1) `helm-inject template` prints the bytes helm 4's `helm template`
// prints; (2) the manifest `apply` stores is the one helm 4's `install`
// stores, byte for byte; (3) after the apply, `diff upgrade` with a
// changed value names exactly the objects helm 4's own `upgrade` then
// changes, adds and removes, each with the document helm 4 stores.
//
// It is not parallel: some charts register admission webhooks that fail
// closed (gatekeeper's on namespaces, ingress-nginx's on Ingresses) and
// whose service never runs here; each release is uninstalled, waiting
// for its objects to go, before the next test starts. Hooks are left out
// (--no-hooks on both sides): their Jobs need images that never run here,
// and a release's manifest holds no hook.
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

			// (2) the stored manifest.
			h4.mustRun(t, helm4Bin(t), with("install", rel, "--no-hooks")...)
			want = h4.mustRun(t, helm4Bin(t), "get", "manifest", rel, "-n", ns).stdout
			h4.mustRun(t, helm4Bin(t), "uninstall", rel, "-n", ns, "--no-hooks", "--wait", "--timeout", "2m")
			mustHelmInject(t, with("apply", rel, "--no-hooks")...)
			// The next chart's namespace is created only once this
			// release's webhooks are gone, whatever the outcome.
			bin := helm4Bin(t)
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
				defer cancel()
				cmd := exec.CommandContext(ctx, bin, "uninstall", rel, "-n", ns, "--no-hooks", "--wait", "--timeout", "2m")
				cmd.Env = os.Environ()
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Errorf("helm uninstall %s: %v\n%s", rel, err, out)
				}
			})
			before := h4.mustRun(t, helm4Bin(t), "get", "manifest", rel, "-n", ns).stdout
			if before != want {
				t.Errorf("the manifest apply stored differs from helm 4 install's:\n%s", firstDifference(want, before))
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
