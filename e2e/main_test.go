// Package e2e holds the integration tests: they run helm-inject, the real
// helm CLI and real injectors against a real etcd + kube-apiserver started by
// internal/testenv, with kube-controller-manager, kube-scheduler and kwok so
// that workloads get pods that run and test pods that succeed.
package e2e

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
	for _, pkg := range []string{".", "./fixtures/injectors/sidecar-injector", "./fixtures/injectors/escape-probe"} {
		cmd := exec.Command("go", "build", "-o", dir+string(filepath.Separator), pkg)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building %s: %v\n%s", pkg, err, out)
			return 1
		}
	}
	binDir = dir

	// Every process of the suite (helm-inject, helm, helmfile, the tests'
	// own temporary folders) uses one fresh TMPDIR, so that what helm-inject
	// leaves behind can be found afterwards.
	suiteTmp, err := os.MkdirTemp("", "e2e-tmp-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(suiteTmp)
	os.Setenv("TMPDIR", suiteTmp)
	code := testenv.RunTests(m, testenv.Options{SimulatePods: true}, func(e *testenv.Env) { cluster = e })
	if left := leftovers(suiteTmp, root); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: helm-inject left temporary files behind after the suite:\n  %s\n", strings.Join(left, "\n  "))
		return 1
	}
	return code
}

// leftovers lists helm-inject's temporary files that outlived the suite:
// folders in TMPDIR named helm-inject-* (the injector's folder, the
// temporary chart) and hidden translated helmfiles (.helm-inject-*) in the
// repository. testenv's own folders are removed by RunTests before this.
func leftovers(tmp, repo string) []string {
	var left []string
	entries, _ := os.ReadDir(tmp)
	for _, e := range entries {
		p := filepath.Join(tmp, e.Name())
		if e.Name() == fmt.Sprintf("helm-inject-confined-%d", os.Getuid()) {
			// The parent of confined renders' private folders stays; what
			// a render wrote in it must not.
			inside, _ := os.ReadDir(p)
			for _, in := range inside {
				left = append(left, filepath.Join(p, in.Name()))
			}
			continue
		}
		if strings.HasPrefix(e.Name(), "helm-inject-") {
			left = append(left, p)
		}
	}
	_ = filepath.WalkDir(repo, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && (d.Name() == ".cache" || d.Name() == ".git") {
			return filepath.SkipDir
		}
		if strings.HasPrefix(d.Name(), ".helm-inject-") {
			left = append(left, p)
		}
		return nil
	})
	return left
}
