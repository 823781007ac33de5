package chartify

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/ignore"

	"github.com/helm-inject/helm-inject/internal/budget"
	"github.com/helm-inject/helm-inject/internal/repofs"
)

// LoadFromRepo loads what dir names inside repo (a slash path that
// Resolve returned, "." for the top): a chart folder, a packaged chart
// (.tgz), a kustomization or a folder of plain manifests, as Load does for
// a local path, but every file is read through the repository's root and
// nothing else is: no chart repository, registry, Git clone or URL, and a
// symbolic link in the chart is followed only while it stays inside the
// repository. Messages name repository paths only. A kustomization must
// pass CheckKustomizationLocal first (kustomize fetches remote entries
// before any file system is asked). complete, when set, is called with a
// chart folder's chart before its dependencies are checked (to add those
// missing from charts/).
func LoadFromRepo(repo *repofs.Repo, dir string, complete func(*chart.Chart) error) (*chart.Chart, SourceKind, error) {
	fi, err := repo.Stat(dir)
	if err != nil {
		return nil, "", fmt.Errorf("chart %s: %w", dir, err)
	}
	if !fi.IsDir() {
		data, err := repo.ReadFile(dir)
		if err != nil {
			return nil, "", fmt.Errorf("chart %s: %w", dir, err)
		}
		// Helm's loader gives the archive, and each archive in it, a
		// budget of its own: the render's is charged first.
		if err := repo.Budget().Unpack(dir, bytes.NewReader(data), unpackedEntry); err != nil {
			return nil, "", fmt.Errorf("chart %s: %w", dir, err)
		}
		ch, err := loader.LoadArchive(bytes.NewReader(data))
		if err != nil {
			return nil, "", fmt.Errorf("loading chart %s: %w", dir, err)
		}
		ch, err = checkChart(ch, dir)
		return ch, SourceChart, err
	}
	fsys := repo.FS()
	switch {
	case fileIn(fsys, dir, "Chart.yaml"):
		ch, err := loadChartFS(repo, dir)
		if err != nil {
			return nil, "", err
		}
		if complete != nil {
			if err := complete(ch); err != nil {
				return nil, "", err
			}
		}
		ch, err = checkChart(ch, dir)
		return ch, SourceChart, err
	case kustomizationFileFS(fsys, dir) != "":
		ch, err := loadKustomizationFS(repo, dir)
		return ch, SourceKustomize, err
	default:
		ch, err := loadManifestsFS(repo, dir)
		return ch, SourceManifests, err
	}
}

// LoadChartFromRepo loads the chart folder dir of repo as Helm's
// directory loader does, through the root (a dependency's file://
// folder).
func LoadChartFromRepo(repo *repofs.Repo, dir string) (*chart.Chart, error) {
	return loadChartFS(repo, dir)
}

func fileIn(fsys fs.FS, dir, name string) bool {
	fi, err := fs.Stat(fsys, path.Join(dir, name))
	return err == nil && !fi.IsDir()
}

func kustomizationFileFS(fsys fs.FS, dir string) string {
	for _, n := range []string{"kustomization.yaml", "kustomization.yml", "Kustomization"} {
		if fileIn(fsys, dir, n) {
			return n
		}
	}
	return ""
}

// utf8BOM is what Helm's directory loader strips from every file.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// loadChartFS is Helm's loader.LoadDir (its .helmignore rules and
// defaults, symbolic links followed, irregular files refused, the size
// budget of a chart archive, the byte order mark stripped) on files read
// through the repository's root, handed to Helm's own loader.LoadFiles.
func loadChartFS(repo *repofs.Repo, dir string) (*chart.Chart, error) {
	fsys := repo.FS()
	rules := ignore.Empty()
	if b, err := fs.ReadFile(fsys, path.Join(dir, ignore.HelmIgnore)); err == nil {
		if rules, err = ignore.Parse(bytes.NewReader(b)); err != nil {
			return nil, fmt.Errorf("chart %s: %s: %w", dir, ignore.HelmIgnore, err)
		}
	}
	rules.AddDefaults()
	w := chartWalk{repo: repo, fsys: fsys, rules: rules, budget: archive.MaxDecompressedChartSize}
	if err := w.walk(dir, "", 0); err != nil {
		return nil, fmt.Errorf("chart %s: %w", dir, err)
	}
	ch, err := loader.LoadFiles(w.files)
	if err != nil {
		return nil, fmt.Errorf("loading chart %s: %w", dir, err)
	}
	return ch, nil
}

type chartWalk struct {
	repo   *repofs.Repo
	fsys   fs.FS
	rules  *ignore.Rules
	budget int64
	files  []*archive.BufferedFile
}

