// Command cluster starts the integration-test control plane by hand, for
// debugging: etcd, kube-apiserver, kube-controller-manager, kube-scheduler
// and kwok with one fake node, on loopback. It prints the KUBECONFIG to use
// and runs until Ctrl-C, then stops everything.
//
//	go run ./hack/cluster            (or: make cluster)
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/helm-inject/helm-inject/internal/testenv"
)

func main() {
	root, err := testenv.RepoRoot()
	if err != nil {
		fail(err)
	}
	dir := flag.String("dir", filepath.Join(root, ".cache", "cluster"), "folder for the kubeconfig and component logs (emptied first)")
	flag.Parse()
	if err := os.RemoveAll(*dir); err != nil {
		fail(err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	env, err := testenv.Start(ctx, testenv.Options{SimulatePods: true, Dir: *dir})
	if err != nil {
		fail(err)
	}
	fmt.Printf("control plane ready; logs in %s\n\n", env.Dir)
	for _, kv := range env.Environ() {
		fmt.Printf("export %s\n", kv)
	}
	fmt.Println("\nPress Ctrl-C to stop it.")
	<-ctx.Done()
	fmt.Println("stopping")
	if err := env.Stop(); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "cluster:", err)
	os.Exit(1)
}
