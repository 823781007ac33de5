package argocd

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/strvals"

	"github.com/helm-inject/helm-inject/chartify"
	"github.com/helm-inject/helm-inject/inject"
	"github.com/helm-inject/helm-inject/internal/budget"
	"github.com/helm-inject/helm-inject/internal/confine"
	"github.com/helm-inject/helm-inject/internal/redact"
	"github.com/helm-inject/helm-inject/internal/repofs"
	"github.com/helm-inject/helm-inject/release"
)

// Policy is what the plugin's operator allows (Operator.Policy).
type Policy struct {
	// Mode is how the kernel confines the render.
	Mode confine.Mode
	// Read are more files and folders a confined render may read.
	Read []string
	// MaxMemory is the memory ceiling, in bytes, of the render and of
	// each injector (0: none).
	MaxMemory       int64
	AllowedCommands []string
	Library         string
	// Injectors are the operator's named injectors, read from
	// InjectorsFile.
	Injectors     map[string]*OperatorInjector
	InjectorsFile string
	// Limits bound what one render of an application may read, unpack
	// and print (zero fields: package budget's defaults).
	Limits budget.Limits
}

// Rendering is what generate renders for an application: typed inputs
// built from the Request (a chart, a values map, the injectors), never
// command-line strings handed to a flag parser, with every file read
// through one os.Root of the repository and nothing fetched.
type Rendering struct {
	Release string
	// Template holds the namespace, the capabilities, the injectors and
	// the pins; its schema validation loads nothing.
	Template release.Template
	Source   release.Source
	Values   map[string]any
	Print    release.PrintOptions
	// Budget is what the render has charged of the policy's Limits:
	// generate checks its output against it (CheckOutput).
	Budget *budget.Budget
}

// Prepare checks r against the policy and reads what it renders from the
// repository appDir belongs to: the chart (and its file:// dependencies
// missing from charts/), the values files and set-file files, the pins
// file and an injector library the application names. Each is read
// through the repository's os.Root: a path or symbolic link that leaves
// the repository fails in the kernel's resolution, and messages name
// repository paths only. Parameters become values one entry at a time
// through Helm's strvals parser, each key checked first, so an entry sets
// exactly its own key; no file is read and no URL fetched for a value.
// One budget of pol.Limits is charged everything the render reads and
// unpacks (files after links, archives by their unpacked size, values,
// parameters, list slots), as it is read: past a bound, Prepare fails
// naming it.
func (r *Request) Prepare(appDir string, pol Policy) (*Rendering, error) {
	if r.Release == "" {
		return nil, fmt.Errorf("%s is not set and no %q parameter is given: helm-inject argocd generate runs as an Argo CD plugin (set it to the release name to run it by hand)", EnvAppName, ParamReleaseName)
	}
	b := budget.New(pol.Limits)
	fail := func(err error) (*Rendering, error) {
		if be := b.Err(); be != nil && !errors.As(err, new(*budget.ExceededError)) {
			// A library kept only the message of a read's error: the
			// bound passed is the cause, and stays one to errors.As.
			err = be
		}
		return nil, fmt.Errorf("%s: %w", r.app(), err)
	}
	if err := b.Read("the parameters", paramBytes(r.Params)); err != nil {
		return fail(err)
	}
	// with-set keys go through strvals in injectors(); set, set-string
	// and set-file keys are charged where they are set.
	for _, k := range slices.Sorted(maps.Keys(r.Params.WithSet)) {
		if err := b.ListSlots(fmt.Sprintf("%s %q", ParamWithSet, k), listSlots(k)); err != nil {
			return fail(err)
		}
	}
	repo, appRel, err := r.openRepo(appDir, b)
	if err != nil {
		return fail(err)
	}
	defer repo.Close()
	p := r.Params
	chartPath, err := resolve(repo, appRel, "chart", cmp.Or(p.Chart, "."))
	if err != nil {
		return fail(err)
	}
	if err := chartify.CheckKustomizationLocal(repo, chartPath); err != nil {
		return fail(err)
	}
	ch, _, err := chartify.LoadFromRepo(repo, chartPath, func(ch *chart.Chart) error {
		return addDependencies(repo, chartPath, ch)
	})
	if err != nil {
		return fail(err)
	}
	vals, err := r.values(repo, appRel, b)
	if err != nil {
		return fail(err)
	}
	declared, pins, err := r.injectors(repo, appRel, pol)
	if err != nil {
		return fail(err)
	}
	// A loader may take a read that failed for an optional file that is
	// not there (Helm's .helmignore, a kustomize probe): a bound passed
	// still fails the render, never changes it.
	if err := b.Err(); err != nil {
		return fail(err)
	}
	out := &Rendering{
		Release: r.Release,
		Source:  release.Source{Ref: chartPath, Chart: ch},
		Values:  vals,
		Print:   release.PrintOptions{IncludeCRDs: !p.SkipCRDs, SkipTests: p.SkipTests},
		Budget:  b,
	}
	t := &out.Template
	t.Namespace = r.Namespace
	t.KubeVersion = r.KubeVersion
	t.Render.APIVersions = r.APIVersions
	t.Render.SchemaLoadsNothing = true
	t.SkipSchemaValidation = p.SkipSchema
	t.Injectors = declared
	t.Pins = pins
	return out, nil
}

