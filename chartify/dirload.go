package chartify

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/ignore"

	"github.com/helm-inject/helm-inject/internal/parallel"
)

// loadDir is Helm's loader.LoadDir, file for file and error for error: the
// same walk (names sorted, symbolic links followed and logged as Helm
// logs them, .helmignore and its defaults, irregular files refused, the
// byte order mark stripped, the size budget of a chart archive counted in
// walk order), handed to Helm's own loader.LoadFiles. It differs in how it
// reads: the walk takes each entry's type from its folder's listing, and
// the files are then read on every CPU with the fewest system calls the
// platform allows (readChartFile), where Helm stats each entry, then opens
// and reads each file in turn. That was 13 ms of a 500-template chart's
// `helm-inject template` in system calls alone (docs/performance.md).
// TestLoadDirMatchesHelm holds it to Helm's loader.
func loadDir(dir string, budget int64) (*chart.Chart, error) {
	topdir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	rules := ignore.Empty()
	ifile := filepath.Join(topdir, ignore.HelmIgnore)
	if _, err := os.Stat(ifile); err == nil {
		if rules, err = ignore.ParseFile(ifile); err != nil {
			return nil, err
		}
	}
	rules.AddDefaults()
	w := dirWalk{topdir: topdir + string(filepath.Separator), rules: rules}
	// Helm walks topdir with a trailing separator, so a linked chart
	// folder is a folder; a root it cannot stat or list gives no files.
	if root, err := os.Lstat(w.topdir); err == nil && root.IsDir() {
		if entries, err := os.ReadDir(topdir); err == nil {
			if err := w.children(topdir, entries); err != nil && !errors.Is(err, filepath.SkipDir) {
				// Helm stops here: what it read before still comes first.
				w.entries = append(w.entries, dirEntry{err: err})
			}
		}
	}
	_ = parallel.For(len(w.entries), func(i int) error {
		if e := &w.entries[i]; e.path != "" {
			e.data, e.modTime, e.readErr = readChartFile(e.path, budget)
		}
		return nil
	})
	files := make([]*archive.BufferedFile, 0, len(w.entries))
	remaining := budget
	for _, e := range w.entries {
		if e.err != nil {
			return nil, e.err
		}
		if e.readErr == nil && int64(len(e.data)) > remaining {
			e.readErr = overBudget(budget)
		}
		if e.readErr != nil {
			return nil, fmt.Errorf("error reading %s: %w", e.name, e.readErr)
		}
		remaining -= int64(len(e.data))
		files = append(files, &archive.BufferedFile{Name: e.name, ModTime: e.modTime, Data: bytes.TrimPrefix(e.data, utf8BOM)})
	}
	return loader.LoadFiles(files)
}

// overBudget is Helm's BudgetedReader's error for a chart larger than
// budget bytes.
func overBudget(budget int64) error {
	return fmt.Errorf("chart exceeds maximum decompressed size of %d bytes", budget)
}

// dirWalk is Helm's sympath.Walk with loadDir's walk function, gathering
// the files to read instead of reading them.
type dirWalk struct {
	topdir  string
	rules   *ignore.Rules
	entries []dirEntry
}

// dirEntry is a file of the chart to read, in walk order, or the error
// that stopped the walk.
type dirEntry struct {
	name, path string
	err        error
	data       []byte
	modTime    time.Time
	readErr    error
}

// walk is sympath's symwalk of path, whose Lstat is info, with loadDir's
// walk function.
func (w *dirWalk) walk(path string, info fs.FileInfo) error {
	if info.Mode()&fs.ModeSymlink != 0 {
		resolved, err := filepath.EvalSymlinks(path)
		if err != nil {
			return fmt.Errorf("error evaluating symlink %s: %w", path, err)
		}
		slog.Info("found symbolic link in path. Contents of linked file included and used", "path", path, "resolved", resolved)
		if info, err = os.Lstat(resolved); err != nil {
			return err
		}
		if err := w.walk(path, info); err != nil && !errors.Is(err, filepath.SkipDir) {
			return err
		}
		return nil
	}
	n := filepath.ToSlash(strings.TrimPrefix(path, w.topdir))
	if !info.IsDir() {
		return w.file(n, path, info)
	}
	if w.rules.Ignore(n, info) {
		return filepath.SkipDir
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return err
	}
	return w.children(path, entries)
}

// children walks the entries of the folder path, sorted by name.
func (w *dirWalk) children(path string, entries []fs.DirEntry) error {
	for _, e := range entries {
		p := filepath.Join(path, e.Name())
		t := e.Type()
		var err error
		if t.IsRegular() {
			// A regular file's Lstat would only say it is no folder,
			// which its folder's listing said: it is read with an fstat.
			err = w.file(filepath.ToSlash(strings.TrimPrefix(p, w.topdir)), p, listedFile{e})
		} else {
			var fi fs.FileInfo
			if fi, err = os.Lstat(p); err != nil {
				return err
			}
			err = w.walk(p, fi)
		}
		// Only an ignored folder answers SkipDir (a link's walk swallows
		// it), which skips that folder alone, as in Helm.
		if err != nil && !errors.Is(err, filepath.SkipDir) {
			return err
		}
	}
	return nil
}

// file is loadDir's walk function on a file: ignored, refused or kept.
func (w *dirWalk) file(n, path string, info fs.FileInfo) error {
	if w.rules.Ignore(n, info) {
		return nil
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("cannot load irregular file %s as it has file mode type bits set", path)
	}
	w.entries = append(w.entries, dirEntry{name: n, path: path})
	return nil
}

// listedFile is the FileInfo the ignore rules get of a regular file from
// its folder's listing: they ask only whether it is a folder.
type listedFile struct{ fs.DirEntry }

func (f listedFile) Size() int64        { return 0 }
func (f listedFile) Mode() fs.FileMode  { return f.Type() }
func (f listedFile) ModTime() time.Time { return time.Time{} }
func (f listedFile) Sys() any           { return nil }
