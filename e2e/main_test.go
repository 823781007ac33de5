// Package e2e holds the integration tests: they run helm-inject, the real
// helm CLI and real injectors against a real etcd + kube-apiserver started by
// internal/testenv, with kube-controller-manager, kube-scheduler and kwok so
// that workloads get pods that run and test pods that succeed.
package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/helm-inject/helm-inject/internal/testenv"
)

// Set once in TestMain before any test runs, and only read afterwards.
var (
	// cluster is the control plane shared by every test in this package.
	cluster *testenv.Env
	// binDir holds helm-inject and the fixture injector, built for this run.
	binDir string
)

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "helm-inject-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	root, err := testenv.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for _, pkg := range []string{".", "./fixtures/injectors/sidecar-injector"} {
		cmd := exec.Command("go", "build", "-o", dir+string(filepath.Separator), pkg)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building %s: %v\n%s", pkg, err, out)
			return 1
		}
	}
	binDir = dir
	return testenv.RunTests(m, testenv.Options{SimulatePods: true}, func(e *testenv.Env) { cluster = e })
}
