package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/release/common"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
)

// deployedFresh is a cluster with release shop (shopRelease) and release
// fresh in prod, deployed exactly as apply would install the api chart
// with its defaults (the release apply --dry-run -o json prints).
func deployedFresh(t *testing.T) (c *fakeCluster, kubeconfig string) {
	t.Helper()
	c = newFakeCluster(t)
	c.addRelease(shopRelease("shop", "prod"))
	kubeconfig = c.kubeconfig()
	out, errOut, code := runCLI(t, "apply", "fresh", apiChart, "-n", "prod", "--kubeconfig", kubeconfig, "--dry-run", "-o", "json")
	var rel helmrelease.Release
	if err := json.Unmarshal([]byte(out), &rel); err != nil || code != 0 {
		t.Fatalf("apply --dry-run -o json: exit %d, %v: %s", code, err, errOut)
	}
	rel.Info.Status = common.StatusDeployed
	c.addRelease(&rel)
	return c, kubeconfig
}

// TestDiffAgainstTheRelease: diff compares what apply would install with
// the deployed revision: nothing printed and exit 0 when nothing changes
// (with --detailed-exitcode too); a changed value shows the changed lines
// and, with --detailed-exitcode, exits 2; a release that does not exist is
// an error unless --allow-unreleased or --install, which show every
// resource as added.
func TestDiffAgainstTheRelease(t *testing.T) {
	_, kubeconfig := deployedFresh(t)
	for _, tt := range []struct {
		name string
		args []string
		code int
		out  string // the whole stdout, or with a trailing "..." its start
		err  string
	}{
		// This API server holds the release records and no object of
		// them: read, the cluster shows every object missing, which an
		// apply would create again.
		{"unchanged, the objects missing from the cluster", []string{"fresh", "--detailed-exitcode"}, 2,
			"drift: Secret fresh-db (namespace prod): missing from the cluster; apply creates it again\n" +
				"drift: ConfigMap fresh-config (namespace prod): missing from the cluster; apply creates it again\n" +
				"drift: Deployment fresh: missing from the cluster; apply creates it again\n", ""},
		{"unchanged, the record trusted", []string{"fresh", "--detailed-exitcode", "--skip-live-check"}, 0, "", ""},
		{"unchanged, diff upgrade", []string{"upgrade", "fresh", "--skip-live-check"}, 0, "", ""},
		{"a value changed", []string{"fresh", "--set", "logLevel=debug", "--detailed-exitcode", "-C", "0"}, 2,
			"the release values change (see helm get values)\n" +
				"prod, fresh-config, ConfigMap (v1) has changed:\n@@ -6 +6 @@\n-  logLevel: \"info\"\n+  logLevel: \"debug\"\n" +
				"prod, fresh, Deployment (apps/v1) has changed:\n@@ -19 +19 @@\n-              value: \"info\"\n+              value: \"debug\"\n", ""},
		{"a value changed, without --detailed-exitcode", []string{"fresh", "--set", "logLevel=debug", "--output", "simple"}, 0,
			"the release values change (see helm get values)\nprod, fresh-config, ConfigMap (v1) has changed:\nprod, fresh, Deployment (apps/v1) has changed:\n", ""},
		{"a new release", []string{"upgrade", "web", "--detailed-exitcode"}, 1, "",
			"Error: release \"web\" does not exist in namespace \"prod\"; use --allow-unreleased to see it as new\n"},
		{"a new release, --allow-unreleased", []string{"upgrade", "web", "--allow-unreleased", "--detailed-exitcode", "--output", "simple"}, 2,
			"the release does not exist yet: apply installs it\nprod, web-db, Secret (v1) has been added:\nprod, web-config, ConfigMap (v1) has been added:\nprod, web, Deployment (apps/v1) has been added:\n...", ""},
		{"a new release, --install", []string{"web", "--install", "--output", "simple", "--suppress-secrets"}, 0,
			"the release does not exist yet: apply installs it\nprod, web-config, ConfigMap (v1) has been added:\nprod, web, Deployment (apps/v1) has been added:\n...", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"diff"}, tt.args...)
			// The chart follows the release name.
			for i, a := range args {
				if a == "fresh" || a == "web" {
					args = append(args[:i+1], append([]string{apiChart}, args[i+1:]...)...)
					break
				}
			}
			out, errOut, code := runCLI(t, append(args, "-n", "prod", "--kubeconfig", kubeconfig)...)
			match := out == tt.out
			if start, ok := strings.CutSuffix(tt.out, "..."); ok {
				match = strings.HasPrefix(out, start)
			}
			if code != tt.code || !match || errOut != tt.err {
				t.Errorf("exit %d, stdout\n%q\nstderr %q\nwant exit %d, stdout\n%q\nstderr %q", code, out, errOut, tt.code, tt.out, tt.err)
			}
		})
	}
}