// Repository is the folder of the repository appDir belongs to, with
// its symbolic links resolved: under Argo CD's cmp-server the folder it
// unpacked the request into, otherwise appDir without the application's
// source path.
func (r *Request) Repository(appDir string) (string, error) {
	root, err := r.repository(appDir)
	if err != nil {
		return "", fmt.Errorf("%s: %w", r.app(), err)
	}
	return root, nil
}

func (r *Request) repository(appDir string) (string, error) {
	root, err := repoRoot(appDir, r.SourcePath, r.CMPWorkDir)
	if err != nil {
		return "", err
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", fmt.Errorf("the repository: %w", err)
	}
	return realRoot, nil
}

// Confinement is what a generate for the repository repo may reach once
// it confines itself (package confine): read the repository, the
// operator's library and named-injectors file and the folders of
// Read; execute the programs injectors may run, as found on
// PATH now (one not found is left out: running it fails as it would
// unconfined). The caller adds its private folder.
func (p Policy) Confinement(repo string) confine.Policy {
	out := confine.Policy{Read: []string{repo}}
	for _, f := range []string{p.Library, p.InjectorsFile} {
		if f != "" {
			out.Read = append(out.Read, f)
		}
	}
	out.Read = append(out.Read, p.Read...)
	progs := slices.Clone(p.AllowedCommands)
	for _, name := range slices.Sorted(maps.Keys(p.Injectors)) {
		progs = append(progs, p.Injectors[name].Command[0])
	}
	for _, prog := range progs {
		path, err := exec.LookPath(prog)
		if err != nil || !filepath.IsAbs(path) {
			continue
		}
		if real, err := filepath.EvalSymlinks(path); err == nil && !slices.Contains(out.Exec, real) {
			out.Exec = append(out.Exec, real)
		}
	}
	return out
}

// openRepo opens the repository appDir belongs to as one os.Root and
// returns it with appDir's path inside it; its reads are charged to b.
func (r *Request) openRepo(appDir string, b *budget.Budget) (*repofs.Repo, string, error) {
	realRoot, err := r.repository(appDir)
	if err != nil {
		return nil, "", err
	}
	realApp, err := filepath.EvalSymlinks(appDir)
	if err != nil {
		return nil, "", fmt.Errorf("the application's folder: %w", err)
	}
	rel, err := filepath.Rel(realRoot, realApp)
	if err != nil || !within(realRoot, realApp) {
		return nil, "", fmt.Errorf("the application's folder is not inside its repository")
	}
	repo, err := repofs.OpenBudget(realRoot, b)
	if err != nil {
		return nil, "", err
	}
	return repo, filepath.ToSlash(rel), nil
}

// resolve is where a path an application names (relative to its folder
// appRel) leads inside the repository, or an error naming the parameter
// and the path as the application wrote it. A missing file's error
// matches fs.ErrNotExist.
func resolve(repo *repofs.Repo, appRel, what, name string) (string, error) {
	if strings.Contains(name, "://") || path.IsAbs(name) || filepath.IsAbs(name) {
		return "", fmt.Errorf("%s %q: give a path relative to the application's folder, inside the repository", what, name)
	}
	p, err := repo.Resolve(appRel + "/" + name)
	switch {
	case errors.Is(err, repofs.ErrOutside):
		return "", fmt.Errorf("%s %q is outside the repository", what, name)
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("%s %q does not exist in the repository: %w", what, name, fs.ErrNotExist)
	case err != nil:
		return "", fmt.Errorf("%s %q: %w", what, name, err)
	}
	return p, nil
}

