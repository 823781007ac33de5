package chartify

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/yaml"

	"github.com/helm-inject/helm-inject/internal/repofs"
)

// CheckKustomizationLocal refuses a kustomization in dir that would read
// anything but files of the repository: a remote resource, base or component (a
// URL kustomize fetches or a Git repository it clones), a local entry
// that resolves outside the repository, or a Helm chart kustomize would pull. It
// follows every local kustomization the tree refers to. A dir that holds
// no kustomization passes.
//
// kustomize itself has no switch for this: its loader fetches any
// http(s) entry and clones anything that parses as a Git URL, before a
// file system could refuse it. So the entries are checked by the forms
// that loader recognizes, before the build.
//
// Every file is read through the repository's root, and dir is a path
// inside it (as repofs.Repo.Resolve returns); messages name repository
// paths.
func CheckKustomizationLocal(repo *repofs.Repo, dir string) error {
	c := kustomizeCheck{repo: repo, seen: map[string]bool{}}
	return c.dir(dir)
}

// entryList is one field of a kustomization that names files; folders
// says whether an entry may be a folder with a kustomization of its own.
type entryList struct {
	field   string
	entries []string
	folders bool
}

type kustomizeCheck struct {
	repo *repofs.Repo
	seen map[string]bool
}

// dir checks the kustomization in dir, if there is one.
func (c kustomizeCheck) dir(dir string) error {
	name := kustomizationFileFS(c.repo.FS(), dir)
	if name == "" || c.seen[dir] {
		return nil
	}
	c.seen[dir] = true
	file := path.Join(dir, name)
	b, err := c.repo.ReadFile(file)
	if err != nil {
		return err
	}
	var k types.Kustomization
	if err := yaml.Unmarshal(b, &k); err != nil {
		return fmt.Errorf("kustomization %s: %w", file, err)
	}
	if len(k.HelmCharts) > 0 || len(k.HelmChartInflationGenerator) > 0 || k.HelmGlobals != nil {
		return fmt.Errorf("kustomization %s: helmCharts are not allowed here: kustomize would pull the chart from its repository", file)
	}
	check := func(field string, entries []string, folders bool) error {
		for _, e := range entries {
			if strings.Contains(e, "\n") {
				// An inline plugin configuration or patch: it names no
				// file to load, but a configuration may hold a URL.
				if strings.Contains(e, "://") {
					return fmt.Errorf("kustomization %s: an inline entry of %s names a URL; only files in the repository are allowed here", file, field)
				}
				continue
			}
			if err := c.entry(dir, file, field, e, folders); err != nil {
				return err
			}
		}
		return nil
	}
	var patches, generated, merges []string
	for _, p := range append(append([]types.Patch{}, k.Patches...), k.PatchesJson6902...) {
		patches = append(patches, pathsOf(p.Path)...)
	}
	for _, r := range k.Replacements {
		patches = append(patches, pathsOf(r.Path)...)
	}
	for _, p := range k.PatchesStrategicMerge {
		merges = append(merges, string(p))
	}
	for _, g := range k.ConfigMapGenerator {
		generated = append(generated, sourceFiles(g.KvPairSources)...)
	}
	for _, g := range k.SecretGenerator {
		generated = append(generated, sourceFiles(g.KvPairSources)...)
	}
	lists := []entryList{
		{"resources", k.Resources, true},
		{"bases", k.Bases, true},
		{"components", k.Components, true},
		{"generators", k.Generators, true},
		{"transformers", k.Transformers, true},
		{"validators", k.Validators, true},
		{"crds", k.Crds, false},
		{"configurations", k.Configurations, false},
		{"openapi", pathsOf(k.OpenAPI["path"]), false},
		{"patchesStrategicMerge", merges, false},
		{"patches", patches, false},
		{"configMapGenerator/secretGenerator", generated, false},
	}
	for _, l := range lists {
		if err := check(l.field, l.entries, l.folders); err != nil {
			return err
		}
	}
	return nil
}

// entry checks one file or folder a kustomization names, and the
// kustomization of a folder.
func (c kustomizeCheck) entry(dir, file, field, e string, folders bool) error {
	if remoteEntry(e) {
		return fmt.Errorf("kustomization %s: %s entry %q is remote; only files in the repository are allowed here (vendor it into the repository)", file, field, e)
	}
	if path.IsAbs(e) || filepath.IsAbs(e) {
		return fmt.Errorf("kustomization %s: %s entry %q: give a path relative to the kustomization, inside the repository", file, field, e)
	}
	real, err := c.repo.Resolve(dir + "/" + e)
	if errors.Is(err, repofs.ErrOutside) {
		return fmt.Errorf("kustomization %s: %s entry %q is outside the repository", file, field, e)
	}
	if err != nil {
		return fmt.Errorf("kustomization %s: %s entry %q: %w", file, field, e, err)
	}
	if fi, err := c.repo.Stat(real); err == nil && fi.IsDir() && folders {
		return c.dir(real)
	}
	return nil
}

// gitUser is the user@ that makes kustomize read an entry as an SCP-style
// Git URL (its repospec.go extractUsername).
var gitUser = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9-]*@`)

// remoteEntry reports whether kustomize's loader would fetch or clone e
// rather than read a local path: any URL (http(s) is fetched; ssh, file
// and the rest are cloned), "git::" forms, SCP-style user@host:path, and
// github.com/ORG/REPO (repospec.go: extractScheme, extractUsername,
// isStandardGithubHost; fileloader.go: IsRemoteFile).
func remoteEntry(e string) bool {
	l := strings.ToLower(e)
	return strings.Contains(l, "://") || strings.HasPrefix(l, "git::") || gitUser.MatchString(e) ||
		strings.HasPrefix(l, "github.com/") || strings.HasPrefix(l, "github.com:")
}

// sourceFiles are the files of a generator's sources ("[key=]path").
func sourceFiles(s types.KvPairSources) []string {
	var files []string
	for _, f := range s.FileSources {
		if _, path, ok := strings.Cut(f, "="); ok {
			f = path
		}
		files = append(files, f)
	}
	files = append(files, s.EnvSources...)
	return append(files, pathsOf(s.EnvSource)...)
}

func pathsOf(p string) []string {
	if p == "" {
		return nil
	}
	return []string{p}
}
