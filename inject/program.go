package inject

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Program is the identity of the executable an external injector ran: the
// original request promises to know which istioctl injected a release,
// and the spec alone ("istioctl kube-inject -f FILE") does not say.
type Program struct {
	// Path is the executable as resolved on $PATH (or against the
	// injector's working folder), symbolic links followed.
	Path string `json:"path"`
	// SHA256 is the digest of the executable file.
	SHA256 string `json:"sha256"`
	// Version is what the injector's version command printed (its first
	// line), when one is declared.
	Version string `json:"version,omitempty"`
}

// Short names the program in one line: "istioctl 1.28.0
// (sha256:0123456789ab)", or the file name and digest alone.
func (p *Program) Short() string {
	if p == nil {
		return ""
	}
	s := filepath.Base(p.Path)
	if p.Version != "" {
		s += " " + p.Version
	}
	d := strings.TrimPrefix(p.SHA256, "sha256:")
	if len(d) > 12 {
		d = d[:12]
	}
	return s + " (sha256:" + d + ")"
}

// programIdentifier is an Injector that ran an executable and can say
// which one.
type programIdentifier interface {
	Program(ctx context.Context, env Env, digests *DigestCache) (*Program, error)
}

// Program resolves the command's executable as its run did, and returns
// its digest (from digests when the file is unchanged) and, when the
// command declares one, the output of its version command.
func (c *Command) Program(ctx context.Context, env Env, digests *DigestCache) (*Program, error) {
	path, err := resolveExecutable(c.Argv[0], env.Dir)
	if err != nil {
		return nil, err
	}
	sum, err := digests.Sum(path)
	if err != nil {
		return nil, err
	}
	p := &Program{Path: path, SHA256: sum}
	if len(c.VersionArgv) > 0 {
		if p.Version, err = programVersion(ctx, c.VersionArgv, env.Dir); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// resolveExecutable finds program as exec does: on $PATH for a bare name,
// against dir for a relative path.
func resolveExecutable(program, dir string) (string, error) {
	path := program
	if !strings.ContainsRune(program, os.PathSeparator) {
		var err error
		if path, err = exec.LookPath(program); err != nil {
			return "", notOnPath(program)
		}
	} else if !filepath.IsAbs(path) && dir != "" {
		path = filepath.Join(dir, path)
	}
	resolved, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", fmt.Errorf("resolving the program %q: %w", program, err)
	}
	abs, err := filepath.Abs(resolved)
	if err != nil {
		return "", fmt.Errorf("resolving the program %q: %w", program, err)
	}
	return abs, nil
}

// versionTimeout bounds a version command: it answers from the binary,
// never from a cluster.
const versionTimeout = 30 * time.Second

func programVersion(ctx context.Context, argv []string, dir string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("version command %s: %w", QuoteCommand(argv), err)
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	if line == "" {
		return "", fmt.Errorf("version command %s printed nothing", QuoteCommand(argv))
	}
	return strings.TrimSpace(line), nil
}

// DigestCache remembers executables' digests by path, size and
// modification time, in one JSON file, so that a 100 MB istioctl is not
// hashed on every run. A nil DigestCache hashes every time.
type DigestCache struct {
	// File is the cache file; it is created when missing.
	File string
}

// DefaultDigestCache is the cache in the user's cache folder
// (~/.cache/helm-inject/program-digests.json on Linux); nil when the
// system names no such folder.
func DefaultDigestCache() *DigestCache {
	dir, err := os.UserCacheDir()
	if err != nil {
		return nil
	}
	return &DigestCache{File: filepath.Join(dir, "helm-inject", "program-digests.json")}
}

type digestEntry struct {
	Size    int64     `json:"size"`
	ModTime time.Time `json:"modTime"`
	SHA256  string    `json:"sha256"`
}

// Sum returns the sha256 of the file at path, "sha256:" and hex.
func (c *DigestCache) Sum(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("reading the program %s: %w", path, err)
	}
	entries := c.read()
	if e, ok := entries[path]; ok && e.Size == fi.Size() && e.ModTime.Equal(fi.ModTime()) {
		return e.SHA256, nil
	}
	sum, err := fileSHA256(path)
	if err != nil {
		return "", err
	}
	if c != nil {
		entries[path] = digestEntry{Size: fi.Size(), ModTime: fi.ModTime(), SHA256: sum}
		// The cache only saves time: a folder that cannot be written
		// leaves the next run hashing again.
		_ = c.write(entries)
	}
	return sum, nil
}

func (c *DigestCache) read() map[string]digestEntry {
	entries := map[string]digestEntry{}
	if c == nil {
		return entries
	}
	if b, err := os.ReadFile(c.File); err == nil {
		// A damaged cache is rebuilt.
		if json.Unmarshal(b, &entries) != nil {
			entries = map[string]digestEntry{}
		}
	}
	return entries
}

// write replaces the cache file whole (rename), so that runs in parallel
// never read half a file.
func (c *DigestCache) write(entries map[string]digestEntry) error {
	if err := os.MkdirAll(filepath.Dir(c.File), 0o700); err != nil {
		return err
	}
	b, err := json.Marshal(entries)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(c.File), ".program-digests-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), c.File)
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("reading the program %s: %w", path, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("reading the program %s: %w", path, err)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}
