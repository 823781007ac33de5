package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPostRender: post-render reads manifests on stdin and writes them
// injected to stdout with every injector flag: built-in (--with,
// --with-set, --injector-library), --injector and --inject commands run
// in --injector-dir and killed after --injector-timeout, and hooks and
// tests kept from them with --skip-inject-hooks and --skip-inject-tests.
func TestPostRender(t *testing.T) {
	const manifests = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: app, image: "app:1"}]
---
apiVersion: v1
kind: Pod
metadata:
  name: migrate
  annotations: {helm.sh/hook: pre-install}
spec:
  containers: [{name: m, image: "m:1"}]
---
apiVersion: v1
kind: Pod
metadata:
  name: smoke
  annotations: {helm.sh/hook: test}
spec:
  containers: [{name: s, image: "s:1"}]
`
	dir := t.TempDir()
	// The marker reads ./label from its working directory (--injector-dir)
	// and adds it as a comment to every document it is given.
	marker := filepath.Join(dir, "mark.sh")
	if err := os.WriteFile(marker, []byte("#!/bin/sh\nsleep \"${1:-0}\"\nsed \"s/^kind: \\(.*\\)/kind: \\1\\n# $(cat label)/\"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(dir, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "label"), []byte("marked"), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, string, int) {
		t.Helper()
		var out, errb bytes.Buffer
		code := Run(context.Background(), append([]string{"post-render"}, args...), strings.NewReader(manifests), &out, &errb)
		return out.String(), errb.String(), code
	}
	tests := []struct {
		args   []string
		marked int
		want   string
	}{
		{[]string{"--inject", marker, "--injector-dir", work}, 3, ""},
		{[]string{"--injector", marker + " 0", "--injector-dir", work}, 3, ""},
		{[]string{"--inject", marker, "--injector-dir", work, "--skip-inject-hooks"}, 1, ""},
		{[]string{"--inject", marker, "--injector-dir", work, "--skip-inject-tests"}, 2, ""},
		{[]string{"--injector-library", "../../examples/injectors", "--with", "log-shipper@1.0.0", "--with-set", "log-shipper.destination=logs:24224"}, 0, "log-shipper.helm-inject.io/destination: 'logs:24224'"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out, errOut, code := run(tt.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if n := strings.Count(out, "# marked"); n != tt.marked || !strings.Contains(out, tt.want) {
				t.Errorf("%d documents marked, want %d; want %q in:\n%s", n, tt.marked, tt.want, out)
			}
		})
	}
	if _, errOut, code := run("--inject", marker+" 5", "--injector-dir", work, "--injector-timeout", "200ms"); code == 0 || !strings.Contains(errOut, "did not finish within 200ms (--injector-timeout)") {
		t.Errorf("--injector-timeout: exit %d: %s", code, errOut)
	}
}
