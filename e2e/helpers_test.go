package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/helm-inject/helm-inject/internal/testenv"
	"github.com/helm-inject/helm-inject/manifest"
)

// result is what a command printed and how it exited.
type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// command runs a binary in the repository root with the cluster's
// environment, binDir first on PATH, and extra environment variables.
type command struct {
	env []string
	dir string
	// timeout bounds the command; 5 minutes when zero.
	timeout time.Duration
}

func (c command) run(t *testing.T, bin string, args ...string) result {
	t.Helper()
	timeout := c.timeout
	if timeout == 0 {
		timeout = 5 * time.Minute
	}
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = c.dir
	if cmd.Dir == "" {
		cmd.Dir = repoRoot(t)
	}
	cmd.Env = append(os.Environ(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Env = append(cmd.Env, c.env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("running %s %s: %v", bin, strings.Join(args, " "), err)
		}
		r.code = ee.ExitCode()
	}
	return r
}

func (c command) mustRun(t *testing.T, bin string, args ...string) result {
	t.Helper()
	r := c.run(t, bin, args...)
	if r.code != 0 {
		t.Fatalf("%s %s failed:\n%s", filepath.Base(bin), strings.Join(args, " "), r)
	}
	return r
}

// helmInject runs the helm-inject binary built for this test run.
func helmInject(t *testing.T, args ...string) result {
	t.Helper()
	return command{}.run(t, filepath.Join(binDir, "helm-inject"), args...)
}

func mustHelmInject(t *testing.T, args ...string) result {
	t.Helper()
	return command{}.mustRun(t, filepath.Join(binDir, "helm-inject"), args...)
}

func helmBin(t *testing.T) string {
	t.Helper()
	bin, err := testenv.Tool(cluster.ToolsBin, "helm")
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// helm runs the real helm CLI built by hack/tools.sh.
func helm(t *testing.T, args ...string) result {
	t.Helper()
	return command{}.run(t, helmBin(t), args...)
}

func mustHelm(t *testing.T, args ...string) result {
	t.Helper()
	return command{}.mustRun(t, helmBin(t), args...)
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func clientset(t *testing.T) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// namespace creates a fresh namespace for one test, so tests never see each
// other's releases.
func namespace(t *testing.T) string {
	t.Helper()
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 40 {
		name = name[:40]
	}
	name = "t-" + strings.Trim(name, "-") + "-" + hex.EncodeToString(b)
	_, err := clientset(t).CoreV1().Namespaces().Create(t.Context(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	// Pods are admitted only once the controller-manager has created the
	// namespace's default service account, as on a real cluster.
	err = wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := clientset(t).CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("namespace %s has no default service account: %v", name, err)
	}
	return name
}

// workload is a rendered resource with the containers of its pod template.
type workload struct {
	id             manifest.ID
	containers     []string
	initContainers []string
	annotations    map[string]string
}

type podSpec struct {
	Containers     []struct{ Name string } `yaml:"containers"`
	InitContainers []struct{ Name string } `yaml:"initContainers"`
}

type podTemplate struct {
	Metadata struct {
		Annotations map[string]string `yaml:"annotations"`
	} `yaml:"metadata"`
	Spec podSpec `yaml:"spec"`
}

// workloads reads every pod-bearing resource of a manifest stream.
func workloads(t *testing.T, stream string) map[string]workload {
	t.Helper()
	out := map[string]workload{}
	for _, doc := range manifest.Split(stream) {
		d, err := manifest.Parse("", doc)
		if err != nil {
			t.Fatalf("%v\n%s", err, doc)
		}
		var obj struct {
			Metadata struct {
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"metadata"`
			Spec struct {
				podSpec     `yaml:",inline"`
				Template    podTemplate `yaml:"template"`
				JobTemplate struct {
					Metadata struct {
						Annotations map[string]string `yaml:"annotations"`
					} `yaml:"metadata"`
					Spec struct {
						Template podTemplate `yaml:"template"`
					} `yaml:"spec"`
				} `yaml:"jobTemplate"`
			} `yaml:"spec"`
		}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatal(err)
		}
		var tmpl podTemplate
		switch d.ID.Kind {
		case "Pod":
			tmpl.Metadata.Annotations = obj.Metadata.Annotations
			tmpl.Spec = obj.Spec.podSpec
		case "Deployment", "StatefulSet", "DaemonSet", "Job":
			tmpl = obj.Spec.Template
		case "CronJob":
			tmpl = obj.Spec.JobTemplate.Spec.Template
			// istioctl annotates a CronJob's jobTemplate, not its pod
			// template; count both.
			for k, v := range obj.Spec.JobTemplate.Metadata.Annotations {
				if tmpl.Metadata.Annotations == nil {
					tmpl.Metadata.Annotations = map[string]string{}
				}
				tmpl.Metadata.Annotations[k] = v
			}
		default:
			continue
		}
		w := workload{id: d.ID, annotations: tmpl.Metadata.Annotations}
		for _, c := range tmpl.Spec.Containers {
			w.containers = append(w.containers, c.Name)
		}
		for _, c := range tmpl.Spec.InitContainers {
			w.initContainers = append(w.initContainers, c.Name)
		}
		out[d.ID.Kind+"/"+d.ID.Name] = w
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// repoCopy copies the repository (with .git, without caches and build
// output) to a temporary folder, for tests that install it as a Helm plugin
// or build release archives from it.
func repoCopy(t *testing.T) string {
	t.Helper()
	root := repoRoot(t)
	dst := filepath.Join(t.TempDir(), "helm-inject")
	skip := map[string]bool{".cache": true, "bin": true, "dist": true}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		if d.IsDir() && skip[rel] {
			return filepath.SkipDir
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			return os.WriteFile(target, data, info.Mode().Perm())
		}
		return nil // sockets, symlinks: nothing the tests need
	})
	if err != nil {
		t.Fatalf("copying the repository: %v", err)
	}
	return dst
}
