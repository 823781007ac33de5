package chartify

import (
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// rootFileSystem is kustomize's file system interface on a repository's
// os.Root (its FS), with the repository's top as "/": kustomize reads
// only through the root, and a link out of the repository fails there.
// Writes are refused.
type rootFileSystem struct{ fsys fs.FS }

var _ offlineFS = rootFileSystem{}

// offlineFS is the file system of a build that fetches, clones and runs
// nothing (see kustomize): a repository's, which a tenant wrote.
type offlineFS interface {
	filesys.FileSystem
	offline()
}

func (rootFileSystem) offline() {}

// rel is the repository path of a kustomize path: absolute ones are below
// the top, relative ones below the top as well (kustomize makes every
// path absolute before it reads).
func (rootFileSystem) rel(p string) string {
	p = path.Clean("/" + filepath.ToSlash(p))
	if p == "/" {
		return "."
	}
	return strings.TrimPrefix(p, "/")
}

func (r rootFileSystem) Create(string) (filesys.File, error) { return nil, errReadOnly }
func (r rootFileSystem) Mkdir(string) error                  { return errReadOnly }
func (r rootFileSystem) MkdirAll(string) error               { return errReadOnly }
func (r rootFileSystem) RemoveAll(string) error              { return errReadOnly }
func (r rootFileSystem) WriteFile(string, []byte) error      { return errReadOnly }

func (r rootFileSystem) Open(p string) (filesys.File, error) {
	f, err := r.fsys.Open(r.rel(p))
	if err != nil {
		return nil, err
	}
	return readOnlyFile{f}, nil
}

func (r rootFileSystem) IsDir(p string) bool {
	fi, err := fs.Stat(r.fsys, r.rel(p))
	return err == nil && fi.IsDir()
}

func (r rootFileSystem) ReadDir(p string) ([]string, error) {
	entries, err := fs.ReadDir(r.fsys, r.rel(p))
	if err != nil {
		return nil, err
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names, nil
}

func (r rootFileSystem) CleanedAbs(p string) (filesys.ConfirmedDir, string, error) {
	abs := "/" + strings.TrimPrefix(path.Join("/", r.rel(p)), "/")
	if r.IsDir(abs) {
		return filesys.ConfirmedDir(abs), "", nil
	}
	dir, file := path.Split(abs)
	if !r.IsDir(dir) {
		return "", "", &fs.PathError{Op: "open", Path: strings.TrimPrefix(dir, "/"), Err: fs.ErrNotExist}
	}
	return filesys.ConfirmedDir(path.Clean(dir)), file, nil
}

func (r rootFileSystem) Exists(p string) bool {
	_, err := fs.Stat(r.fsys, r.rel(p))
	return err == nil
}

func (r rootFileSystem) Glob(pattern string) ([]string, error) {
	matches, err := fs.Glob(r.fsys, r.rel(pattern))
	if err != nil {
		return nil, err
	}
	for i, m := range matches {
		matches[i] = "/" + m
	}
	return matches, nil
}

func (r rootFileSystem) ReadFile(p string) ([]byte, error) { return fs.ReadFile(r.fsys, r.rel(p)) }

func (r rootFileSystem) Walk(p string, walkFn filepath.WalkFunc) error {
	return fs.WalkDir(r.fsys, r.rel(p), func(name string, d fs.DirEntry, err error) error {
		full := "/" + name
		if name == "." {
			full = "/"
		}
		if err != nil {
			return walkFn(full, nil, err)
		}
		fi, err := d.Info()
		return walkFn(full, fi, err)
	})
}

// readOnlyFile is an fs.File kustomize may only read.
type readOnlyFile struct{ fs.File }

func (f readOnlyFile) Write([]byte) (int, error) { return 0, errReadOnly }

func (f readOnlyFile) Read(b []byte) (int, error) { return f.File.Read(b) }

func (f readOnlyFile) Stat() (os.FileInfo, error) { return f.File.Stat() }

var _ io.ReadWriteCloser = readOnlyFile{}
