package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKilledRenderLeavesNothing: a generate killed by Argo CD's timeout
// (SIGKILL, while its injector runs) cannot clean up, and its private
// folder holds the injector's FILE, rendered Secrets included; the next
// generate in the sidecar removes it, because the folder names a process
// that is gone. Confined or not: the folder is the construction's, not
// the kernel's.
func TestKilledRenderLeavesNothing(t *testing.T) {
	for _, mode := range []string{"off", "best-effort"} {
		t.Run(mode, func(t *testing.T) {
			appDir, env := argoApp(t)
			tmp := t.TempDir()
			// An injector that never ends, with no program but its shell.
			hang := filepath.Join(t.TempDir(), "hang")
			if err := os.WriteFile(hang, []byte("#!/bin/sh\nwhile :; do :; done\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			generate := func(params string) *exec.Cmd {
				cmd := exec.Command(os.Args[0], "argocd", "generate", "--confine="+mode, "--allowed-commands="+hang)
				cmd.Dir = appDir
				cmd.Env = append(append(os.Environ(), env...), cliChildEnv+"=helm-inject", "TMPDIR="+tmp)
				if params != "" {
					cmd.Env = append(cmd.Env, "ARGOCD_APP_PARAMETERS="+params)
				}
				// Its own process group, so that the injector dies with it.
				cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
				return cmd
			}
			parent := filepath.Join(tmp, fmt.Sprintf("helm-inject-confined-%d", os.Getuid()))

			killed := generate(`[{"name":"inject","array":["` + hang + ` FILE"]}]`)
			if err := killed.Start(); err != nil {
				t.Fatal(err)
			}
			var left string
			for deadline := time.Now().Add(30 * time.Second); left == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				matches, _ := filepath.Glob(filepath.Join(parent, fmt.Sprintf("render-%d-*", killed.Process.Pid), "*", "*"))
				if len(matches) > 0 {
					left = filepath.Dir(filepath.Dir(matches[0]))
				}
			}
			syscall.Kill(-killed.Process.Pid, syscall.SIGKILL)
			killed.Wait()
			if left == "" {
				t.Fatal("the render never reached its injector with FILE in its private folder")
			}
			if _, err := os.Stat(left); err != nil {
				t.Fatalf("the killed render's folder: %v", err)
			}

			out, err := generate("").Output()
			if err != nil || !strings.Contains(string(out), "kind: Deployment") {
				t.Fatalf("the next render: %v\n%s", err, out)
			}
			if _, err := os.Stat(left); !os.IsNotExist(err) {
				t.Errorf("the killed render's folder %s is still there after the next render (%v)", left, err)
			}
			if entries, _ := os.ReadDir(parent); len(entries) != 0 {
				t.Errorf("render folders left: %v", entries)
			}
		})
	}
}
