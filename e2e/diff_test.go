package e2e

import (
	"encoding/json"
	"strings"
	"testing"
)

const apiChart = "fixtures/charts/api"

// TestDiff checks diff against real releases: nothing to show after an
// apply with identical inputs (and apply then makes no revision), only the
// changed fields of the changed resources after a value change, masked
// Secrets, new releases with --allow-unreleased, and JSON output.
func TestDiff(t *testing.T) {
	ns := namespace(t)
	inj := []string{"-n", ns, "--injector", "sidecar-injector f=FILE"}
	args := func(cmd string, extra ...string) []string {
		return append(append([]string{cmd, "api", apiChart}, inj...), extra...)
	}
	mustHelmInject(t, args("apply")...)

	// 1. Identical inputs: empty diff, exit 0; apply makes no revision.
	r := helmInject(t, args("diff", "--detailed-exitcode")...)
	if r.code != 0 || r.stdout != "" {
		t.Fatalf("diff with identical inputs:\n%s", r)
	}
	if out := mustHelmInject(t, args("apply")...).stdout; !strings.Contains(out, `Release "api" has no changes; the cluster matches revision 1.`) {
		t.Errorf("apply with identical inputs said:\n%s", out)
	}
	if revs := revisions(t, "api", ns); len(revs) != 1 {
		t.Errorf("history after a no-op apply = %v, want [1]", revs)
	}
	// --force-upgrade upgrades anyway.
	mustHelmInject(t, args("apply", "--force-upgrade")...)
	if revs := revisions(t, "api", ns); len(revs) != 2 {
		t.Errorf("history after --force-upgrade = %v, want [1 2]", revs)
	}

	// 2. One value: only its lines, in the resources that use it; exit 2.
	r = helmInject(t, append(append([]string{"diff", "upgrade", "api", apiChart}, inj...), "--detailed-exitcode", "--no-color", "--set", "logLevel=debug")...)
	if r.code != 2 {
		t.Fatalf("diff with a change, --detailed-exitcode: %s", r)
	}
	headers := []string{}
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.HasSuffix(l, "has changed:") || strings.Contains(l, "has been") {
			headers = append(headers, l)
		}
	}
	want := []string{ns + ", api-config, ConfigMap (v1) has changed:", ns + ", api, Deployment (apps/v1) has changed:"}
	if strings.Join(headers, "\n") != strings.Join(want, "\n") {
		t.Errorf("changed resources:\n%s\nwant:\n%s", strings.Join(headers, "\n"), strings.Join(want, "\n"))
	}
	for _, line := range []string{`-  logLevel: "info"`, `+  logLevel: "debug"`, `-              value: "info"`, `+              value: "debug"`} {
		if !strings.Contains(r.stdout, line+"\n") {
			t.Errorf("diff lacks line %q:\n%s", line, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "\x1b[") {
		t.Errorf("--no-color output has escape codes")
	}
	// A changed hook shows too.
	r = helmInject(t, args("diff", "--include-tests", "--set", "testImage=registry.example/curl:9")...)
	if !strings.Contains(r.stdout, ns+", api-smoke, Pod (v1) has changed: (hook)") || !strings.Contains(r.stdout, "+      image: registry.example/curl:9") {
		t.Errorf("hook change not shown:\n%s", r)
	}
	// diff wrote nothing.
	if revs := revisions(t, "api", ns); len(revs) != 2 {
		t.Errorf("diff changed the history: %v", revs)
	}

	// 3. Secrets are masked unless --show-secrets.
	r = helmInject(t, args("diff", "--set", "password=hunter2")...)
	if !strings.Contains(r.stdout, "-  password: '-------- # (6 bytes)'") || !strings.Contains(r.stdout, "+  password: '++++++++ # (7 bytes)'") ||
		strings.Contains(r.stdout, "aHVudGVyMg==") {
		t.Errorf("masked secret diff:\n%s", r.stdout)
	}
	r = helmInject(t, args("diff", "--set", "password=hunter2", "--show-secrets")...)
	if !strings.Contains(r.stdout, "+  password: aHVudGVyMg==") {
		t.Errorf("--show-secrets diff:\n%s", r.stdout)
	}
	// --suppress-secrets hides them from the output, but an apply would
	// still change them, and the exit code says so.
	if r = helmInject(t, args("diff", "--set", "password=hunter2", "--suppress-secrets", "--detailed-exitcode")...); strings.Contains(r.stdout, "Secret") || !strings.Contains(r.stdout, "1 more resource change") || r.code != 2 {
		t.Errorf("--suppress-secrets with only a Secret change: %s", r)
	}

	// 4. A release that does not exist yet.
	r = helmInject(t, append([]string{"diff", "upgrade", "fresh", apiChart}, inj...)...)
	if r.code != 1 || !strings.Contains(r.stderr, `release "fresh" does not exist`) {
		t.Errorf("diff of a missing release without --allow-unreleased: %s", r)
	}
	r = helmInject(t, append([]string{"diff", "upgrade", "--allow-unreleased", "fresh", apiChart, "--output", "json", "--include-tests"}, inj...)...)
	var parsed struct {
		Installed bool
		Changes   []struct{ Change, Kind, Name string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &parsed); err != nil {
		t.Fatalf("--output json: %v\n%s", err, r)
	}
	if parsed.Installed || len(parsed.Changes) != 4 {
		t.Errorf("new release in json = %+v, want 4 added resources", parsed)
	}
	for _, c := range parsed.Changes {
		if c.Change != "added" {
			t.Errorf("%s %s is %s, want added", c.Kind, c.Name, c.Change)
		}
	}
	if r := helm(t, "history", "fresh", "-n", ns); r.code == 0 {
		t.Errorf("diff --allow-unreleased created a release")
	}
}
