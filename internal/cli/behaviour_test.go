package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/release/common"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"

	"github.com/helm-inject/helm-inject/inject"
	"github.com/helm-inject/helm-inject/internal/testfs"
	"github.com/helm-inject/helm-inject/release"
)

// TestPrintRelease: what apply prints after an install or upgrade, as
// helm does: the status with the notes (not with --hide-notes); an apply
// that made no revision says so and nothing else; a dry run prints the
// manifest, its Secrets as a comment with --hide-secret; -o json prints
// helm's release object.
func TestPrintRelease(t *testing.T) {
	rel := func() *helmrelease.Release {
		return &helmrelease.Release{
			Name: "shop", Namespace: "prod", Version: 3,
			Info:  &helmrelease.Info{Status: common.StatusDeployed, Notes: "Visit http://shop.example"},
			Chart: &chart.Chart{Metadata: &chart.Metadata{Name: "api", Version: "0.9.0"}},
			Manifest: "---\n# Source: api/templates/secret.yaml\napiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: hunter2\n" +
				"---\n# Source: api/templates/config.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  level: info\n",
		}
	}
	print := func(res *release.Result, o printReleaseOptions) string {
		t.Helper()
		var out bytes.Buffer
		if err := printRelease(&out, res, o); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}

	upgraded := "Release \"shop\" has been upgraded.\nNAME: shop\nNAMESPACE: prod\nSTATUS: deployed\nREVISION: 3\nCHART: api-0.9.0\nNOTES:\nVisit http://shop.example\n"
	if got := print(&release.Result{Release: rel()}, printReleaseOptions{}); got != upgraded {
		t.Errorf("an upgrade:\n%s\nwant:\n%s", got, upgraded)
	}
	// --hide-notes: the same without the notes.
	noNotes := "Release \"shop\" has been upgraded.\nNAME: shop\nNAMESPACE: prod\nSTATUS: deployed\nREVISION: 3\nCHART: api-0.9.0\n"
	if got := print(&release.Result{Release: rel()}, printReleaseOptions{hideNotes: true}); got != noNotes {
		t.Errorf("--hide-notes:\n%s\nwant:\n%s", got, noNotes)
	}
	if got := print(&release.Result{Release: rel(), Installed: true}, printReleaseOptions{}); !strings.HasPrefix(got, "Release \"shop\" has been installed.\n") {
		t.Errorf("an install: %s", got)
	}
	// No revision made: a user must not read "upgraded", and reads
	// whether the cluster was looked at.
	for _, tt := range []struct {
		res  release.Result
		want string
	}{
		{release.Result{Unchanged: true, LiveChecked: true}, "Release \"shop\" has no changes; the cluster matches revision 3.\n"},
		{release.Result{Unchanged: true, LiveChecked: true, Waited: true}, "Release \"shop\" has no changes; the cluster matches revision 3, and its resources are ready.\n"},
		{release.Result{Unchanged: true}, "Release \"shop\" has no changes; it stays at revision 3 (the cluster was not read: --skip-live-check).\n"},
	} {
		tt.res.Release = rel()
		if got := print(&tt.res, printReleaseOptions{}); got != tt.want {
			t.Errorf("an apply that changes nothing (%+v): %q, want %q", tt.res, got, tt.want)
		}
	}
	// An upgrade of an unchanged chart that takes drift back says so.
	drifted := print(&release.Result{Release: rel(), Drift: []release.ObjectDrift{{Kind: "ConfigMap", Name: "shop-config", Namespace: "prod", Missing: true}}}, printReleaseOptions{})
	if want := "The chart has not changed, but the cluster differed from revision 2:\n  ConfigMap shop-config (namespace prod): missing from the cluster; apply creates it again\nRelease \"shop\" has been upgraded.\n"; !strings.HasPrefix(drifted, want) {
		t.Errorf("an upgrade taking drift back:\n%s\nwant it to start:\n%s", drifted, want)
	}
	// --dry-run prints the manifest; --hide-secret keeps the Secret's
	// value out of it.
	dry := print(&release.Result{Release: rel()}, printReleaseOptions{dryRun: true})
	if !strings.HasPrefix(dry, "Release \"shop\" would be upgraded (dry run). Manifest:\n") || !strings.Contains(dry, "password: hunter2") {
		t.Errorf("--dry-run: %s", dry)
	}
	hidden := print(&release.Result{Release: rel()}, printReleaseOptions{dryRun: true, hideSecret: true})
	if strings.Contains(hidden, "hunter2") || !strings.Contains(hidden, "level: info") {
		t.Errorf("--dry-run --hide-secret printed the Secret's value, or lost the ConfigMap:\n%s", hidden)
	}
	// -o json is helm's release object: .name, .version, .info.status.
	var obj struct {
		Name    string `json:"name"`
		Version int    `json:"version"`
		Info    struct {
			Status string `json:"status"`
		} `json:"info"`
	}
	out := print(&release.Result{Release: rel()}, printReleaseOptions{output: "json"})
	if err := json.Unmarshal([]byte(out), &obj); err != nil || obj.Name != "shop" || obj.Version != 3 || obj.Info.Status != "deployed" {
		t.Errorf("-o json (%v): %s", err, out)
	}
}

