package chartify

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/ignore"
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
// The readers share the budget as they read (readBudget), taking files in
// walk order: no file that would pass it is read, and the first that
// does not fit stops them all, so a chart over the budget stops about
// where Helm's loader does, not after all of it is in memory.
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
	readAhead(w.entries, &readBudget{limit: budget})
	files := make([]*archive.BufferedFile, 0, len(w.entries))
	remaining := budget
	inTurn := false
	for i := range w.entries {
		e := &w.entries[i]
		if e.err != nil {
			return nil, e.err
		}
		if !inTurn && (!e.read || errors.Is(e.readErr, errOverBudget)) {
			// The file did not fit beside those read at the same time
			// (or was not read once one did not), where Helm gives it
			// what the files before it left: the few read after it are
			// let go, and it and those after it are read in turn.
			inTurn = true
			for j := i + 1; j < len(w.entries); j++ {
				w.entries[j].data = nil
			}
		}
		if inTurn && e.path != "" {
			e.data, e.modTime, e.readErr = readChartFile(e.path, &readBudget{limit: remaining})
		}
		if errors.Is(e.readErr, errOverBudget) {
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

// minPerWorker keeps a small chart's files on one goroutine, where
// starting workers would cost more than it saves (as internal/parallel).
const minPerWorker = 16

// readAhead reads the files of entries on every CPU, each worker taking
// the next file in walk order, all sharing b: when a file does not fit,
// what was read is the start of the walk and the few files the other
// workers were reading, and no worker starts another.
func readAhead(entries []dirEntry, b *readBudget) {
	var next atomic.Int64
	var full atomic.Bool
	work := func() {
		for !full.Load() {
			i := int(next.Add(1) - 1)
			if i >= len(entries) {
				return
			}
			e := &entries[i]
			if e.path == "" {
				continue
			}
			e.data, e.modTime, e.readErr = readChartFile(e.path, b)
			e.read = true
			if errors.Is(e.readErr, errOverBudget) {
				full.Store(true)
			}
		}
	}
	workers := min(runtime.GOMAXPROCS(0), len(entries)/minPerWorker)
	if workers <= 1 {
		work()
		return
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(work)
	}
	wg.Wait()
}

// overBudget is Helm's BudgetedReader's error for a chart larger than
// budget bytes.
func overBudget(budget int64) error {
	return fmt.Errorf("chart exceeds maximum decompressed size of %d bytes", budget)
}

// errOverBudget is a file that did not fit in its readBudget.
var errOverBudget = errors.New("over the budget")

// readBudget is the bytes the readers of one chart's files may hold
// between them: each takes a file's size (its fstat's) before it reads
// it, and each byte past that size as it reads it, so together they
// never hold more than limit.
type readBudget struct {
	limit int64
	used  atomic.Int64
}

// take reserves n bytes, or none when they would pass the limit.
func (b *readBudget) take(n int64) bool {
	for {
		used := b.used.Load()
		if n > b.limit-used {
			return false
		}
		if b.used.CompareAndSwap(used, used+n) {
			return true
		}
	}
}

// give returns n bytes taken for a file that was not kept.
func (b *readBudget) give(n int64) { b.used.Add(-n) }

// readPast reads the rest of a file whose size was taken from b with
// read (as io.Reader's Read; 0 bytes and no error is the end too) into
// data (its capacity one byte more than the size), taking from b each
// byte past the size as it is read, at most growChunk bytes a read: a
// file that grew since its fstat stops within growChunk of the budget.
// It returns the bytes taken, which the caller gives back if the file
// is not kept.
func readPast(read func([]byte) (int, error), data []byte, b *readBudget, taken int64) ([]byte, int64, error) {
	const growChunk = 64 << 10
	for {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
		end := cap(data)
		if int64(len(data)) >= taken {
			end = min(end, len(data)+growChunk)
		}
		n, err := read(data[len(data):end])
		if n > 0 {
			data = data[:len(data)+n]
			if past := int64(len(data)) - taken; past > 0 {
				if !b.take(past) {
					return nil, taken, errOverBudget
				}
				taken += past
			}
		}
		if errors.Is(err, io.EOF) || (err == nil && n <= 0) {
			return data, taken, nil
		}
		if err != nil {
			return nil, taken, err
		}
	}
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
	// read tells a file readAhead read (its data or readErr) from one
	// it left once the budget ran out.
	read    bool
	data    []byte
	modTime time.Time
	readErr error
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
