// Package repofs is a repository opened as one os.Root: every file an
// Argo CD Application names is read through it, so a symbolic link or a
// ".." that leaves the repository fails in the kernel's resolution
// (openat2 with RESOLVE_BENEATH semantics, as Go's os.Root implements
// them), not in a check beside the read. Nothing here reads a path
// outside the root, fetches a URL or runs a program.
package repofs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
)

// ErrOutside is the error of a path that leaves the repository.
var ErrOutside = errors.New("outside the repository")

// maxLinks bounds the symbolic links one path may pass through, as the
// kernel's ELOOP does (40 on Linux).
const maxLinks = 40

// Repo is an open repository.
type Repo struct {
	root *os.Root
}

// Open opens the folder dir as a repository.
func Open(dir string) (*Repo, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("opening the repository: %w", err)
	}
	return &Repo{root: r}, nil
}

// Close closes the repository's root.
func (r *Repo) Close() error { return r.root.Close() }

// FS is the repository as an fs.FS: every Open, ReadFile, ReadDir and
// Stat goes through the root, and a symbolic link is followed only while
// it stays inside.
func (r *Repo) FS() fs.FS { return r.root.FS() }

// Resolve returns the path name leads to below the repository's top, as
// the kernel resolves it: element by element from the top, each symbolic
// link replaced by its target before the elements after it ("s/.." is the
// parent of where the link s leads, not "."), so the result names the
// same file the kernel would open. The result is a clean slash path ("."
// for the top). A name that is absolute, that climbs above the top, or
// that passes through an absolute link (os.Root refuses those) is
// ErrOutside; a missing element below the top is fs.ErrNotExist, with the
// elements after it kept as written.
func (r *Repo) Resolve(name string) (string, error) {
	if path.IsAbs(name) || strings.HasPrefix(name, `\`) || strings.Contains(name, "://") {
		return "", ErrOutside
	}
	var done []string
	todo := strings.Split(name, "/")
	links := 0
	for len(todo) > 0 {
		elem := todo[0]
		todo = todo[1:]
		switch elem {
		case "", ".":
			continue
		case "..":
			if len(done) == 0 {
				return "", ErrOutside
			}
			done = done[:len(done)-1]
			continue
		}
		cur := path.Join(append(done, elem)...)
		fi, err := r.root.Lstat(cur)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return path.Join(append(append(done, elem), todo...)...), fs.ErrNotExist
			}
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			done = append(done, elem)
			continue
		}
		if links++; links > maxLinks {
			return "", fmt.Errorf("%s: too many levels of symbolic links", cur)
		}
		target, err := r.root.Readlink(cur)
		if err != nil {
			return "", err
		}
		if path.IsAbs(target) {
			return "", ErrOutside
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	if len(done) == 0 {
		return ".", nil
	}
	return path.Join(done...), nil
}

// ReadFile reads the file name leads to (Resolve), through the root.
func (r *Repo) ReadFile(name string) ([]byte, error) {
	p, err := r.Resolve(name)
	if err != nil {
		return nil, err
	}
	return r.root.ReadFile(p)
}

// Stat is os.Stat of the file name leads to, through the root.
func (r *Repo) Stat(name string) (fs.FileInfo, error) {
	p, err := r.Resolve(name)
	if err != nil {
		return nil, err
	}
	return r.root.Stat(p)
}