// TestDiffOutputOptions: diff's --output json is the changes as JSON,
// --color colors a diff even off a terminal, --no-color wins over it, and
// a diff to a buffer is not colored.
func TestDiffOutputOptions(t *testing.T) {
	_, kubeconfig := deployedFresh(t)
	diff := func(args ...string) string {
		t.Helper()
		out, errOut, code := runCLI(t, append([]string{"diff", "fresh", apiChart, "-n", "prod", "--kubeconfig", kubeconfig, "--set", "logLevel=debug"}, args...)...)
		if code != 0 {
			t.Fatalf("diff %v: exit %d: %s", args, code, errOut)
		}
		return out
	}
	var res struct {
		Release string `json:"release"`
		Changes []struct {
			Change string `json:"change"`
			Kind   string `json:"kind"`
			Name   string `json:"name"`
			After  string `json:"after"`
		} `json:"changes"`
	}
	out := diff("--output", "json")
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Release != "fresh" || len(res.Changes) != 2 ||
		res.Changes[0].Change != "changed" || res.Changes[0].Kind != "ConfigMap" || res.Changes[0].Name != "fresh-config" ||
		!strings.Contains(res.Changes[0].After, `logLevel: "debug"`) {
		t.Errorf("--output json (%v):\n%s", err, out)
	}
	if out := diff("--color"); !strings.Contains(out, "\x1b[31m-  logLevel: \"info\"\x1b[0m") || !strings.Contains(out, "\x1b[32m+  logLevel: \"debug\"\x1b[0m") {
		t.Errorf("--color: the changed lines are not red and green:\n%q", out)
	}
	for _, args := range [][]string{nil, {"--color", "--no-color"}} {
		if out := diff(args...); strings.Contains(out, "\x1b[") || !strings.Contains(out, "-  logLevel: \"info\"\n") {
			t.Errorf("diff %v colored the output, or lost it:\n%q", args, out)
		}
	}
}

// TestDiffDetailedExitCodeThroughTheCommandTree: diff's exit code 2 for
// changes reaches a caller of the command tree as an error reading
// "exit status 2", after the diff is printed.
func TestDiffDetailedExitCodeThroughTheCommandTree(t *testing.T) {
	_, kubeconfig := deployedFresh(t)
	var out, errb bytes.Buffer
	root := newRootCommand(strings.NewReader(""), &out, &errb)
	root.SetArgs([]string{"diff", "fresh", apiChart, "-n", "prod", "--kubeconfig", kubeconfig, "--set", "image=registry.example/api:3.2", "--detailed-exitcode", "--output", "simple"})
	err := root.ExecuteContext(t.Context())
	var ee exitError
	if !errors.As(err, &ee) || ee.code != 2 || err.Error() != "exit status 2" {
		t.Errorf("error %v; want exit status 2", err)
	}
	if !strings.Contains(out.String(), "prod, fresh, Deployment (apps/v1) has changed:\n") {
		t.Errorf("the diff was not printed:\n%s%s", out.String(), errb.String())
	}
}
