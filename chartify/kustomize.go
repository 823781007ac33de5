package chartify

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/yaml"

	"github.com/helm-inject/helm-inject/internal/repofs"
)

// CheckKustomizationLocal refuses a kustomization in dir that would read
// anything but files of the repository: a remote resource, base or component (a
// URL kustomize fetches or a Git repository it clones), a local entry
// that resolves outside the repository, a Helm chart kustomize would pull,
// or a generator or transformer that is not one of kustomize's built-in
// ones. It follows every local kustomization the tree refers to, and reads
// the generator, transformer and validator configuration files each names.
// A dir that holds no kustomization passes.
//
// The check is there for its messages (the file and the entry): what
// holds is the build itself, which fetches, clones and runs nothing for a
// repository (kustomize, withoutFetchers). The check looks where
// kustomize reads: an entry is joined to its kustomization's folder as
// text, as kustomize's loader does, so "link/../sub" is the folder sub
// beside link, whatever link leads to.
//
// Every file is read through the repository's root, and dir is a path
// inside it (as repofs.Repo.Resolve returns); messages name repository
// paths.
func CheckKustomizationLocal(repo *repofs.Repo, dir string) error {
	c := kustomizeCheck{repo: repo, seen: map[string]bool{}}
	return c.dir(dir)
}

// entryList is one field of a kustomization that names files, and what
// kustomize makes of an entry.
type entryList struct {
	field   string
	entries []string
	kind    entryKind
}

// entryKind is what kustomize makes of an entry of a field.
type entryKind int

const (
	// files are read as they are (a manifest, a patch, a generator's data).
	files entryKind = iota
	// folders may also be folders with a kustomization of their own
	// (resources, bases, components).
	folders
	// plugins are generators', transformers' or validators'
	// configurations: a file, an inline configuration, or a folder whose
	// kustomization builds them. A configuration names files of its own.
	plugins
)

type kustomizeCheck struct {
	repo *repofs.Repo
	seen map[string]bool
}

// dir checks the kustomization in dir (a path as kustomize reaches it,
// links not resolved), if there is one.
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
	check := func(l entryList) error {
		for _, e := range l.entries {
			if strings.Contains(e, "\n") {
				// An inline plugin configuration or patch: it names no
				// file to load, but a configuration may hold a URL.
				if strings.Contains(e, "://") {
					return fmt.Errorf("kustomization %s: an inline entry of %s names a URL; only files in the repository are allowed here", file, l.field)
				}
				if l.kind == plugins {
					if err := c.plugins(dir, file, "an inline entry of "+l.field, []byte(e)); err != nil {
						return err
					}
				}
				continue
			}
			if err := c.entry(dir, file, l.field, e, l.kind); err != nil {
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
		{"resources", k.Resources, folders},
		{"bases", k.Bases, folders},
		{"components", k.Components, folders},
		{"generators", k.Generators, plugins},
		{"transformers", k.Transformers, plugins},
		{"validators", k.Validators, plugins},
		{"crds", k.Crds, files},
		{"configurations", k.Configurations, files},
		{"openapi", pathsOf(k.OpenAPI["path"]), files},
		{"patchesStrategicMerge", merges, files},
		{"patches", patches, files},
		{"configMapGenerator/secretGenerator", generated, files},
	}
	for _, l := range lists {
		if err := check(l); err != nil {
			return err
		}
	}
	return nil
}

// entry checks one file or folder the kustomization file in dir names
// in field: a folder's kustomization, a configuration file's entries.
func (c kustomizeCheck) entry(dir, file, field, e string, kind entryKind) error {
	if remoteEntry(e) {
		return fmt.Errorf("kustomization %s: %s entry %q is remote; only files in the repository are allowed here (vendor it into the repository)", file, field, e)
	}
	if path.IsAbs(e) || filepath.IsAbs(e) {
		return fmt.Errorf("kustomization %s: %s entry %q: give a path relative to the kustomization, inside the repository", file, field, e)
	}
	// kustomize joins an entry to its kustomization's folder as text
	// (ConfirmedDir.Join, a filepath.Join: kyaml/filesys/
	// confirmeddir.go:74, called by FileLoader.New and Load, api/internal/
	// loader/fileloader.go:170 and :298) and only then asks the file
	// system, which follows the links left in the cleaned path. The check
	// takes the same path, so that it looks at what kustomize reads.
	target := path.Join(dir, e)
	if target == ".." || strings.HasPrefix(target, "../") {
		return fmt.Errorf("kustomization %s: %s entry %q is outside the repository", file, field, e)
	}
	real, err := c.repo.Resolve(target)
	if errors.Is(err, repofs.ErrOutside) {
		return fmt.Errorf("kustomization %s: %s entry %q is outside the repository", file, field, e)
	}
	if err != nil {
		return fmt.Errorf("kustomization %s: %s entry %q: %w", file, field, e, err)
	}
	fi, err := c.repo.Stat(real)
	switch {
	case err != nil || kind == files:
		return nil
	case fi.IsDir():
		// A folder is a kustomization of its own, reached as kustomize
		// reaches it: its entries are joined to target, not to where
		// the links in target lead.
		return c.dir(target)
	case kind == plugins:
		b, err := c.repo.ReadFile(target)
		if err != nil {
			return fmt.Errorf("kustomization %s: %s entry %q: %w", file, field, e, err)
		}
		return c.plugins(dir, file, field+" file "+target, b)
	}
	return nil
}

// pluginConfig is what kustomize's built-in generators and transformers
// read from files (api/internal/builtins): the fields that name one.
type pluginConfig struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// FileSources, EnvSources and EnvSource: ConfigMapGenerator and
	// SecretGenerator.
	types.KvPairSources
	// Path: PatchTransformer and PatchJson6902Transformer.
	Path string `json:"path"`
	// Paths: PatchStrategicMergeTransformer.
	Paths []types.PatchStrategicMerge `json:"paths"`
	// Replacements: ReplacementTransformer.
	Replacements []types.ReplacementField `json:"replacements"`
	// TargetFilePath: ValueAddTransformer.
	TargetFilePath string `json:"targetFilePath"`
}

