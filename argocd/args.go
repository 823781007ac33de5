package argocd

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/helm-inject/helm-inject/chartify"
	"github.com/helm-inject/helm-inject/inject"
	"github.com/helm-inject/helm-inject/internal/redact"
)

// The plugin sidecar's own settings. An Application sets only ARGOCD_ENV_*
// variables, so these stay the operator's.
const (
	// EnvAllowedCommands lists, comma separated, the programs external
	// injectors may run (the first word of the command, as written: a
	// name looked up on the sidecar's PATH, or an absolute path). Unset
	// or empty: no external injector runs.
	EnvAllowedCommands = "HELM_INJECT_ALLOWED_COMMANDS"
	// EnvLibrary is the plugin's injector library, for applications that
	// do not name one in the repository.
	EnvLibrary = "HELM_INJECT_INJECTOR_LIBRARY"
)

// Policy is what the plugin's operator allows.
type Policy struct {
	AllowedCommands []string
	Library         string
	// Injectors are the operator's named injectors (EnvInjectors).
	Injectors map[string]*OperatorInjector
}

// ReadPolicy reads the sidecar's settings.
func ReadPolicy(getenv func(string) string) (Policy, error) {
	p := Policy{Library: getenv(EnvLibrary)}
	for _, c := range strings.Split(getenv(EnvAllowedCommands), ",") {
		if c = strings.TrimSpace(c); c != "" {
			p.AllowedCommands = append(p.AllowedCommands, c)
		}
	}
	if path := getenv(EnvInjectors); path != "" {
		var err error
		if p.Injectors, err = LoadOperatorInjectors(path); err != nil {
			return Policy{}, err
		}
	}
	return p, nil
}

// TemplateArgs checks r against the policy and returns the arguments of
// `helm-inject template` that render it in appDir, the application's
// folder. inlineValues is the file the caller wrote the "values"
// parameter to ("" when there is none). Nothing outside the repository
// is read: the chart, values files and a library named by the
// application must be inside it, and a built-in injector needs the app's
// pins file.
func (r *Request) TemplateArgs(appDir string, pol Policy, inlineValues string) ([]string, error) {
	if r.Release == "" {
		return nil, fmt.Errorf("%s is not set and no %q parameter is given: helm-inject argocd generate runs as an Argo CD plugin (set it to the release name to run it by hand)", EnvAppName, ParamReleaseName)
	}
	fail := func(err error) ([]string, error) { return nil, fmt.Errorf("%s: %w", r.app(), err) }
	root, chart, err := r.chart(appDir)
	if err != nil {
		return fail(err)
	}
	p := r.Params
	args := []string{"template"}
	if !p.SkipCRDs {
		args = append(args, "--include-crds")
	}
	if r.Namespace != "" {
		args = append(args, "--namespace", r.Namespace)
	}
	if r.KubeVersion != "" {
		args = append(args, "--kube-version", r.KubeVersion)
	}
	for _, v := range r.APIVersions {
		args = append(args, "--api-versions", v)
	}
	values, err := r.valuesArgs(root, appDir, inlineValues)
	if err != nil {
		return fail(err)
	}
	args = append(args, values...)
	injectors, err := r.injectorArgs(root, appDir, pol)
	if err != nil {
		return fail(err)
	}
	args = append(args, injectors...)
	for _, f := range []struct {
		on   bool
		flag string
	}{{p.SkipInjectHooks, "--skip-inject-hooks"}, {p.SkipInjectTests, "--skip-inject-tests"}, {p.SkipTests, "--skip-tests"}, {p.SkipSchema, "--skip-schema-validation"}} {
		if f.on {
			args = append(args, f.flag)
		}
	}
	// Positionals after "--": a release or chart that starts with "-" is
	// never taken for a flag.
	return append(args, "--", r.Release, chart), nil
}

// valuesArgs are the flags of the values: the values files (a missing one
// left out under ignore-missing-value-files, as Argo CD does; one outside
// the repository refused either way), the inline values, --set,
// --set-string and --set-file.
func (r *Request) valuesArgs(root, appDir, inlineValues string) ([]string, error) {
	p := r.Params
	var args []string
	for _, f := range p.ValuesFiles {
		real, err := inRepo(root, appDir, "values file", f)
		if p.IgnoreMissingValues && errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		args = append(args, "--values", real)
	}
	if inlineValues != "" {
		args = append(args, "--values", inlineValues)
	}
	args = appendSet(args, "--set", p.Set)
	args = appendSet(args, "--set-string", p.SetString)
	for _, k := range slices.Sorted(maps.Keys(p.SetFile)) {
		real, err := inRepo(root, appDir, "set-file "+k, p.SetFile[k])
		if err != nil {
			return nil, err
		}
		args = append(args, "--set-file", k+"="+real)
	}
	return args, nil
}

