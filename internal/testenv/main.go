package testenv

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
)

// RunTests is the body of an integration package's TestMain: it starts one
// control plane for the package, exports its environment (KUBECONFIG and
// isolated Helm folders) to the tests and their child processes, runs the
// tests and stops everything, also on Ctrl-C or SIGTERM. It returns the exit
// code for os.Exit. set receives the running Env before the tests start.
func RunTests(m *testing.M, opts Options, set func(*Env)) int {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()

	env, err := Start(ctx, opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "integration environment: %v\n", err)
		return 1
	}
	stopped := make(chan struct{})
	go func() {
		// An interrupt would otherwise kill the test binary and leave etcd
		// and kube-apiserver running.
		select {
		case <-ctx.Done():
			fmt.Fprintln(os.Stderr, "interrupted: stopping the control plane")
			_ = env.Stop()
			os.Exit(130)
		case <-stopped:
		}
	}()
	for _, kv := range env.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		os.Setenv(k, v)
	}
	set(env)
	code := m.Run()
	close(stopped)
	if err := env.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "integration environment: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}
