// Package repofs is a repository opened as one os.Root: every file an
// Argo CD Application names is read through it, so a symbolic link or a
// ".." that leaves the repository fails in the kernel's resolution
// (openat2 with RESOLVE_BENEATH semantics, as Go's os.Root implements
// them), not in a check beside the read. Nothing here reads a path
// outside the root, fetches a URL or runs a program.
//
// A repository opened with a budget (OpenBudget) charges it every file
// and folder it opens or lists and every byte it reads, through ReadFile
// and FS alike: what a render reads of a tenant's repository is counted
// in one place, after links (a file reached through two links is read,
// and charged, twice).
package repofs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/helm-inject/helm-inject/internal/budget"
)

// ErrOutside is the error of a path that leaves the repository.
var ErrOutside = errors.New("outside the repository")

// maxLinks bounds the symbolic links one path may pass through, as the
// kernel's ELOOP does (40 on Linux).
const maxLinks = 40

// Repo is an open repository.
type Repo struct {
	root   *os.Root
	budget *budget.Budget
}

// Open opens the folder dir as a repository whose reads are not counted.
func Open(dir string) (*Repo, error) {
	return OpenBudget(dir, nil)
}

// OpenBudget opens the folder dir as a repository whose every read is
// charged to b (nil: none is).
func OpenBudget(dir string, b *budget.Budget) (*Repo, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("opening the repository: %w", err)
	}
	return &Repo{root: r, budget: b}, nil
}

// Close closes the repository's root.
func (r *Repo) Close() error { return r.root.Close() }

// Budget is the budget the repository's reads are charged to (nil when
// they are not counted), for what a loader unpacks of what it read.
func (r *Repo) Budget() *budget.Budget { return r.budget }

// FS is the repository as an fs.FS: every Open, ReadFile, ReadDir and
// Stat goes through the root, and a symbolic link is followed only while
// it stays inside. With a budget, each Open, ReadFile and ReadDir is
// charged a file and each byte read or listed is charged as it is read.
func (r *Repo) FS() fs.FS {
	if r.budget == nil {
		return r.root.FS()
	}
	return countedFS{fsys: r.root.FS(), b: r.budget}
}

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
	return fs.ReadFile(r.FS(), p)
}

// Stat is os.Stat of the file name leads to, through the root.
func (r *Repo) Stat(name string) (fs.FileInfo, error) {
	p, err := r.Resolve(name)
	if err != nil {
		return nil, err
	}
	return r.root.Stat(p)
}

// countedFS is a root's fs.FS that charges a budget what is opened,
// listed and read through it. It keeps the root FS's interfaces, so that
// fs.ReadFile, fs.ReadDir, fs.WalkDir and fs.Stat take the same paths
// through the root.
type countedFS struct {
	fsys fs.FS
	b    *budget.Budget
}

var (
	_ fs.ReadFileFS = countedFS{}
	_ fs.ReadDirFS  = countedFS{}
	_ fs.StatFS     = countedFS{}
	_ fs.ReadLinkFS = countedFS{}
)

// Open opens name and charges one file; each Read of it is charged as it
// returns, each ReadDir by what it lists.
func (c countedFS) Open(name string) (fs.File, error) {
	f, err := c.fsys.Open(name)
	if err != nil {
		return nil, err
	}
	if err := c.b.OpenFile(name); err != nil {
		f.Close()
		return nil, err
	}
	return &countedFile{File: f, name: name, b: c.b}, nil
}

// ReadFile charges one file and the size its stat gives before it reads
// a byte (a file that would pass the budget is not read), then each byte
// past that size as it is read.
func (c countedFS) ReadFile(name string) ([]byte, error) {
	f, err := c.fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := c.b.OpenFile(name); err != nil {
		return nil, err
	}
	var size int64
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		size = fi.Size()
	}
	return c.b.ReadAll(name, f, size)
}

// listChunk is how many entries ReadDir lists at a time: a folder's
// listing is charged as it grows, so a folder of a million entries
// stops at the budget instead of being held whole first.
const listChunk = 256

// ReadDir lists name in chunks, charging one file for the folder and
// each chunk's entries as it comes, then sorts them by name as the
// root's ReadDir does.
func (c countedFS) ReadDir(name string) ([]fs.DirEntry, error) {
	f, err := c.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	d, ok := f.(fs.ReadDirFile)
	if !ok {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: errors.New("not a folder")}
	}
	var all []fs.DirEntry
	for {
		entries, err := d.ReadDir(listChunk)
		all = append(all, entries...)
		if errors.Is(err, io.EOF) || (err == nil && len(entries) == 0) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	slices.SortFunc(all, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return all, nil
}

func (c countedFS) Stat(name string) (fs.FileInfo, error) { return fs.Stat(c.fsys, name) }

func (c countedFS) Lstat(name string) (fs.FileInfo, error) { return fs.Lstat(c.fsys, name) }

func (c countedFS) ReadLink(name string) (string, error) { return fs.ReadLink(c.fsys, name) }

// countedFile is a file opened through countedFS.
type countedFile struct {
	fs.File
	name string
	b    *budget.Budget
}

// Read charges what it read before handing it over: past the budget the
// bytes are not given.
func (f *countedFile) Read(p []byte) (int, error) {
	n, err := f.File.Read(p)
	if cerr := f.b.Read(f.name, int64(n)); cerr != nil {
		return 0, cerr
	}
	return n, err
}

// ReadDir charges each entry listed, its name and what a DirEntry holds.
func (f *countedFile) ReadDir(n int) ([]fs.DirEntry, error) {
	d, ok := f.File.(fs.ReadDirFile)
	if !ok {
		return nil, &fs.PathError{Op: "readdir", Path: f.name, Err: errors.New("not a folder")}
	}
	entries, err := d.ReadDir(n)
	var cost int64
	for _, e := range entries {
		cost += int64(len(e.Name())) + entryCost
	}
	if cerr := f.b.Read(f.name, cost); cerr != nil {
		return nil, cerr
	}
	return entries, err
}

// entryCost is what a listed entry costs beside its name: the DirEntry a
// listing keeps of it (its folder's name, its own, its type and a stat
// it may cache).
const entryCost = 64
