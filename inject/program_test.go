package inject

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeProgram writes an executable shell script and returns its path.
func writeProgram(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCommandProgram: the executable is resolved on $PATH (symbolic links
// followed) or against the working folder, its sha256 recorded, and the
// declared version command's first line kept.
func TestCommandProgram(t *testing.T) {
	bin := t.TempDir()
	real := writeProgram(t, bin, "istioctl-1.28.0", `echo "1.28.0"; echo "extra line"`)
	if err := os.Symlink(real, filepath.Join(bin, "istioctl")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	c := mustCommand(t, "istioctl kube-inject -f FILE")
	c.VersionArgv = []string{"istioctl", "version", "--remote=false"}
	p, err := c.Program(context.Background(), Env{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// sha256 of "#!/bin/sh\necho \"1.28.0\"; echo \"extra line\"\n"
	want := Program{Path: real, SHA256: "sha256:a7c7188b2e6fb10bb8bc22e16ab1b13e640752acf5880730f836ff666299eda2", Version: "1.28.0"}
	if *p != want {
		t.Errorf("program %+v, want %+v", *p, want)
	}
	if got := p.Short(); got != "istioctl-1.28.0 1.28.0 (sha256:a7c7188b2e6f)" {
		t.Errorf("Short() = %q", got)
	}

	work := t.TempDir()
	writeProgram(t, work, "inj", "cat")
	rel := mustCommand(t, "./inj FILE")
	p, err = rel.Program(context.Background(), Env{Dir: work}, nil)
	if err != nil || p.Path != filepath.Join(work, "inj") || p.Version != "" {
		t.Errorf("relative program: %+v %v", p, err)
	}

	if _, err := mustCommand(t, "no-such-injector FILE").Program(context.Background(), Env{}, nil); err == nil || !strings.Contains(err.Error(), "no-such-injector") {
		t.Errorf("a missing program: %v", err)
	}
	writeProgram(t, bin, "failing", "exit 3")
	c.VersionArgv = []string{filepath.Join(bin, "failing"), "--short"}
	if _, err := c.Program(context.Background(), Env{}, nil); err == nil || !strings.Contains(err.Error(), "version command "+filepath.Join(bin, "failing")+" --short: exit status 3") {
		t.Errorf("a version command that fails: %v", err)
	}
	writeProgram(t, bin, "silent", "true")
	c.VersionArgv = []string{filepath.Join(bin, "silent")}
	if _, err := c.Program(context.Background(), Env{}, nil); err == nil || !strings.Contains(err.Error(), "printed nothing") {
		t.Errorf("a version command that prints nothing: %v", err)
	}
}
