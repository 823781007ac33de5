package inject

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

// TestDigestCache: a file whose path, size and modification time are
// unchanged is not read again; any of them changing makes a new digest.
func TestDigestCache(t *testing.T) {
	dir := t.TempDir()
	prog := writeProgram(t, dir, "prog", "echo a")
	cache := &DigestCache{File: filepath.Join(dir, "cache", "digests.json")}
	first, err := cache.Sum(prog)
	if err != nil {
		t.Fatal(err)
	}
	uncached, err := (*DigestCache)(nil).Sum(prog)
	if err != nil || uncached != first {
		t.Fatalf("without a cache: %s %v, want %s", uncached, err, first)
	}
	// Same size, same modification time, other content: the cache answers.
	fi, _ := os.Stat(prog)
	if err := os.WriteFile(prog, []byte("#!/bin/sh\necho b\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(prog, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if got, _ := cache.Sum(prog); got != first {
		t.Errorf("an unchanged size and time hashed the file again: %s, want the cached %s", got, first)
	}
	if got, _ := (*DigestCache)(nil).Sum(prog); got == first {
		t.Fatalf("the new content has the old digest %s", got)
	}
	later := fi.ModTime().Add(time.Minute)
	if err := os.Chtimes(prog, later, later); err != nil {
		t.Fatal(err)
	}
	if got, _ := cache.Sum(prog); got == first {
		t.Errorf("a new modification time kept the old digest %s", got)
	}
	// A damaged cache file is rebuilt, not an error.
	if err := os.WriteFile(cache.File, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := cache.Sum(prog); err != nil {
		t.Errorf("a damaged cache: %v", err)
	}
}
