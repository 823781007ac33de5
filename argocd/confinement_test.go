package argocd

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/helm-inject/helm-inject/internal/confine"
)

// TestPolicyConfinement: a confined generate reads its repository, the
// operator's library, named-injectors file and --confine-read
// folders, and executes the programs the operator allows by name and
// those its named injectors run, as found on PATH (through links); a
// program not on PATH is left out.
func TestPolicyConfinement(t *testing.T) {
	bin := t.TempDir()
	real := filepath.Join(t.TempDir(), "istioctl-1.24")
	for _, p := range []string{real, filepath.Join(bin, "sidecar-injector"), filepath.Join(bin, "log-shipper")} {
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(real, filepath.Join(bin, "istioctl")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	bin, _ = filepath.EvalSymlinks(bin)
	real, _ = filepath.EvalSymlinks(real)
	injectors := writeOperatorFile(t, operatorFile)
	pol, err := Operator{
		AllowedCommands: []string{"sidecar-injector", " not-installed"},
		Library:         "/helm-inject/injectors",
		InjectorsFile:   injectors,
		Read:            []string{"/etc/istio", " /etc/linkerd"},
	}.Policy(noEnv)
	if err != nil {
		t.Fatal(err)
	}
	got := pol.Confinement("/tmp/_cmp_server/abc")
	want := confine.Policy{
		Read: []string{"/tmp/_cmp_server/abc", "/helm-inject/injectors", injectors, "/etc/istio", "/etc/linkerd"},
		Exec: []string{filepath.Join(bin, "sidecar-injector"), filepath.Join(bin, "log-shipper"), real},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Confinement (-want +got):\n%s", d)
	}
}