// plugins checks the generator, transformer or validator configurations
// in b, which the kustomization file in dir names (what says where):
// each must be one of kustomize's built-in plugins (the others do not run
// here), not a Helm chart, and each file it names is an entry of the
// kustomization (the plugin reads it with the kustomization's loader).
func (c kustomizeCheck) plugins(dir, file, what string, b []byte) error {
	nodes, err := kio.FromBytes(b)
	if err != nil {
		return fmt.Errorf("kustomization %s: %s: %w", file, what, err)
	}
	for _, n := range nodes {
		j, err := n.MarshalJSON()
		if err != nil {
			return fmt.Errorf("kustomization %s: %s: %w", file, what, err)
		}
		var p pluginConfig
		if err := json.Unmarshal(j, &p); err != nil {
			return fmt.Errorf("kustomization %s: %s: %w", file, what, err)
		}
		// kustomize's own test (isBuiltinPlugin, api/internal/plugins/
		// loader/loader.go): no group, version "builtin".
		if p.APIVersion != konfig.BuiltinPluginApiVersion {
			return fmt.Errorf("kustomization %s: %s: %s %s is not one of kustomize's built-in generators and transformers, the only ones that run here", file, what, p.APIVersion, p.Kind)
		}
		if p.Kind == "HelmChartInflationGenerator" {
			return fmt.Errorf("kustomization %s: %s: %s is not allowed here: kustomize would pull the chart from its repository", file, what, p.Kind)
		}
		var merges, replacements []string
		for _, m := range p.Paths {
			merges = append(merges, string(m))
		}
		for _, r := range p.Replacements {
			replacements = append(replacements, pathsOf(r.Path)...)
		}
		for _, l := range []entryList{
			{"files", sourceFiles(types.KvPairSources{FileSources: p.FileSources}), files},
			{"envs", append(slices.Clone(p.EnvSources), pathsOf(p.EnvSource)...), files},
			{"path", pathsOf(p.Path), files},
			{"paths", merges, files},
			{"replacements", replacements, files},
			{"targetFilePath", pathsOf(p.TargetFilePath), files},
		} {
			for _, e := range l.entries {
				if strings.Contains(e, "\n") {
					continue // an inline patch: no file
				}
				if err := c.entry(dir, file, what+": "+p.Kind+" "+l.field, e, files); err != nil {
					return err
				}
			}
		}
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

// kustomizeOptions are kustomize's own switches for every build here: a
// kustomization reads files at or below its folder (a base may be
// anywhere), and only kustomize's built-in generators and transformers
// run: no exec or container function, no Go plugin, no helm
// (types.DisabledPluginConfig, api/types/pluginconfig.go:37). They are
// krusty.MakeDefaultOptions today (api/krusty/options.go:51), spelled out
// so that a kustomize release whose defaults change changes nothing here.
func kustomizeOptions() *krusty.Options {
	o := krusty.MakeDefaultOptions()
	o.LoadRestrictions = types.LoadRestrictionsRootOnly
	o.PluginConfig = types.DisabledPluginConfig()
	return o
}

// kustomize builds the kustomization in dir of fsys. A repository's
// (fsys is an offlineFS) is built with the process's fetchers shut
// (withoutFetchers): nothing a kustomization or a file it names says can
// reach the network or run a program, whether or not a check read it
// first.
func kustomize(fsys filesys.FileSystem, dir string) (resmap.ResMap, error) {
	k := krusty.MakeKustomizer(kustomizeOptions())
	if _, ok := fsys.(offlineFS); !ok {
		// A kustomization the user names on the command line is the
		// user's own: its remote bases are fetched as kustomize build
		// fetches them.
		return k.Run(fsys, dir)
	}
	var m resmap.ResMap
	err := withoutFetchers(func() error {
		var err error
		m, err = k.Run(fsys, dir)
		return err
	})
	return m, err
}

// offlineBuilds serializes the builds that shut the process's fetchers:
// each puts back what it found, so two at once could leave the second
// with them open (the first puts back the open ones in its middle). It
// is the one piece of state here because what it guards is the
// process's own (http.DefaultTransport, PATH).
var offlineBuilds sync.Mutex

// withoutFetchers runs build with kustomize's two ways out of the process
// shut, and puts them back after. kustomize has no switch for either, and
// its loader is internal (krusty.Kustomizer.Run makes it, api/krusty/
// kustomizer.go:62), so each is shut where kustomize reaches for it:
//
//   - FileLoader.Load GETs an http(s) entry before any file system is
//     asked, with a client of its own making, &http.Client{}
//     (api/internal/loader/fileloader.go:294 and :307-318): its transport
//     is the process's http.DefaultTransport, which refuses every request
//     while build runs.
//   - FileLoader.New clones any entry that parses as a Git URL with
//     git.ClonerUsingGitExec (api/internal/loader/loader.go:27,
//     fileloader.go:163), which finds git with exec.LookPath on PATH
//     (api/internal/git/gitrunner.go:25): PATH is empty while build
//     runs, so no git (and no other program found by name) starts.
//
// Both are the process's: a goroutine that uses either while build runs
// is refused too (it fails closed). argocd generate loads the chart
// before it starts anything else.
func withoutFetchers(build func() error) error {
	offlineBuilds.Lock()
	defer offlineBuilds.Unlock()
	transport := http.DefaultTransport
	http.DefaultTransport = refuseFetch{}
	defer func() { http.DefaultTransport = transport }()
	path, hadPath := os.LookupEnv("PATH")
	if err := os.Setenv("PATH", ""); err != nil {
		return fmt.Errorf("shutting kustomize's Git clones (PATH): %w", err)
	}
	defer func() {
		if hadPath {
			os.Setenv("PATH", path)
		} else {
			os.Unsetenv("PATH")
		}
	}()
	return build()
}

// errNotFetched is what kustomize's HTTP client gets in a repository's
// build.
var errNotFetched = errors.New("nothing is fetched here: a kustomization in the repository may name only files in the repository (vendor it into the repository)")

// refuseFetch is the transport of a repository's build: every request
// fails before it is sent.
type refuseFetch struct{}

func (refuseFetch) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		r.Body.Close() // a RoundTripper closes the body, even on error
	}
	return nil, errNotFetched
}