// walk adds the files below real (a resolved repository path) under the
// chart name prefix; a linked folder is walked under the link's name, as
// Helm's sympath.Walk does.
func (w *chartWalk) walk(real, prefix string, depth int) error {
	if depth > 40 {
		return fmt.Errorf("%s: too many levels of symbolic links", prefix)
	}
	entries, err := fs.ReadDir(w.fsys, real)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := path.Join(prefix, e.Name())
		p := path.Join(real, e.Name())
		fi, err := e.Info()
		if err != nil {
			return err
		}
		linked := depth
		if fi.Mode()&fs.ModeSymlink != 0 {
			// An ignored link is never followed: .helmignore may leave
			// out what the chart's folder links to.
			if w.rules.Ignore(name, fi) {
				continue
			}
			if p, err = w.repo.Resolve(p); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			if fi, err = fs.Stat(w.fsys, p); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			linked++
		}
		if fi.IsDir() {
			if w.rules.Ignore(name, fi) {
				continue
			}
			if err := w.walk(p, name, linked); err != nil {
				return err
			}
			continue
		}
		if w.rules.Ignore(name, fi) {
			continue
		}
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("cannot load irregular file %s as it has file mode type bits set", name)
		}
		if fi.Size() > w.budget {
			return fmt.Errorf("%s: the chart exceeds the maximum decompressed size of %d bytes", name, archive.MaxDecompressedChartSize)
		}
		data, err := fs.ReadFile(w.fsys, p)
		if err != nil {
			return fmt.Errorf("error reading %s: %w", name, err)
		}
		if w.budget -= int64(len(data)); w.budget < 0 {
			return fmt.Errorf("%s: the chart exceeds the maximum decompressed size of %d bytes", name, archive.MaxDecompressedChartSize)
		}
		if unpacked(name) {
			// Helm's loader unpacks it with a fresh budget of its own
			// (and each archive inside it): the render's is charged
			// first, as it is read.
			if err := w.repo.Budget().Unpack(p, bytes.NewReader(data), unpackedEntry); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
		w.files = append(w.files, &archive.BufferedFile{Name: name, ModTime: fi.ModTime(), Data: bytes.TrimPrefix(data, utf8BOM)})
	}
	return nil
}

// unpacked reports whether Helm's loader.LoadFiles unpacks the chart file
// name (a path in the chart) as a subchart archive: charts/X.tgz, or the
// same below a subchart folder (charts/sub/charts/X.tgz), where no name
// after charts/ starts with "_" or "." (LoadFiles skips those).
func unpacked(name string) bool {
	for {
		rest, ok := strings.CutPrefix(name, "charts/")
		if !ok {
			return false
		}
		sub, below, inFolder := strings.Cut(rest, "/")
		if strings.IndexAny(sub, "_.") == 0 {
			return false
		}
		if !inFolder {
			return path.Ext(sub) == ".tgz"
		}
		if path.Ext(sub) == ".tgz" {
			// A folder named X.tgz: LoadFiles refuses it.
			return false
		}
		name = below
	}
}

// unpackedEntry reports whether Helm's loader unpacks the entry of a
// chart archive whose tar name is entry: LoadArchiveFiles names it
// without its first element (the chart's folder), cleaned, with a
// Windows archive's backslashes as slashes; then as unpacked.
func unpackedEntry(entry string) bool {
	delimiter := "/"
	if strings.ContainsRune(entry, '\\') {
		delimiter = "\\"
	}
	parts := strings.Split(entry, delimiter)
	return unpacked(path.Clean(strings.ReplaceAll(strings.Join(parts[1:], delimiter), delimiter, "/")))
}

// loadManifestsFS is loadManifests through the root.
func loadManifestsFS(repo *repofs.Repo, dir string) (*chart.Chart, error) {
	ch := namedChart(path.Base(dir), dir, "plain manifests")
	fsys := repo.FS()
	var paths []string
	err := fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != dir && strings.HasPrefix(d.Name(), ".") {
			return fs.SkipDir
		}
		switch strings.ToLower(path.Ext(p)) {
		case ".yaml", ".yml", ".json":
			if !d.IsDir() {
				paths = append(paths, p)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading manifests in %s: %w", dir, err)
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("%s is neither a chart (no Chart.yaml), a kustomization nor a folder of .yaml manifests", dir)
	}
	slices.Sort(paths)
	for _, p := range paths {
		data, err := repo.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("reading manifests in %s: %w", dir, err)
		}
		rel := strings.TrimPrefix(p, dir+"/")
		if dir == "." {
			rel = p
		}
		name := "templates/" + strings.TrimPrefix(rel, "_")
		if ext := path.Ext(name); ext != ".yaml" && ext != ".yml" {
			name += ".yaml"
		}
		ch.Templates = append(ch.Templates, &common.File{Name: name, Data: []byte(Escape(string(data)))})
	}
	return ch, nil
}

// loadKustomizationFS builds dir with the kustomize API on the
// repository's root.
func loadKustomizationFS(repo *repofs.Repo, dir string) (*chart.Chart, error) {
	ch := namedChart(path.Base(dir), dir, "kustomization")
	err := kustomizeInto(ch, rootFileSystem{repo.FS()}, "/"+strings.TrimPrefix(path.Clean("/"+dir), "/"), dir)
	if be := repo.Budget().Err(); err != nil && be != nil && !errors.As(err, new(*budget.ExceededError)) {
		// kustomize keeps only the message of a read's error: the
		// bound passed is the cause, and stays one to errors.As.
		err = fmt.Errorf("kustomize build %s: %w", dir, be)
	}
	return ch, err
}

// errReadOnly is what a kustomize build on the repository gets for a
// write: the repository is only read.
var errReadOnly = errors.New("the repository is read only here")
