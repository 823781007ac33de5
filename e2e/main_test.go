// Package e2e holds the integration tests: they run helm-inject, the real
// helm CLI and (later) helmfile against a real etcd + kube-apiserver started
// by internal/testenv, with kube-controller-manager, kube-scheduler and kwok
// so that workloads get pods that run and test pods that succeed.
package e2e

import (
	"os"
	"testing"

	"github.com/helm-inject/helm-inject/internal/testenv"
)

// cluster is the control plane shared by every test in this package. It is
// set once in TestMain before any test runs and only read afterwards.
var cluster *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.RunTests(m, testenv.Options{SimulatePods: true}, func(e *testenv.Env) { cluster = e }))
}