// readFile reads a file an application names, through the repository.
func readFile(repo *repofs.Repo, appRel, what, name string) ([]byte, error) {
	p, err := resolve(repo, appRel, what, name)
	if err != nil {
		return nil, err
	}
	b, err := repo.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", what, name, err)
	}
	return b, nil
}

// values merges the application's values as helm template does, in
// helm's order: the values files (a missing one left out under
// ignore-missing-value-files, as Argo CD does; one outside the repository
// refused either way), the inline values, then set, set-string and
// set-file, each entry in key order. Each key's list slots are charged
// to b before strvals makes them.
func (r *Request) values(repo *repofs.Repo, appRel string, b *budget.Budget) (map[string]any, error) {
	p := r.Params
	base := map[string]any{}
	merge := func(what string, b []byte) error {
		m, err := loader.LoadValues(bytes.NewReader(b))
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		base = loader.MergeMaps(base, m)
		return nil
	}
	for _, f := range p.ValuesFiles {
		b, err := readFile(repo, appRel, "values file", f)
		if p.IgnoreMissingValues && errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if err := merge(fmt.Sprintf("values file %q", f), b); err != nil {
			return nil, err
		}
	}
	if p.Values != "" {
		if err := merge(fmt.Sprintf("the %q parameter", ParamValues), []byte(p.Values)); err != nil {
			return nil, err
		}
	}
	if err := setEach(ParamSet, p.Set, base, b, strvals.ParseInto); err != nil {
		return nil, err
	}
	if err := setEach(ParamSetString, p.SetString, base, b, strvals.ParseIntoString); err != nil {
		return nil, err
	}
	for _, k := range slices.Sorted(maps.Keys(p.SetFile)) {
		if err := checkKey(ParamSetFile, k); err != nil {
			return nil, err
		}
		if err := b.ListSlots(fmt.Sprintf("%s %q", ParamSetFile, k), listSlots(k)); err != nil {
			return nil, err
		}
		b, err := readFile(repo, appRel, "set-file "+k, p.SetFile[k])
		if err != nil {
			return nil, err
		}
		content := string(b)
		// The value's text is never parsed: the reader hands strvals the
		// file's content for this one key.
		if err := strvals.ParseIntoFile(k+"=-", base, func([]rune) (any, error) { return content, nil }); err != nil {
			return nil, fmt.Errorf("%s %q: %w", ParamSetFile, k, err)
		}
	}
	return base, nil
}

// setEach sets each key=value of m (a map parameter) into dest with
// Helm's strvals parser (parse), one entry at a time, in key order, each
// key's list slots charged to b first.
func setEach(param string, m map[string]string, dest map[string]any, b *budget.Budget, parse func(string, map[string]any) error) error {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if err := checkKey(param, k); err != nil {
			return err
		}
		if err := b.ListSlots(fmt.Sprintf("%s %q", param, k), listSlots(k)); err != nil {
			return err
		}
		v := m[k]
		if strings.HasPrefix(v, "{") && !plainList(v) {
			// strvals reads a value that starts with "{" as a list, and
			// what follows its "}" as the next entry.
			return fmt.Errorf("%s %q: a value that starts with \"{\" is a list, {a,b}, and nothing after it", param, k)
		}
		if err := parse(k+"="+escapeSetValue(v), dest); err != nil {
			return fmt.Errorf("%s %q: %w", param, k, err)
		}
	}
	return nil
}

// listSlots is how many list slots Helm's strvals makes for key: n+1 for
// each [n] (a[2].b[3] makes a list of 3 and, in its last slot, a map with
// a list of 4), read as strvals reads a key (a backslash escapes the
// next character). An index strvals refuses (above strvals.MaxIndex, or
// not a number) counts as its largest, so that the sum cannot overflow.
func listSlots(key string) int64 {
	var n int64
	for i := 0; i < len(key); i++ {
		switch key[i] {
		case '\\':
			i++
		case '[':
			end := strings.IndexByte(key[i+1:], ']')
			if end < 0 {
				return n
			}
			idx, err := strconv.Atoi(key[i+1 : i+1+end])
			if err != nil || idx < 0 || idx > strvals.MaxIndex {
				idx = strvals.MaxIndex
			}
			n += int64(idx) + 1
			i += end + 1
		}
	}
	return n
}

