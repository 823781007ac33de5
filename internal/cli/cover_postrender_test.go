package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/cli"

	"github.com/helm-inject/helm-inject/internal/confine"
)

// TestPostRenderRefusals: post-render prints nothing, and fails with an
// error saying why, for injector flags it cannot use, a built-in injector
// the library does not have, manifests on stdin that do not parse, an
// injector that fails, and --confine on a kernel without Landlock.
func TestPostRenderRefusals(t *testing.T) {
	const deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n"
	failing := filepath.Join(t.TempDir(), "fail.sh")
	if err := os.WriteFile(failing, []byte("#!/bin/sh\necho 'no mesh here' >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join("..", "..", "examples", "injectors")
	noLandlock := confine.Kernel{ABI: func() int { return 0 }}
	for _, tt := range []struct {
		name  string
		args  []string
		stdin string
		want  string // the error's start
	}{
		{"with-set without with", []string{"--with-set", "log-shipper.destination=x"}, deployment, "--with-set log-shipper...: no --with log-shipper"},
		{"unknown built-in", []string{"--injector-library", lib, "--with", "no-such-injector"}, deployment, `injector "no-such-injector" is not in the library`},
		{"stdin not YAML", []string{"--inject", "cat"}, "kind: [unclosed\n", "stdin document 1: "},
		{"failing injector", []string{"--inject", failing}, deployment, ""},
		{"confine without Landlock", []string{"--confine", "--injector-library", lib, "--with", "log-shipper", "--with-set", "log-shipper.destination=logs:24224"}, deployment,
			"--confine=required, but this kernel (Landlock not available) cannot confine files (Landlock ABI 1, Linux 5.13)"},
		{"an argument", []string{"extra"}, deployment, `unknown command "extra" for "helm-inject post-render"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			root := newRootCommandOn(cli.New(), noLandlock, strings.NewReader(tt.stdin), &out, &errb)
			root.SetArgs(append([]string{"post-render"}, tt.args...))
			err := root.ExecuteContext(t.Context())
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) || out.Len() != 0 {
				t.Errorf("error %v, stdout %q; want %q and nothing printed", err, out.String(), tt.want)
			}
			if tt.name == "failing injector" && (err == nil || !strings.Contains(err.Error(), "no mesh here")) {
				t.Errorf("a failing injector: error %v; want its stderr in it", err)
			}
		})
	}
}
