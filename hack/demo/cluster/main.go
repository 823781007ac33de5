// Command cluster is the second half of the demo (hack/demo runs it once
// the offline result is shown and the tools are built): it starts the
// local control plane, installs fixtures/charts/webapp with the sidecar
// injected, shows that the real helm 4 CLI sees an ordinary release whose
// pods run the sidecar, uninstalls it and stops everything.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/helm-inject/helm-inject/hack/demo/internal/show"
	"github.com/helm-inject/helm-inject/internal/reporoot"
	"github.com/helm-inject/helm-inject/internal/testenv"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run() error {
	bin := flag.String("bin", "", "the folder with helm-inject and the fixture injector")
	flag.Parse()
	if *bin == "" {
		return fmt.Errorf("-bin is required (hack/demo passes it)")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root, err := reporoot.Find()
	if err != nil {
		return err
	}
	injector := "sidecar-injector f=FILE,image=registry.example/log-shipper:1.0"
	pathEnv := "PATH=" + *bin + string(os.PathListSeparator) + os.Getenv("PATH")

	show.Step("starting etcd, kube-apiserver, controller-manager, scheduler and kwok on 127.0.0.1")
	env, err := testenv.Start(ctx, testenv.Options{SimulatePods: true})
	if err != nil {
		return err
	}
	defer env.Stop()
	// The helm 4 CLI, as a new user has it (installed as helm: helm 4
	// names its field manager after its file name).
	helm := filepath.Join(filepath.Dir(env.ToolsBin), "helm4", "helm")
	if _, err := os.Stat(helm); err != nil {
		return fmt.Errorf("the helm 4 CLI: %w (bash hack/tools.sh helm4 builds it)", err)
	}

	environ := append(os.Environ(), env.Environ()...)
	environ = append(environ, pathEnv)
	sh := func(name string, args ...string) error {
		fmt.Printf("\n$ %s %s\n", filepath.Base(name), show.Args(args))
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = root, environ, os.Stdout, os.Stderr
		return cmd.Run()
	}

	show.Step("injecting and installing the webapp chart")
	if err := sh(filepath.Join(*bin, "helm-inject"), "apply", "demo", "fixtures/charts/webapp",
		"-n", "demo", "--create-namespace", "--wait", "--timeout", "2m",
		"--injector", injector); err != nil {
		return err
	}
	show.Step("the release is an ordinary Helm release")
	for _, args := range [][]string{{"list", "-n", "demo"}, {"history", "demo", "-n", "demo"}, {"test", "demo", "-n", "demo"}} {
		if err := sh(helm, args...); err != nil {
			return err
		}
	}

	show.Step("every pod runs the injected sidecar")
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		return err
	}
	ctx2, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	pods, err := cs.CoreV1().Pods("demo").List(ctx2, metav1.ListOptions{})
	if err != nil {
		return err
	}
	var lines []string
	for _, p := range pods.Items {
		var names []string
		for _, c := range p.Spec.Containers {
			names = append(names, c.Name+" ("+c.Image+")")
		}
		lines = append(lines, fmt.Sprintf("  %-34s %-10s %s", p.Name, p.Status.Phase, strings.Join(names, ", ")))
	}
	sort.Strings(lines)
	fmt.Println(strings.Join(lines, "\n"))

	show.Step("uninstalling with the helm 4 CLI")
	if err := sh(helm, "uninstall", "demo", "-n", "demo"); err != nil {
		return err
	}
	show.Step("done; stopping the control plane")
	return nil
}
