package interrupt

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// child starts a shell that reports which signal it got in its exit code
// (INT 7, TERM 8), or ignores both when ignore is set, and returns once
// its traps are set.
func child(t *testing.T, ctx context.Context, grace time.Duration, ignore bool) *exec.Cmd {
	t.Helper()
	ready := filepath.Join(t.TempDir(), "ready")
	traps := `trap 'exit 7' INT; trap 'exit 8' TERM`
	if ignore {
		traps = `trap '' INT TERM`
	}
	cmd := Command(ctx, grace, "sh", "-c", traps+`; touch "$1"; while :; do sleep 0.05; done`, "sh", ready)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(ready); err == nil {
			return cmd
		}
		if time.Now().After(deadline) {
			t.Fatal("the child never set its traps")
		}
	}
}

// TestSignalIsForwarded: Ctrl-C (SIGINT) or SIGTERM received by
// helm-inject reaches the child as the same signal, the child settles and
// exits by itself, and its own exit code is what ExitCode reports.
func TestSignalIsForwarded(t *testing.T) {
	for _, tt := range []struct {
		sig  syscall.Signal
		want int
	}{{syscall.SIGINT, 7}, {syscall.SIGTERM, 8}} {
		t.Run(tt.sig.String(), func(t *testing.T) {
			ctx, stop := NotifyContext(t.Context())
			defer stop()
			cmd := child(t, ctx, time.Minute, false)
			if err := syscall.Kill(os.Getpid(), tt.sig); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			if code, ok := ExitCode(cmd); !ok || code != tt.want {
				t.Errorf("exit code %d (ran %v), want %d: the child did not get %s", code, ok, tt.want, tt.sig)
			}
			var r Received
			if !errors.As(context.Cause(ctx), &r) || r.Signal != tt.sig || !errors.Is(ctx.Err(), context.Canceled) {
				t.Errorf("context cause %v, err %v", context.Cause(ctx), ctx.Err())
			}
		})
	}
}

// TestChildThatIgnoresTheSignalIsKilledAfterGrace: the wait is bounded;
// a child still running after the grace period is killed, and the exit
// code is 128+9 as a shell would report it.
func TestChildThatIgnoresTheSignalIsKilledAfterGrace(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cmd := child(t, ctx, 300*time.Millisecond, true)
	start := time.Now()
	cancel()
	_ = cmd.Wait()
	if code, _ := ExitCode(cmd); code != 128+int(syscall.SIGKILL) {
		t.Errorf("exit code %d, want %d", code, 128+int(syscall.SIGKILL))
	}
	if waited := time.Since(start); waited < 300*time.Millisecond {
		t.Errorf("killed after %s, before the grace period", waited)
	}
}

// TestCancelWithoutSignalSendsTERM: a context cancelled by other means
// (a caller, a deadline) asks the child to stop with SIGTERM.
func TestCancelWithoutSignalSendsTERM(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cmd := child(t, ctx, time.Minute, false)
	cancel()
	_ = cmd.Wait()
	if code, _ := ExitCode(cmd); code != 8 {
		t.Errorf("exit code %d, want 8 (SIGTERM)", code)
	}
}

func TestExitCodeOfACommandThatNeverRan(t *testing.T) {
	cmd := Command(t.Context(), time.Second, filepath.Join(t.TempDir(), "missing"))
	err := cmd.Run()
	if _, ok := ExitCode(cmd); ok || err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("ExitCode reports a run for %v", err)
	}
}
