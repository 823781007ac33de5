package inject

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
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
		if p.Version, err = programVersion(ctx, c.VersionArgv, env.Dir, c.VersionTimeout); err != nil {
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

// DefaultVersionTimeout bounds a version command: it answers from the
// binary, never from a cluster.
const DefaultVersionTimeout = 30 * time.Second

// programVersion runs a version command as an injector runs (runInGroup)
// and returns the first line it printed. Whatever it did not finish on its
// own (the time limit, Ctrl-C, a child that kept its output open) is an
// error: no version is recorded that the command did not give.
func programVersion(ctx context.Context, argv []string, dir string, limit time.Duration) (string, error) {
	if limit <= 0 {
		limit = DefaultVersionTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout = &out
	err := runInGroup(cmd)
	switch ctxErr := ctx.Err(); {
	case err == nil:
	case errors.Is(ctxErr, context.DeadlineExceeded):
		return "", fmt.Errorf("version command %s did not finish within %s and was killed: %w", QuoteCommand(argv), limit, ctxErr)
	case ctxErr != nil:
		return "", fmt.Errorf("version command %s: interrupted: %w", QuoteCommand(argv), ctxErr)
	case errors.Is(err, exec.ErrWaitDelay):
		return "", fmt.Errorf("version command %s exited, but a process it started kept its output open for %s and was killed: %w", QuoteCommand(argv), waitDelay, err)
	default:
		return "", fmt.Errorf("version command %s: %w", QuoteCommand(argv), err)
	}
	line, _, _ := strings.Cut(strings.TrimSpace(out.String()), "\n")
	if line == "" {
		return "", fmt.Errorf("version command %s printed nothing", QuoteCommand(argv))
	}
	return strings.TrimSpace(line), nil
}

// DigestCache remembers executables' digests in one JSON file, so that a
// 100 MB istioctl is not hashed on every run. An entry answers only for
// the same path, device, inode, size, modification time and change time:
// a file rewritten in place, or replaced, and its modification time set
// back (touch -r) has a new change time, which no user can set. The cache
// is trusted only in a folder of the current user that no one else may
// write to (created 0700), and its file only when it is the user's and
// no one else may write to it; otherwise digests are computed afresh and
// nothing is written. Where the system does not give these (Windows),
// nothing is cached. A nil DigestCache hashes every time.
type DigestCache struct {
	// File is the cache file; it is created when missing.
	File string

	// uid is the user whose folder and file are trusted; nil is the
	// current user (tests stand for another).
	uid func() int
}

// owner is the user whose cache files are trusted.
func (c *DigestCache) owner() int {
	if c.uid != nil {
		return c.uid()
	}
	return os.Getuid()
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

// fileID identifies the content of a file without reading it, as far as
// the system lets a program tell: identify returns it (platform files).
type fileID struct {
	Dev   uint64 `json:"dev"`
	Ino   uint64 `json:"ino"`
	Size  int64  `json:"size"`
	Mtime int64  `json:"mtimeNs"`
	Ctime int64  `json:"ctimeNs"`
}

type digestEntry struct {
	fileID
	SHA256 string `json:"sha256"`
}

// Sum returns the sha256 of the file at path, "sha256:" and hex.
func (c *DigestCache) Sum(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("reading the program %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("reading the program %s: %w", path, err)
	}
	id, identified := identify(fi)
	var entries map[string]digestEntry
	if c != nil && identified {
		entries = c.read()
	}
	if e, ok := entries[path]; ok && e.fileID == id {
		return e.SHA256, nil
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("reading the program %s: %w", path, err)
	}
	sum := "sha256:" + hex.EncodeToString(h.Sum(nil))
	if entries == nil {
		return sum, nil
	}
	// A file that changed while it was read is not remembered.
	after, err := f.Stat()
	if err != nil {
		return sum, nil
	}
	if now, _ := identify(after); now != id {
		return sum, nil
	}
	entries[path] = digestEntry{fileID: id, SHA256: sum}
	// The cache only saves time: a folder that cannot be written
	// leaves the next run hashing again.
	_ = c.write(entries)
	return sum, nil
}

// folderUsable reports whether the cache's folder may hold the cache:
// missing (write creates it, 0700), or a folder, not a link, of the
// current user that no one else may write to.
func (c *DigestCache) folderUsable() bool {
	fi, err := os.Lstat(filepath.Dir(c.File))
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	return err == nil && fi.IsDir() && private(fi, c.owner())
}

// read returns the cache's entries: none from a file of another user or
// one others may write to (write replaces it), and nil, so that nothing
// is written, when the folder is not usable.
func (c *DigestCache) read() map[string]digestEntry {
	if !c.folderUsable() {
		return nil
	}
	entries := map[string]digestEntry{}
	f, err := os.Open(c.File)
	if err != nil {
		return entries
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || !private(fi, c.owner()) {
		return entries
	}
	b, err := io.ReadAll(f)
	// A damaged cache is rebuilt.
	if err != nil || json.Unmarshal(b, &entries) != nil {
		return map[string]digestEntry{}
	}
	return entries
}

// write replaces the cache file whole (rename), so that runs in parallel
// never read half a file; the new file is the user's, mode 0600.
func (c *DigestCache) write(entries map[string]digestEntry) error {
	dir := filepath.Dir(c.File)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating the digest cache folder: %w", err)
	}
	if !c.folderUsable() {
		return fmt.Errorf("the digest cache folder %s is another user's or others may write to it", dir)
	}
	b, err := json.Marshal(entries)
	if err != nil {
		return fmt.Errorf("encoding the digest cache: %w", err)
	}
	f, err := os.CreateTemp(dir, ".program-digests-*")
	if err != nil {
		return fmt.Errorf("writing the digest cache: %w", err)
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("writing the digest cache: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing the digest cache: %w", err)
	}
	if err := os.Rename(f.Name(), c.File); err != nil {
		return fmt.Errorf("writing the digest cache: %w", err)
	}
	return nil
}