// injectorArgs are the flags of the injectors: the application's own
// (each program allowed by the operator), the operator's named ones, and
// the built-in ones at their pinned versions. A pins file that pins an
// injector the application no longer names is an error: dropping "with"
// must not silently take the sidecars away.
func (r *Request) injectorArgs(root, appDir string, pol Policy) ([]string, error) {
	p := r.Params
	var args []string
	for _, spec := range p.Injector {
		if err := pol.allow(spec, inject.ParseSpec); err != nil {
			return nil, err
		}
		args = append(args, "--injector", spec)
	}
	for _, line := range p.Inject {
		if err := pol.allow(line, inject.ParseCommand); err != nil {
			return nil, err
		}
		args = append(args, "--inject", line)
	}
	named, err := pol.operatorInjectors(p.OperatorInjector, p.OperatorInjectorSet)
	if err != nil {
		return nil, err
	}
	for _, line := range named {
		args = append(args, "--inject", line)
	}
	pinsPath, pins, err := r.readPins(root, appDir)
	if err != nil {
		return nil, err
	}
	with := p.With
	if with == nil {
		// No "with" at all (an Application without a plugin section
		// has none to give): the pins file says which.
		for _, name := range slices.Sorted(maps.Keys(pins)) {
			with = append(with, name+"@"+pinConstraint(pins[name]))
		}
	}
	if len(with) > 0 {
		builtins, err := r.builtinArgs(root, appDir, pol, with, pinsPath)
		if err != nil {
			return nil, err
		}
		args = append(args, builtins...)
	}
	return args, checkPinsUsed(pins, with)
}

// readPins reads the application's pins file, if it has one, and returns
// the path it resolves to ("" when there is none).
func (r *Request) readPins(root, appDir string) (string, inject.Pins, error) {
	path, err := inRepo(root, appDir, "pins file", inject.PinsFileName)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil, nil
	}
	if err != nil {
		return "", nil, err
	}
	pins, err := inject.ReadPins(path)
	return path, pins, err
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

// chart returns the repository's root and the application's chart (the
// "chart" parameter, else the folder itself) as the physical path it
// resolves to, refusing one outside the repository. A kustomization must
// build from the repository alone (chartify.CheckKustomizationLocal).
func (r *Request) chart(appDir string) (root, chart string, err error) {
	if root, err = repoRoot(appDir, r.SourcePath, r.CMPWorkDir); err != nil {
		return "", "", err
	}
	if chart = r.Params.Chart; chart == "" {
		chart = "."
	}
	if chart, err = inRepo(root, appDir, "chart", chart); err != nil {
		return "", "", err
	}
	if err := chartify.CheckKustomizationLocal(chart, root); err != nil {
		return "", "", err
	}
	return root, chart, nil
}

// builtinArgs are the flags of the built-in injectors: the library, the
// injectors with their parameters, and the app's pins file (pins, the
// path readPins resolved; "" when the app has none).
func (r *Request) builtinArgs(root, appDir string, pol Policy, with []string, pins string) ([]string, error) {
	p := r.Params
	lib := p.InjectorLibrary
	if lib != "" {
		var err error
		if lib, err = inRepo(root, appDir, "injector library", lib); err != nil {
			return nil, err
		}
	} else if lib = pol.Library; lib == "" {
		return nil, fmt.Errorf("built-in injectors %s need a library: give the %q parameter, or set %s on the plugin's sidecar", strings.Join(with, ", "), ParamInjectorLibrary, EnvLibrary)
	}
	if pins == "" {
		return nil, fmt.Errorf("built-in injectors %s have no %s in %s: run \"helm-inject argocd pin --injector-library LIB --with %s %s\" and commit the file",
			strings.Join(with, ", "), inject.PinsFileName, r.SourcePathOr("the application's folder"), strings.Join(with, " --with "), r.SourcePathOr("DIR"))
	}
	args := []string{"--injector-library", lib}
	for _, w := range with {
		args = append(args, "--with", w)
	}
	for _, k := range slices.Sorted(maps.Keys(p.WithSet)) {
		args = append(args, "--with-set", k+"="+p.WithSet[k])
	}
	return append(args, "--injector-pins", pins), nil
}

// SourcePathOr is the application's folder in the repository, or def when
// Argo CD did not say.
func (r *Request) SourcePathOr(def string) string {
	if r.SourcePath == "" || r.SourcePath == "." {
		return def
	}
	return r.SourcePath
}

