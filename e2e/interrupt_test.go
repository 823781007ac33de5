package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// TestInterruptDuringInjection sends SIGINT (Ctrl-C) and SIGTERM while the
// injector runs: helm-inject kills the injector, removes its temporary
// files, exits non-zero and writes no release.
func TestInterruptDuringInjection(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			ns := namespace(t)
			tmp := t.TempDir()
			started := filepath.Join(t.TempDir(), "started")
			cmd := exec.Command(filepath.Join(binDir, "helm-inject"), "apply", "halted", webappChart, "-n", ns,
				"--injector", "sidecar-injector f=FILE,fail=hang,count-file="+started)
			cmd.Dir = repoRoot(t)
			cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Wait until the injector is running (it writes its count file).
			err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
				_, err := os.Stat(started)
				return err == nil, nil
			})
			if err != nil {
				_ = cmd.Process.Kill()
				t.Fatal("the injector never started")
			}
			// The injector's own command line, as helm-inject built it.
			running := "--count-file " + started
			if out, _ := exec.Command("pgrep", "-f", "--", running).Output(); len(out) == 0 {
				t.Fatalf("no running injector matches %q", running)
			}
			_ = cmd.Process.Signal(sig)
			err = cmd.Wait()
			if err == nil {
				t.Fatalf("helm-inject exited 0 after %s", sig)
			}
			if !strings.Contains(stderr.String(), `release "halted": injector "sidecar-injector f=FILE,fail=hang,count-file=`) ||
				!strings.Contains(stderr.String(), "interrupted") {
				t.Errorf("stderr:\n%s", stderr.String())
			}
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				t.Errorf("temporary files left behind: %s", left[0].Name())
			}
			if out, _ := exec.Command("pgrep", "-f", "--", running).Output(); len(out) != 0 {
				t.Errorf("the injector is still running: pid %s", out)
			}
			if r := helm(t, "history", "halted", "-n", ns); r.code == 0 {
				t.Errorf("a release was recorded:\n%s", r.stdout)
			}
		})
	}
}
