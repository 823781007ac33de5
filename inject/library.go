package inject

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// LockFileName is the lock file beside the definitions in a library.
const LockFileName = "injectors.lock"

// Library is a folder of built-in injector definitions, one file per
// released version (NAME/VERSION.yaml), frozen by a lock file that records
// each version's digest, as go.sum does for modules.
type Library struct {
	Dir string
	// defs holds every version of every injector, oldest first.
	defs map[string][]*Definition
	// lock maps "name@version" to the digest recorded when it was locked.
	lock map[string]string
}

// LoadLibrary reads every definition below dir and the lock file. A
// definition whose file was changed after it was locked is an error: a
// released version is frozen, changes go into a new version.
func LoadLibrary(dir string) (*Library, error) {
	top := dir
	if top == "" {
		top = "." // os.DirFS("") would read from the file system's root
	}
	return loadLibrary(os.DirFS(top), ".", dir)
}

// LoadLibraryFS is LoadLibrary for the folder dir of fsys (a slash path,
// "." for its top), every file read through fsys; shown is the folder as
// messages name it. Argo CD's generate reads an application's library
// through the repository's os.Root this way.
func LoadLibraryFS(fsys fs.FS, dir, shown string) (*Library, error) {
	return loadLibrary(fsys, dir, shown)
}

func loadLibrary(fsys fs.FS, dir, shown string) (*Library, error) {
	lib := &Library{Dir: shown, defs: map[string][]*Definition{}, lock: map[string]string{}}
	if err := lib.readLock(fsys, path.Join(dir, LockFileName)); err != nil {
		return nil, err
	}
	err := fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || (path.Ext(p) != ".yaml" && path.Ext(p) != ".yml") {
			return nil
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		rel, _ := strings.CutPrefix(p, dir+"/")
		if dir == "." {
			rel = p
		}
		file := filepath.Join(shown, filepath.FromSlash(rel))
		def, err := ParseDefinition(file, data)
		if err != nil {
			return err
		}
		wantName, wantVersion := path.Base(path.Dir(p)), strings.TrimSuffix(path.Base(p), path.Ext(p))
		if def.Name != wantName || def.Version != wantVersion {
			return fmt.Errorf("injector definition %s declares %s; it must live in %s/%s.yaml", file, def.Ref(), def.Name, def.Version)
		}
		lib.defs[def.Name] = append(lib.defs[def.Name], def)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("injector library %s: %w", shown, err)
	}
	for _, versions := range lib.defs {
		slices.SortFunc(versions, func(a, b *Definition) int {
			return semver.MustParse(a.Version).Compare(semver.MustParse(b.Version))
		})
	}
	if err := lib.checkFrozen(); err != nil {
		return nil, err
	}
	return lib, nil
}

func (l *Library) lockPath() string { return filepath.Join(l.Dir, LockFileName) }

func (l *Library) readLock(fsys fs.FS, name string) error {
	f, err := fsys.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 3 || !strings.HasPrefix(fields[2], "sha256:") {
			return fmt.Errorf("%s:%d: want \"NAME VERSION sha256:DIGEST\", got %q", l.lockPath(), n, line)
		}
		l.lock[fields[0]+"@"+fields[1]] = fields[2]
	}
	return sc.Err()
}

// checkFrozen refuses definitions whose bytes differ from their lock entry.
func (l *Library) checkFrozen() error {
	var errs []error
	for _, name := range l.Names() {
		for _, d := range l.defs[name] {
			if locked, ok := l.lock[d.Ref()]; ok && locked != d.Digest {
				errs = append(errs, fmt.Errorf("%s was changed after %s was locked in %s (locked %s, now %s): a released version is frozen; restore it and add the change as a new version",
					d.File, d.Ref(), l.lockPath(), locked, d.Digest))
			}
		}
	}
	return errors.Join(errs...)
}

// Names lists the injectors in the library, sorted.
func (l *Library) Names() []string {
	return slices.Sorted(maps.Keys(l.defs))
}

