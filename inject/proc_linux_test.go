package inject

import (
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

// TestInjectorDiesWithHelmInject: when helm-inject is killed outright
// (kill -9: no chance to kill its injector), the kernel ends the injector
// too, instead of leaving it running with the release's manifests.
func TestInjectorDiesWithHelmInject(t *testing.T) {
	if pidFile := os.Getenv("HELM_INJECT_TEST_PIDFILE"); pidFile != "" {
		// The helper: run an injector that records its pid and waits (in
		// the test's folder: the helper is killed before it could clean up).
		inj := filepath.Join(filepath.Dir(pidFile), "injector.sh")
		if err := os.WriteFile(inj, []byte("#!/bin/sh\necho $$ > "+pidFile+"\nexec sleep 120\n"), 0o700); err != nil {
			t.Fatal(err)
		}
		c := mustCommand(t, inj)
		_, _ = c.Inject(t.Context(), []byte("kind: ConfigMap\n"), Env{Release: "r"})
		return
	}
	pidFile := filepath.Join(t.TempDir(), "pid")
	helper := exec.Command(os.Args[0], "-test.run=^TestInjectorDiesWithHelmInject$")
	helper.Env = append(os.Environ(), "HELM_INJECT_TEST_PIDFILE="+pidFile)
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	for deadline := time.Now().Add(time.Minute); pid == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = helper.Process.Kill()
			t.Fatal("the injector never started")
		}
		b, _ := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	if err := helper.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = helper.Wait()
	for deadline := time.Now().Add(time.Minute); alive(pid); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("injector %d still runs after helm-inject was killed", pid)
		}
	}
}

// alive reports whether pid runs (a zombie, waiting to be reaped, does
// not).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}
