// Command demo shows helm-inject's main job on a bundled example. First,
// offline, it injects a sidecar into every workload of the
// fixtures/charts/webapp chart with the fixture injector and prints the
// result with a before/after summary. Then it builds the local control
// plane and the helm 4 CLI (hack/tools.sh; the first time only), starts them,
// installs the chart as a Helm release, shows that the real helm 4 CLI sees an
// ordinary release whose pods run the sidecar, and stops everything (that
// half is hack/demo/cluster, compiled only once the offline result is shown).
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

	"sigs.k8s.io/yaml"

	"github.com/helm-inject/helm-inject/hack/demo/internal/show"
	"github.com/helm-inject/helm-inject/internal/reporoot"
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
	root, err := reporoot.Find()
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "helm-inject-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	show.Step("building helm-inject and the fixture injector")
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

	show.Step("building the control plane and the helm 4 CLI (the first time only: about 25 minutes; later runs reuse them)")
	tools := exec.CommandContext(ctx, "bash", "hack/tools.sh", "etcd", "kubernetes", "helm4", "kwok")
	tools.Dir, tools.Stdout, tools.Stderr = root, os.Stdout, os.Stderr
	if err := tools.Run(); err != nil {
		return fmt.Errorf("hack/tools.sh: %w", err)
	}

	// The cluster half is its own program: compiling the control plane's
	// client libraries waits until the offline result is on screen.
	cluster := exec.CommandContext(ctx, "go", "run", "./hack/demo/cluster", "-bin", bin)
	cluster.Dir, cluster.Stdout, cluster.Stderr = root, os.Stdout, os.Stderr
	if err := cluster.Run(); err != nil {
		return fmt.Errorf("the demo's cluster half: %w", err)
	}
	return nil
}

// offline renders the chart with and without the injector (helm-inject
// template needs no cluster), prints the injected manifests, and a summary
// of the containers of each workload before and after.
func offline(ctx context.Context, root, helmInject, pathEnv, injector string) error {
	show.Step("injecting fixtures/charts/webapp offline: helm-inject template (no cluster needed)")
	render := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, helmInject, append([]string{"template", "demo", "fixtures/charts/webapp"}, args...)...)
		cmd.Dir, cmd.Env, cmd.Stderr = root, append(os.Environ(), pathEnv), os.Stderr
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("helm-inject template %s: %w", show.Args(args), err)
		}
		return string(out), nil
	}
	before, err := render()
	if err != nil {
		return err
	}
	fmt.Printf("\n$ helm-inject template demo fixtures/charts/webapp --injector %s\n", show.Args([]string{injector}))
	after, err := render("--injector", injector)
	if err != nil {
		return err
	}
	fmt.Print(after)

	show.Step("before and after: the containers of every workload")
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
