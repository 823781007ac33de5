package e2e

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNothingRunsThroughAShell: shell syntax in a release name, in values
// and in injector arguments reaches its destination as text; no shell ever
// runs it, so no canary file appears.
func TestNothingRunsThroughAShell(t *testing.T) {
	ns := namespace(t)
	dir := t.TempDir()
	canary := func(n string) string { return filepath.Join(dir, "canary-"+n) }
	sub := "$(touch " + canary("dollar") + ")"
	tick := "`touch " + canary("backtick") + "`"
	semi := "x; touch " + canary("semicolon")

	// An invalid release name is refused, and nothing runs.
	r := helmInject(t, "apply", "x"+sub, apiChart, "-n", ns, "--injector", "sidecar-injector f=FILE")
	if r.code == 0 || !strings.Contains(r.stderr, "release name") {
		t.Errorf("apply with a shell expression as release name:\n%s", r)
	}

	// Values and injector arguments are passed as they are.
	mustHelmInject(t, "apply", "shellsafe", apiChart, "-n", ns,
		"--set-string", "logLevel="+sub+tick+semi,
		"--injector", "sidecar-injector f=FILE,label="+sub,
		"--inject", "sidecar-injector --name second --label '"+tick+semi+"' FILE")
	if got := configMapData(t, ns, "shellsafe-config")["logLevel"]; got != sub+tick+semi {
		t.Errorf("ConfigMap value = %q, want the text %q", got, sub+tick+semi)
	}
	manifest := mustHelm(t, "get", "manifest", "shellsafe", "-n", ns).stdout
	if !strings.Contains(manifest, tick+semi) {
		t.Errorf("the second injector's label is not the literal text:\n%s", manifest)
	}
	// A spec with a shell operator outside quotes is refused, not run.
	r = helmInject(t, "apply", "shellsafe", apiChart, "-n", ns, "--inject", "sidecar-injector FILE; touch "+canary("operator"))
	if r.code == 0 || !strings.Contains(r.stderr, `shell operator ";"`) {
		t.Errorf("apply with a shell operator in --inject:\n%s", r)
	}
	for _, n := range []string{"dollar", "backtick", "semicolon", "operator"} {
		if _, err := os.Stat(canary(n)); err == nil {
			t.Errorf("canary %s exists: something ran a shell", n)
		}
	}
}

// TestDebugOutputHidesSecrets: --debug output of apply and diff never
// holds Secret data, whether it came from --set-file or a values file.
func TestDebugOutputHidesSecrets(t *testing.T) {
	ns := namespace(t)
	dir := t.TempDir()
	secret := "correct-horse-battery-staple-4711"
	file := filepath.Join(dir, "password")
	if err := os.WriteFile(file, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	leaks := func(what string, r result) {
		t.Helper()
		out := r.stdout + r.stderr
		for _, form := range []string{secret, base64.StdEncoding.EncodeToString([]byte(secret))} {
			if strings.Contains(out, form) {
				t.Errorf("%s prints the secret (%q):\n%s", what, form, out)
			}
		}
	}
	inj := []string{"-n", ns, "--debug", "--injector", "sidecar-injector f=FILE"}
	r := command{}.mustRun(t, filepath.Join(binDir, "helm-inject"), append([]string{"apply", "hush", apiChart, "--set-file", "password=" + file}, inj...)...)
	if !strings.Contains(r.stderr, "[debug]") {
		t.Errorf("--debug printed no debug lines:\n%s", r)
	}
	leaks("apply --debug", r)

	values := filepath.Join(dir, "values.yaml")
	if err := os.WriteFile(values, []byte("password: "+secret+"-v2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	secret += "-v2"
	r = command{}.run(t, filepath.Join(binDir, "helm-inject"), append([]string{"diff", "upgrade", "hush", apiChart, "-f", values}, inj...)...)
	if !strings.Contains(r.stdout, "hush-db") {
		t.Errorf("diff does not show the changed Secret:\n%s", r)
	}
	leaks("diff upgrade --debug", r)
	r = command{}.mustRun(t, filepath.Join(binDir, "helm-inject"), append([]string{"apply", "hush", apiChart, "-f", values}, inj...)...)
	leaks("apply --debug (upgrade)", r)
}
