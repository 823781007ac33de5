package e2e

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// storedReleases returns every revision of a release as Helm stores it in
// the cluster (the decoded JSON of its Secrets), so a test can check what
// is recorded, whatever command prints it.
func storedReleases(t *testing.T, ns, name string) string {
	t.Helper()
	records := decodedRecords(t, ns, name)
	if len(records) == 0 {
		t.Fatalf("no stored revision of %s", name)
	}
	return string(bytes.Join(records, nil))
}

// decodedRecords are the release records of name in ns, one JSON document
// per stored revision (the Secret's base64 of gzip), none when there are
// none.
func decodedRecords(t *testing.T, ns, name string) [][]byte {
	t.Helper()
	list, err := clientset(t).CoreV1().Secrets(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "owner=helm,name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	var records [][]byte
	for _, s := range list.Items {
		raw, err := base64.StdEncoding.DecodeString(string(s.Data["release"]))
		if err != nil {
			t.Fatal(err)
		}
		gz, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(gz)
		if err != nil {
			t.Fatal(err)
		}
		records = append(records, b)
	}
	return records
}

// TestCredentialsNeverRecorded: a chart URL with user:password and an
// injector spec with a --token reach the chart server and the injector,
// but no revision stored in the cluster and no output of apply, status,
// list, diff or an error holds them.
func TestCredentialsNeverRecorded(t *testing.T) {
	ns := namespace(t)
	const user, password, token = "robot", "chart-pass-4711", "inj-token-0815"
	dir := t.TempDir()
	mustHelm(t, "package", webappChart, "-d", dir)
	files := http.FileServer(http.Dir(dir))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != user || p != password {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		files.ServeHTTP(w, r)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	ref := "http://" + user + ":" + password + "@" + host + "/webapp-1.4.2.tgz"
	spec := "sidecar-injector --token " + token + " FILE"
	leaks := func(what, out string) {
		t.Helper()
		for _, s := range []string{password, token} {
			if strings.Contains(out, s) {
				t.Errorf("%s holds the credential %q:\n%s", what, s, out)
			}
		}
	}

	r := mustHelmInject(t, "apply", "credrel", ref, "-n", ns, "--inject", spec)
	leaks("apply's output", r.stdout+r.stderr)
	if w := workloads(t, mustHelm(t, "get", "manifest", "credrel", "-n", ns).stdout)["Deployment/credrel-web"]; !contains(w.containers, "sidecar") {
		t.Fatalf("the chart was not fetched and injected: containers %v", w.containers)
	}
	stored := storedReleases(t, ns, "credrel")
	leaks("the stored release", stored)
	if !strings.Contains(stored, `http://xxxxx@`+host) || !strings.Contains(stored, `--token xxxxx FILE`) {
		t.Errorf("the stored release does not record the redacted source and spec:\n%.2000s", stored)
	}
	st := mustHelmInject(t, "status", "credrel", "-n", ns)
	leaks("status", st.stdout)
	if !strings.Contains(st.stdout, "xxxxx") {
		t.Errorf("status shows no redacted source:\n%s", st.stdout)
	}
	leaks("list", mustHelmInject(t, "list", "-n", ns, "-o", "json").stdout)
	d := helmInject(t, "diff", "upgrade", "credrel", ref, "-n", ns, "--inject", "sidecar-injector --token other-token FILE")
	leaks("diff", d.stdout+d.stderr)

	// A wrong password fails, and the error names the chart without it.
	bad := "http://" + user + ":wrong-" + password + "@" + host + "/webapp-1.4.2.tgz"
	r = helmInject(t, "apply", "credrel", bad, "-n", ns, "--inject", spec)
	if r.code == 0 || !strings.Contains(r.stderr, "http://xxxxx@"+host) {
		t.Errorf("apply with a wrong password:\n%s", r)
	}
	leaks("the error", r.stderr)
}