// paramBytes is the size of the parameters' text, keys included, found
// by reflection so that a parameter added later is counted too.
func paramBytes(p Params) int64 {
	var n int64
	v := reflect.ValueOf(p)
	for i := range v.NumField() {
		switch f := v.Field(i); f.Kind() {
		case reflect.String:
			n += int64(f.Len())
		case reflect.Slice:
			for j := range f.Len() {
				n += int64(f.Index(j).Len())
			}
		case reflect.Map:
			for it := f.MapRange(); it.Next(); {
				n += int64(it.Key().Len() + it.Value().Len())
			}
		}
	}
	return n
}

// checkKey refuses a key that would end where Helm's strvals parser ends
// a key and start another entry: an "=" or "," not escaped with a
// backslash, or a trailing backslash. A key is a path (a.b, list[0], a
// backslash escaping ".", "[", "]", "=" or ","), nothing more.
func checkKey(param, k string) error {
	if k == "" {
		return fmt.Errorf("%s: an empty key", param)
	}
	for i := 0; i < len(k); i++ {
		switch k[i] {
		case '\\':
			if i++; i == len(k) {
				return fmt.Errorf("%s key %q ends in a backslash", param, k)
			}
		case '=', ',':
			return fmt.Errorf("%s key %q holds %q: a key names one value (escape it as \\%c to have it in a key)", param, k, k[i], k[i])
		}
	}
	return nil
}

// injectors are the application's injectors, typed: its own (each
// program allowed by the operator), the operator's named ones, and the
// built-in ones at their pinned versions (pins, nil when there are
// none). A pins file that pins an injector the application no longer
// names is an error: dropping "with" must not silently take the sidecars
// away.
func (r *Request) injectors(repo *repofs.Repo, appRel string, pol Policy) (*inject.Declared, inject.Pins, error) {
	p := r.Params
	d := &inject.Declared{Timeout: inject.DefaultTimeout, SkipHooks: p.SkipInjectHooks, SkipTests: p.SkipInjectTests}
	params, err := withParams(p.WithSet)
	if err != nil {
		return nil, nil, err
	}
	for _, spec := range p.Injector {
		c, err := pol.allow(spec, inject.ParseSpec)
		if err != nil {
			return nil, nil, err
		}
		d.Specs = append(d.Specs, c)
	}
	for _, line := range p.Inject {
		c, err := pol.allow(line, inject.ParseCommand)
		if err != nil {
			return nil, nil, err
		}
		d.Specs = append(d.Specs, c)
	}
	named, err := pol.operatorInjectors(p.OperatorInjector, p.OperatorInjectorSet)
	if err != nil {
		return nil, nil, err
	}
	for _, c := range named {
		d.Specs = append(d.Specs, c)
	}
	pinsPath, pins, err := readPins(repo, appRel)
	if err != nil {
		return nil, nil, err
	}
	with := p.With
	if with == nil {
		// No "with" at all (an Application without a plugin section
		// has none to give): the pins file says which.
		for _, name := range slices.Sorted(maps.Keys(pins)) {
			with = append(with, name+"@"+pinConstraint(pins[name]))
		}
	}
	if len(with) == 0 {
		if len(p.WithSet) > 0 {
			return nil, nil, fmt.Errorf("%s is given without %q", ParamWithSet, ParamWith)
		}
		return d, nil, checkPinsUsed(pins, with)
	}
	if pinsPath == "" {
		return nil, nil, fmt.Errorf("built-in injectors %s have no %s in %s: run \"helm-inject argocd pin --injector-library LIB --with %s %s\" and commit the file",
			strings.Join(with, ", "), inject.PinsFileName, r.SourcePathOr("the application's folder"), strings.Join(with, " --with "), r.SourcePathOr("DIR"))
	}
	lib, err := r.library(repo, appRel, pol, with)
	if err != nil {
		return nil, nil, err
	}
	used := map[string]bool{}
	for _, w := range with {
		ref, err := inject.ParseTemplateRef(lib, w, params[strings.SplitN(w, "@", 2)[0]])
		if err != nil {
			return nil, nil, fmt.Errorf("%s %w", ParamWith, err)
		}
		if used[ref.Injector] {
			return nil, nil, fmt.Errorf("%s %s: injector %s is given twice", ParamWith, w, ref.Injector)
		}
		used[ref.Injector] = true
		d.Specs = append(d.Specs, ref)
	}
	for _, name := range slices.Sorted(maps.Keys(params)) {
		if !used[name] {
			return nil, nil, fmt.Errorf("%s %s.*: %q does not name %s", ParamWithSet, name, ParamWith, name)
		}
	}
	if pins == nil {
		pins = inject.Pins{}
	}
	return d, pins, checkPinsUsed(pins, with)
}