// TestApplyRefusesBeforeTheCluster: flags apply cannot honour are refused
// before the chart is read or a cluster asked (the chart here does not
// exist, and neither does the kubeconfig): --hide-secret without
// --dry-run, as helm refuses it, and an unknown -o (the release would be
// installed and then not printed).
func TestApplyRefusesBeforeTheCluster(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--hide-secret"}, "--hide-secret needs --dry-run (as in helm)"},
		{[]string{"-o", "xml"}, `unknown output format "xml" (want table, json or yaml)`},
	} {
		for _, verb := range []string{"apply", "upgrade"} {
			_, errOut, code := runCLI(t, append([]string{verb, "web", "./no-such-chart", "--kubeconfig", "/nonexistent"}, tt.args...)...)
			if code != 1 || !strings.Contains(errOut, tt.want) || strings.Contains(errOut, "no-such-chart") || strings.Contains(errOut, "kubeconfig") {
				t.Errorf("%s %v: exit %d, stderr %q; want 1 and %q first", verb, tt.args, code, errOut, tt.want)
			}
		}
	}
}

// TestVersionShort: version --short prints the version number alone, on
// one line (a script comparing it would otherwise read the whole line).
func TestVersionShort(t *testing.T) {
	js, _, code := runCLI(t, "version", "-o", "json")
	var v struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal([]byte(js), &v); code != 0 || err != nil || v.Version == "" {
		t.Fatalf("version -o json: exit %d, %v: %s", code, err, js)
	}
	out, errOut, code := runCLI(t, "version", "--short")
	if code != 0 || out != v.Version+"\n" {
		t.Errorf("version --short: exit %d, %q; want %q: %s", code, out, v.Version+"\n", errOut)
	}
	if out, _, _ := runCLI(t, "version"); !strings.HasPrefix(out, "helm-inject "+v.Version+" (") {
		t.Errorf("version: %q", out)
	}
}

// TestTemplateNamespace: template renders in the namespace -n names, as
// helm template does (.Release.Namespace); a user would otherwise get
// manifests for another namespace.
func TestTemplateNamespace(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ns")
	testfs.Write(t, dir, map[string]string{
		"Chart.yaml":          "apiVersion: v2\nname: ns\nversion: 0.1.0\n",
		"templates/ns.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: where\ndata:\n  namespace: {{ .Release.Namespace | quote }}\n",
		"templates/none.yaml": "# nothing\n",
	})
	for _, flag := range []string{"-n", "--namespace"} {
		out, errOut, code := runCLI(t, "template", "r", dir, flag, "shop")
		if code != 0 || !strings.Contains(out, `namespace: "shop"`) {
			t.Errorf("template %s shop: exit %d, want namespace \"shop\":\n%s%s", flag, code, out, errOut)
		}
	}
}

