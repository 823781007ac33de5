package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/helm-inject/helm-inject/internal/testenv"
)

// result is what a command printed and how it exited.
type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// run executes a binary with the cluster's environment and returns its output.
func run(t *testing.T, dir, bin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			r.code = ee.ExitCode()
		} else {
			t.Fatalf("running %s %s: %v", bin, strings.Join(args, " "), err)
		}
	}
	return r
}

// mustRun is run that fails the test on a non-zero exit.
func mustRun(t *testing.T, dir, bin string, args ...string) result {
	t.Helper()
	r := run(t, dir, bin, args...)
	if r.code != 0 {
		t.Fatalf("%s %s failed:\n%s", filepath.Base(bin), strings.Join(args, " "), r)
	}
	return r
}

// helm runs the real helm CLI built by hack/tools.sh.
func helm(t *testing.T, args ...string) result {
	t.Helper()
	bin, err := testenv.Tool(cluster.ToolsBin, "helm")
	if err != nil {
		t.Fatal(err)
	}
	return run(t, repoRoot(t), bin, args...)
}

func mustHelm(t *testing.T, args ...string) result {
	t.Helper()
	r := helm(t, args...)
	if r.code != 0 {
		t.Fatalf("helm %s failed:\n%s", strings.Join(args, " "), r)
	}
	return r
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
	name := "t-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	if len(name) > 50 {
		name = name[:50]
	}
	name = strings.Trim(name, "-") + "-" + hex.EncodeToString(b)
	name = strings.ReplaceAll(name, "_", "-")
	_, err := clientset(t).CoreV1().Namespaces().Create(t.Context(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	return name
}