// withParams reads the with-set map (NAME.PARAM: VALUE) into parameters
// per injector, each entry typed as set types it.
func withParams(set map[string]string) (map[string]map[string]any, error) {
	out := map[string]map[string]any{}
	for _, k := range slices.Sorted(maps.Keys(set)) {
		name, param, ok := strings.Cut(k, ".")
		if !ok || name == "" || param == "" {
			return nil, fmt.Errorf("%s %q: want NAME.PARAM", ParamWithSet, k)
		}
		if err := checkKey(ParamWithSet, k); err != nil {
			return nil, err
		}
		if out[name] == nil {
			out[name] = map[string]any{}
		}
		if v := set[k]; strings.HasPrefix(v, "{") && !plainList(v) {
			return nil, fmt.Errorf("%s %q: a value that starts with \"{\" is a list, {a,b}, and nothing after it", ParamWithSet, k)
		}
		if err := strvals.ParseInto(param+"="+escapeSetValue(set[k]), out[name]); err != nil {
			return nil, fmt.Errorf("%s %q: %w", ParamWithSet, k, err)
		}
	}
	return out, nil
}

// library is the built-in injectors' library: the application's (read
// through the repository), else the operator's.
func (r *Request) library(repo *repofs.Repo, appRel string, pol Policy, with []string) (*inject.Library, error) {
	if lib := r.Params.InjectorLibrary; lib != "" {
		p, err := resolve(repo, appRel, "injector library", lib)
		if err != nil {
			return nil, err
		}
		return inject.LoadLibraryFS(repo.FS(), p, p)
	}
	if pol.Library == "" {
		return nil, fmt.Errorf("built-in injectors %s need a library: give the %q parameter, or the operator sets --%s in the plugin's plugin.yaml", strings.Join(with, ", "), ParamInjectorLibrary, FlagLibrary)
	}
	return inject.LoadLibrary(pol.Library)
}

// readPins reads the application's pins file through the repository, if
// it has one, and returns its repository path ("" when there is none).
func readPins(repo *repofs.Repo, appRel string) (string, inject.Pins, error) {
	p, err := resolve(repo, appRel, "pins file", inject.PinsFileName)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil, nil
	}
	if err != nil {
		return "", nil, err
	}
	b, err := repo.ReadFile(p)
	if err != nil {
		return "", nil, fmt.Errorf("pins file %s: %w", p, err)
	}
	pins, err := inject.ParsePins(p, b)
	return p, pins, err
}

// checkPinsUsed refuses pins of an injector "with" does not name (an
// Application that gives "with" names every injector its pins file pins).
func checkPinsUsed(pins inject.Pins, with []string) error {
	named := map[string]bool{}
	for _, w := range with {
		name, _, _ := strings.Cut(w, "@")
		named[name] = true
	}
	for _, name := range slices.Sorted(maps.Keys(pins)) {
		if !named[name] {
			return fmt.Errorf("%s pins the built-in injector %s, which the %q parameter does not name: add %s@%s to %q, leave %q out to inject what the file pins, or run \"helm-inject argocd pin\" without it and commit the file (the injector is not dropped silently)",
				inject.PinsFileName, name, ParamWith, name, pinConstraint(pins[name]), ParamWith, ParamWith)
		}
	}
	return nil
}

// pinConstraint is the constraint a pin was made with, else its version.
func pinConstraint(p inject.Pin) string {
	if p.Constraint != "" {
		return p.Constraint
	}
	return p.Version
}

// SourcePathOr is the application's folder in the repository, or def when
// Argo CD did not say.
func (r *Request) SourcePathOr(def string) string {
	if r.SourcePath == "" || r.SourcePath == "." {
		return def
	}
	return r.SourcePath
}

