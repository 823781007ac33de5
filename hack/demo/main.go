// Command demo shows helm-inject's main job on a bundled example. First,
// offline, it injects a sidecar into every workload of the
// fixtures/charts/webapp chart with the fixture injector and prints the
// result with a before/after summary. Then it builds the local control
// plane and the helm CLI (hack/tools.sh; the first time only), starts them,
// installs the chart as a Helm release, shows that the real helm CLI sees an
// ordinary release whose pods run the sidecar, and stops everything.
//
//	make demo        (see README.md)
package main

import (
	"context"
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
	"sigs.k8s.io/yaml"

	"github.com/helm-inject/helm-inject/internal/testenv"
	"github.com/helm-inject/helm-inject/manifest"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root, err := testenv.RepoRoot()
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "helm-inject-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	step("building helm-inject and the fixture injector")
	bin := filepath.Join(work, "bin")
	for _, pkg := range []string{".", "./fixtures/injectors/sidecar-injector"} {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", bin+"/", pkg)
		cmd.Dir, cmd.Stdout, cmd.Stderr = root, os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go build %s: %w", pkg, err)
		}
	}

	injector := "sidecar-injector f=FILE,image=registry.example/log-shipper:1.0"
	pathEnv := "PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH")
	if err := offline(ctx, root, filepath.Join(bin, "helm-inject"), pathEnv, injector); err != nil {
		return err
	}

	step("building the control plane and the helm CLI (the first time only: about 25 minutes; later runs reuse them)")
	tools := exec.CommandContext(ctx, "bash", "hack/tools.sh", "etcd", "kubernetes", "helm", "kwok")
	tools.Dir, tools.Stdout, tools.Stderr = root, os.Stdout, os.Stderr
	if err := tools.Run(); err != nil {
		return fmt.Errorf("hack/tools.sh: %w", err)
	}

	step("starting etcd, kube-apiserver, controller-manager, scheduler and kwok on 127.0.0.1")
	env, err := testenv.Start(ctx, testenv.Options{SimulatePods: true})
	if err != nil {
		return err
	}
	defer env.Stop()
	helm, err := testenv.Tool(env.ToolsBin, "helm")
	if err != nil {
		return err
	}

	environ := append(os.Environ(), env.Environ()...)
	environ = append(environ, pathEnv)
	sh := func(name string, args ...string) error {
		fmt.Printf("\n$ %s %s\n", filepath.Base(name), quote(args))
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = root, environ, os.Stdout, os.Stderr
		return cmd.Run()
	}

	step("injecting and installing the webapp chart")
	if err := sh(filepath.Join(bin, "helm-inject"), "apply", "demo", "fixtures/charts/webapp",
		"-n", "demo", "--create-namespace", "--wait", "--timeout", "2m",
		"--injector", injector); err != nil {
		return err
	}
	step("the release is an ordinary Helm release")
	for _, args := range [][]string{{"list", "-n", "demo"}, {"history", "demo", "-n", "demo"}, {"test", "demo", "-n", "demo"}} {
		if err := sh(helm, args...); err != nil {
			return err
		}
	}

	step("every pod runs the injected sidecar")
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

	step("uninstalling with the helm CLI")
	if err := sh(helm, "uninstall", "demo", "-n", "demo"); err != nil {
		return err
	}
	step("done; stopping the control plane")
	return nil
}

func step(s string) { fmt.Printf("\n==> %s\n", s) }

// offline renders the chart with and without the injector (helm-inject
// template needs no cluster), prints the injected manifests, and a summary
// of the containers of each workload before and after.
func offline(ctx context.Context, root, helmInject, pathEnv, injector string) error {
	step("injecting fixtures/charts/webapp offline: helm-inject template (no cluster needed)")
	render := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, helmInject, append([]string{"template", "demo", "fixtures/charts/webapp"}, args...)...)
		cmd.Dir, cmd.Env, cmd.Stderr = root, append(os.Environ(), pathEnv), os.Stderr
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("helm-inject template %s: %w", quote(args), err)
		}
		return string(out), nil
	}
	before, err := render()
	if err != nil {
		return err
	}
	fmt.Printf("\n$ helm-inject template demo fixtures/charts/webapp --injector %s\n", quote([]string{injector}))
	after, err := render("--injector", injector)
	if err != nil {
		return err
	}
	fmt.Print(after)

	step("before and after: the containers of every workload")
	was, is := containers(before), containers(after)
	var ids []string
	for id := range is {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	fmt.Printf("  %-38s %-28s %s\n", "WORKLOAD", "BEFORE", "AFTER (injected)")
	for _, id := range ids {
		fmt.Printf("  %-38s %-28s %s\n", id, strings.Join(was[id], ", "), strings.Join(is[id], ", "))
	}
	return nil
}

// containers maps each workload (KIND/NAME, "(hook)" for a hook) of a
// rendered stream to the names of its pod's containers.
func containers(stream string) map[string][]string {
	out := map[string][]string{}
	for _, part := range manifest.Split(stream) {
		d, err := manifest.Parse("", part)
		if err != nil || d.Empty() {
			continue
		}
		var obj struct {
			Spec struct {
				Containers []struct{ Name string } `json:"containers"`
				Template   struct {
					Spec struct {
						Containers []struct{ Name string } `json:"containers"`
					} `json:"spec"`
				} `json:"template"`
				JobTemplate struct {
					Spec struct {
						Template struct {
							Spec struct {
								Containers []struct{ Name string } `json:"containers"`
							} `json:"spec"`
						} `json:"template"`
					} `json:"spec"`
				} `json:"jobTemplate"`
			} `json:"spec"`
		}
		if yaml.Unmarshal([]byte(d.Content), &obj) != nil {
			continue
		}
		cs := append(append(obj.Spec.Containers, obj.Spec.Template.Spec.Containers...), obj.Spec.JobTemplate.Spec.Template.Spec.Containers...)
		if len(cs) == 0 {
			continue
		}
		id := d.ID.Kind + "/" + d.ID.Name
		if d.Hook != "" {
			id += " (hook)"
		}
		for _, c := range cs {
			out[id] = append(out[id], c.Name)
		}
	}
	return out
}

func quote(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, " ,=\"'") {
			a = "'" + a + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}