// TestTemplateDryRunServerAsksTheCluster: template --dry-run=server
// renders with the cluster's capabilities (the fake API server says
// v1.33.0), as helm template does; --dry-run=client renders offline with
// helm's default version, and asks no cluster.
func TestTemplateDryRunServerAsksTheCluster(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "kube")
	testfs.Write(t, dir, map[string]string{
		"Chart.yaml":          "apiVersion: v2\nname: kube\nversion: 0.1.0\n",
		"templates/kube.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kube\ndata:\n  version: {{ .Capabilities.KubeVersion.Version | quote }}\n",
	})
	c := newFakeCluster(t)
	kubeconfig := c.kubeconfig()
	out, errOut, code := runCLI(t, "template", "r", dir, "--dry-run=server", "--kubeconfig", kubeconfig)
	if code != 0 || !strings.Contains(out, `version: "v1.33.0"`) {
		t.Errorf("template --dry-run=server: exit %d, want the cluster's v1.33.0:\n%s%s", code, out, errOut)
	}
	offline := newFakeCluster(t)
	out, errOut, code = runCLI(t, "template", "r", dir, "--dry-run=client", "--kubeconfig", offline.kubeconfig())
	if code != 0 || strings.Contains(out, "v1.33.0") || !strings.Contains(out, "version: ") {
		t.Errorf("template --dry-run=client: exit %d, want helm's default version:\n%s%s", code, out, errOut)
	}
	if offline.requested("/version") {
		t.Error("template --dry-run=client asked the cluster")
	}
}

// TestInjectorVersionByProgramName: --injector-version PROGRAM=COMMAND
// applies to an injector whose program is named PROGRAM, also when the
// injector gives it by path (/usr/local/bin/istioctl).
func TestInjectorVersionByProgramName(t *testing.T) {
	for _, verb := range []string{"apply", "diff"} {
		cmd, in := releaseCommands()[verb]()
		l := parsed(t, cmd, in,
			"--injector", "/usr/local/bin/istioctl kube-inject f=FILE",
			"--inject", "sidecar-injector FILE",
			"--injector-version", "istioctl=istioctl version --remote=false")
		specs := l.inputs.Injectors.Specs
		if len(specs) != 2 {
			t.Fatalf("%s: %d injectors", verb, len(specs))
		}
		if c, ok := specs[0].(*inject.Command); !ok || !cmp.Equal(c.VersionArgv, []string{"istioctl", "version", "--remote=false"}) {
			t.Errorf("%s: /usr/local/bin/istioctl's version command: %#v", verb, specs[0])
		}
		if c, ok := specs[1].(*inject.Command); !ok || c.VersionArgv != nil {
			t.Errorf("%s: sidecar-injector got a version command: %#v", verb, specs[1])
		}
	}
}

// TestWithFlagsChecked: --with-set for an injector no --with names (a
// typo the user would never notice: the sidecar keeps its default) and
// the same built-in injector given twice are refused, naming the flag,
// before anything renders.
func TestWithFlagsChecked(t *testing.T) {
	base := []string{"template", "r", apiChart, "--injector-library", "../../examples/injectors", "--with", "log-shipper@1.0.0"}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--with-set", "log-shiper.destination=logs:24224"}, "--with-set log-shiper...: no --with log-shiper"},
		{[]string{"--with", "log-shipper@^1"}, "--with log-shipper@^1: injector log-shipper is given twice"},
	} {
		out, errOut, code := runCLI(t, append(slicesClone(base), tt.args...)...)
		if code != 1 || !strings.Contains(errOut, tt.want) || out != "" {
			t.Errorf("%v: exit %d, stderr %q; want 1 and %q", tt.args, code, errOut, tt.want)
		}
	}
}

// TestPostRenderNamespace: the injectors post-render runs get the
// namespace helm gives a post-renderer (HELM_NAMESPACE) as
// HELM_INJECT_NAMESPACE, as apply's injectors get the release's.
func TestPostRenderNamespace(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ns.sh")
	if err := os.WriteFile(marker, []byte("#!/bin/sh\nsed \"s/^kind: \\(.*\\)/kind: \\1\\n# namespace=$HELM_INJECT_NAMESPACE/\"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HELM_NAMESPACE", "shop")
	t.Setenv("HELM_INJECT_NAMESPACE", "")
	var out, errb bytes.Buffer
	code := Run(context.Background(), []string{"post-render", "--inject", marker}, strings.NewReader("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n"), &out, &errb)
	if code != 0 || !strings.Contains(out.String(), "# namespace=shop\n") {
		t.Errorf("post-render with HELM_NAMESPACE=shop: exit %d, want # namespace=shop:\n%s%s", code, out.String(), errb.String())
	}
}