// operatorInjectors are the command lines of the operator's injectors an
// Application picked, with the parameters it set (NAME.PARAM keys).
func (pol Policy) operatorInjectors(names []string, set map[string]string) ([]string, error) {
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
	var lines []string
	for _, name := range names {
		inj, ok := pol.Injectors[name]
		if !ok {
			defined := "none"
			if len(pol.Injectors) > 0 {
				defined = strings.Join(slices.Sorted(maps.Keys(pol.Injectors)), ", ")
			}
			return nil, fmt.Errorf("the operator defines no injector %q (defined: %s; the operator lists them in the file %s names on the plugin's sidecar)", name, defined, EnvInjectors)
		}
		line, err := inj.CommandLine(given[name])
		if err != nil {
			return nil, err
		}
		lines = append(lines, line)
	}
	return lines, nil
}

// allow refuses an external injector whose program the operator did not
// list.
func (pol Policy) allow(spec string, parse func(string) (*inject.Command, error)) error {
	c, err := parse(spec)
	if err != nil {
		return err
	}
	if !slices.Contains(pol.AllowedCommands, c.Argv[0]) {
		allowed := "none"
		if len(pol.AllowedCommands) > 0 {
			allowed = strings.Join(pol.AllowedCommands, ", ")
		}
		return fmt.Errorf("injector %q runs %q, which this plugin does not allow (allowed: %s; the operator lists programs in %s on the plugin's sidecar)", redact.String(c.Spec), c.Argv[0], allowed, EnvAllowedCommands)
	}
	return nil
}

// appendSet adds key=value flags in key order, each value escaped as
// Argo CD's Helm source type escapes it (util/helm's cleanSetParameters):
// a value in braces is a list and kept as it is ("{a,b}"); otherwise a
// comma not already escaped is escaped, so that helm, which splits --set
// on commas, reads one value ("a,b" and "a\,b" both give "a,b").
func appendSet(args []string, flag string, m map[string]string) []string {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		args = append(args, flag, k+"="+escapeSetValue(m[k]))
	}
	return args
}

func escapeSetValue(v string) string {
	if strings.HasPrefix(v, "{") && strings.HasSuffix(v, "}") {
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

// inRepo returns the physical path a parameter names, refusing one that
// is not inside the repository: a plugin must not read the repo-server's
// files, which hold other applications' checkouts and the sidecar's
// credentials. The path is resolved as the file system resolves it, every
// symbolic link followed before the ".." after it (filepath.Join would
// first clean "link/../.." lexically, and check a decoy while helm read
// the real file), and the resolved path is what is checked and what the
// caller passes on. A comma is refused: helm splits --values on commas,
// so one entry would name two files.
func inRepo(root, appDir, what, path string) (string, error) {
	if strings.Contains(path, "://") || filepath.IsAbs(path) {
		return "", fmt.Errorf("%s %q: give a path relative to the application's folder, inside the repository", what, path)
	}
	if strings.Contains(path, ",") {
		return "", fmt.Errorf("%s %q: a path may not hold a comma", what, path)
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", fmt.Errorf("the repository %s: %w", root, err)
	}
	real, err := filepath.EvalSymlinks(appDir + string(filepath.Separator) + path)
	if err != nil {
		// Where the path leads as far as it exists says whether it
		// leaves the repository; the message never shows the server's
		// folders (an Application's author reads it).
		if errors.Is(err, fs.ErrNotExist) && !within(realRoot, deepestExisting(appDir, path)) {
			return "", fmt.Errorf("%s %q is outside the repository", what, path)
		}
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return "", fmt.Errorf("%s %q does not exist in the repository: %w", what, path, err)
	}
	if !within(realRoot, real) {
		return "", fmt.Errorf("%s %q is outside the repository", what, path)
	}
	if strings.Contains(real, ",") {
		return "", fmt.Errorf("%s %q: it resolves to %s, which holds a comma", what, path, real)
	}
	return real, nil
}

// deepestExisting resolves path below the physical folder dir one element
// at a time, as the kernel would ("s/.." is the parent of where the link s
// leads), and returns the physical path of the longest part that exists.
func deepestExisting(dir, path string) string {
	cur, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return dir
	}
	for _, elem := range strings.Split(filepath.ToSlash(path), "/") {
		next, err := filepath.EvalSymlinks(cur + string(filepath.Separator) + elem)
		if err != nil {
			break
		}
		cur = next
	}
	return cur
}

// within reports whether path is root or below it (both resolved).
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}