// operatorInjectors are the commands of the operator's injectors an
// Application picked, with the parameters it set (NAME.PARAM keys): each
// value is one argument, never a line split again.
func (pol Policy) operatorInjectors(names []string, set map[string]string) ([]*inject.Command, error) {
	given := map[string]map[string]string{}
	for k, v := range set {
		name, param, ok := strings.Cut(k, ".")
		if !ok || !slices.Contains(names, name) {
			return nil, fmt.Errorf("%s %q: give NAME.PARAM of an injector named in %q", ParamOperatorInjectorSet, k, ParamOperatorInjector)
		}
		if given[name] == nil {
			given[name] = map[string]string{}
		}
		given[name][param] = v
	}
	var cmds []*inject.Command
	for _, name := range names {
		inj, ok := pol.Injectors[name]
		if !ok {
			defined := "none"
			if len(pol.Injectors) > 0 {
				defined = strings.Join(slices.Sorted(maps.Keys(pol.Injectors)), ", ")
			}
			return nil, fmt.Errorf("the operator defines no injector %q (defined: %s; the operator lists them in the file --%s names in the plugin's plugin.yaml)", name, defined, FlagInjectorsFile)
		}
		argv, err := inj.Argv(given[name])
		if err != nil {
			return nil, err
		}
		c, err := inject.CommandFromArgv(argv)
		if err != nil {
			return nil, fmt.Errorf("the operator's injector %q: %w", name, err)
		}
		cmds = append(cmds, c)
	}
	return cmds, nil
}

// allow parses an application's external injector and refuses one whose
// program the operator did not list.
func (pol Policy) allow(spec string, parse func(string) (*inject.Command, error)) (*inject.Command, error) {
	c, err := parse(spec)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(pol.AllowedCommands, c.Argv[0]) {
		allowed := "none"
		if len(pol.AllowedCommands) > 0 {
			allowed = strings.Join(pol.AllowedCommands, ", ")
		}
		return nil, fmt.Errorf("injector %q runs %q, which this plugin does not allow (allowed: %s; the operator lists programs in --%s in the plugin's plugin.yaml)", redact.String(c.Spec), c.Argv[0], allowed, FlagAllowedCommands)
	}
	return c, nil
}

// escapeSetValue escapes a value as Argo CD's Helm source type does
// (util/helm's cleanSetParameters), so that strvals reads one value: a
// list in braces ("{a,b}") is kept, otherwise a comma not already escaped
// is escaped ("a,b" and "a\\,b" both give "a,b").
// plainList reports whether v is one list in braces, "{a,b}", with no
// brace inside ("{a},x={b}" is a list and a second entry).
func plainList(v string) bool {
	return len(v) >= 2 && strings.HasPrefix(v, "{") && strings.HasSuffix(v, "}") && !strings.ContainsAny(v[1:len(v)-1], "{}")
}

func escapeSetValue(v string) string {
	if plainList(v) {
		return v
	}
	var b strings.Builder
	var prev rune
	for _, c := range v {
		if c == ',' && prev != '\\' {
			b.WriteString(`\,`)
		} else {
			b.WriteRune(c)
		}
		prev = c
	}
	return b.String()
}

// repoRoot is the root of what the repo-server sent: below the cmp-server's
// work folder, the folder it unpacked this request into (the repository,
// or with reposerver.plugin.use.manifest.generate.paths only the folders
// the application's manifest-generate-paths name, where appDir no longer
// ends with the source path); elsewhere (run by hand), appDir without the
// application's source path.
func repoRoot(appDir, sourcePath, cmpWorkDir string) (string, error) {
	abs, err := filepath.Abs(appDir)
	if err != nil {
		return "", err
	}
	if cmpWorkDir != "" {
		work, werr := filepath.EvalSymlinks(cmpWorkDir)
		real, aerr := filepath.EvalSymlinks(abs)
		if werr == nil && aerr == nil {
			if rel, err := filepath.Rel(work, real); err == nil && within(work, real) && rel != "." {
				first, _, _ := strings.Cut(rel, string(filepath.Separator))
				return filepath.Join(work, first), nil
			}
		}
	}
	sp := filepath.Clean(filepath.FromSlash(sourcePath))
	if sourcePath == "" || sp == "." {
		return abs, nil
	}
	if filepath.IsAbs(sp) || !strings.HasSuffix(abs, string(filepath.Separator)+sp) {
		return "", fmt.Errorf("the application's folder %s does not end with its source path %s (%s)", abs, sourcePath, EnvSourcePath)
	}
	return strings.TrimSuffix(abs, string(filepath.Separator)+sp), nil
}

// within reports whether path is root or below it (both resolved).
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}
