package inject

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestVersionCommandIsBounded: a version command runs as an injector
// does. One that leaves a child holding its output, or does not finish
// within its limit, or is interrupted (Ctrl-C), returns within a bounded
// time with its whole process group killed, and no version is recorded:
// the pipeline fails instead of recording what the command printed.
func TestVersionCommandIsBounded(t *testing.T) {
	for _, tt := range []struct {
		name, body string
		// timeout is the version command's limit (VersionTimeout).
		timeout time.Duration
		cancel  bool
		want    string
		is      error
	}{
		// The program exits at once, its child keeps stdout open: the
		// wait delay, not the limit, ends the wait.
		{"a child holds its output", `sleep 20 & echo $! > "$PIDFILE"; echo v1`, time.Minute, false, "kept its output open for 2s and was killed", exec.ErrWaitDelay},
		// The program waits for its child past the limit.
		{"past its time limit", `sleep 20 & echo $! > "$PIDFILE"; echo v1; wait`, 500 * time.Millisecond, false, "did not finish within 500ms and was killed", context.DeadlineExceeded},
		// Ctrl-C while it waits.
		{"interrupted", `sleep 20 & echo $! > "$PIDFILE"; echo v1; wait`, time.Minute, true, "interrupted", context.Canceled},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			pidFile := filepath.Join(dir, "pid")
			t.Setenv("PIDFILE", pidFile)
			version := writeProgram(t, dir, "version", tt.body)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			if tt.cancel {
				time.AfterFunc(200*time.Millisecond, cancel)
			}
			c := mustCommand(t, "cat")
			c.VersionArgv = []string{version, "--short"}
			c.VersionTimeout = tt.timeout
			p := &Pipeline{Injectors: []Injector{c}, IdentifyPrograms: true}
			start := time.Now()
			_, steps, err := p.Run(ctx, docs(t, cmC), Env{Release: "shop", Namespace: "ns"})
			if took := time.Since(start); took > 8*time.Second {
				t.Errorf("the version command held the run for %s", took)
			}
			if err == nil || steps != nil {
				t.Fatalf("a version command that did not finish was recorded: %v, %+v", err, steps)
			}
			if !strings.Contains(err.Error(), "version command "+version+" --short") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("the error: %v, want %q", err, tt.want)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("the error %v is not %v", err, tt.is)
			}
			b, _ := os.ReadFile(pidFile)
			pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			if pid == 0 {
				t.Fatal("the version command's child never started")
			}
			for deadline := time.Now().Add(5 * time.Second); alive(pid); time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					_ = syscall.Kill(pid, syscall.SIGKILL)
					t.Fatalf("the version command's child %d still runs", pid)
				}
			}
		})
	}

	// A version command that answers in time is recorded.
	c := mustCommand(t, "cat")
	c.VersionArgv = []string{writeProgram(t, t.TempDir(), "version", `echo v1.2.3`)}
	_, steps, err := (&Pipeline{Injectors: []Injector{c}, IdentifyPrograms: true}).Run(t.Context(), docs(t, cmC), Env{Release: "shop", Namespace: "ns"})
	if err != nil || len(steps) != 1 || steps[0].Program == nil || steps[0].Program.Version != "v1.2.3" {
		t.Errorf("a version command in time: %v %+v", err, steps)
	}
}