// Versions lists an injector's versions, oldest first.
func (l *Library) Versions(name string) []*Definition { return l.defs[name] }

// Locked reports whether a version is recorded in the lock file.
func (l *Library) Locked(d *Definition) bool { return l.lock[d.Ref()] == d.Digest }

// Newest returns the highest version of an injector, or nil.
func (l *Library) Newest(name string) *Definition {
	v := l.defs[name]
	if len(v) == 0 {
		return nil
	}
	return v[len(v)-1]
}

// Get returns an exact version, or nil.
func (l *Library) Get(name, version string) *Definition {
	for _, d := range l.defs[name] {
		if d.Version == version {
			return d
		}
	}
	return nil
}

// Resolve returns the highest version of name that satisfies constraint
// (an exact version, "~1.0", "^1", ">=1.2 <2"; empty means any).
func (l *Library) Resolve(name, constraint string) (*Definition, error) {
	versions := l.defs[name]
	if len(versions) == 0 {
		return nil, fmt.Errorf("injector %q is not in the library %s (it has: %s)", name, l.Dir, strings.Join(l.Names(), ", "))
	}
	if constraint == "" {
		return versions[len(versions)-1], nil
	}
	c, err := semver.NewConstraint(constraint)
	if err != nil {
		return nil, fmt.Errorf("injector %s@%s: version constraint: %w", name, constraint, err)
	}
	for i := len(versions) - 1; i >= 0; i-- {
		if c.Check(semver.MustParse(versions[i].Version)) {
			return versions[i], nil
		}
	}
	have := make([]string, len(versions))
	for i, d := range versions {
		have[i] = d.Version
	}
	return nil, fmt.Errorf("no version of injector %q in %s matches %q (it has %s)", name, l.Dir, constraint, strings.Join(have, ", "))
}

// Lock records every version that is not locked yet and writes the lock
// file. Locked versions are never changed (LoadLibrary already refused a
// changed one). It returns the versions it added.
func (l *Library) Lock() ([]string, error) {
	var added []string
	for _, name := range l.Names() {
		for _, d := range l.defs[name] {
			if _, ok := l.lock[d.Ref()]; !ok {
				l.lock[d.Ref()] = d.Digest
				added = append(added, d.Ref())
			}
		}
	}
	keys := slices.Sorted(maps.Keys(l.lock))
	var b strings.Builder
	b.WriteString("# Digests of released injector versions. A locked version is frozen:\n# helm-inject refuses a definition whose file no longer matches. Add new\n# versions with `helm-inject injectors lock`.\n")
	for _, k := range keys {
		name, version, _ := strings.Cut(k, "@")
		fmt.Fprintf(&b, "%s %s %s\n", name, version, l.lock[k])
	}
	if err := os.WriteFile(l.lockPath(), []byte(b.String()), 0o644); err != nil {
		return nil, err
	}
	return added, nil
}

// Removed lists, sorted, the locked versions ("name@version") whose file
// is gone. A released version must never be removed: an application
// pinned to it can no longer render.
func (l *Library) Removed() []string {
	var gone []string
	for ref := range l.lock {
		name, version, _ := strings.Cut(ref, "@")
		if l.Get(name, version) == nil {
			gone = append(gone, ref)
		}
	}
	slices.Sort(gone)
	return gone
}

// Verify fails when a version is not locked (CI runs it).
func (l *Library) Verify() error {
	var missing []string
	for _, name := range l.Names() {
		for _, d := range l.defs[name] {
			if !l.Locked(d) {
				missing = append(missing, d.Ref()+" ("+d.File+")")
			}
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("not locked in %s: %s; run `helm-inject injectors lock`", l.lockPath(), strings.Join(missing, ", "))
	}
	return nil
}

func semverConstraint(s string) (*semver.Constraints, error) { return semver.NewConstraint(s) }

func mustVersion(s string) *semver.Version { return semver.MustParse(s) }
