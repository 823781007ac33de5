package argocd

import (
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/helm-inject/helm-inject/inject"
)

// The operator's file of named injectors (--operator-injectors) holds
// fully fixed command lines an Application picks by name, with only the
// parameters the operator exposes, each checked against the operator's
// pattern.

// OperatorInjector is one injector the operator defines.
type OperatorInjector struct {
	// Name is what an Application writes in "operator-injector".
	Name string `yaml:"name"`
	// Command is the program and its arguments, run without a shell. FILE
	// is the manifests file, as in --inject; {{PARAM}} is a parameter's
	// value.
	Command []string `yaml:"command"`
	// Parameters are what an Application may set.
	Parameters []OperatorParameter `yaml:"parameters"`
}

// OperatorParameter is a value an Application may give an operator's
// injector.
type OperatorParameter struct {
	Name string `yaml:"name"`
	// Pattern is a regular expression the whole value must match.
	Pattern string `yaml:"pattern"`
	// Default is used when the Application gives no value; without one the
	// parameter is required.
	Default *string `yaml:"default"`

	re *regexp.Regexp
}

// placeholder is a parameter's place in a command argument.
var placeholder = regexp.MustCompile(`\{\{\s*([A-Za-z0-9_-]+)\s*\}\}`)

// LoadOperatorInjectors reads the operator's file of named injectors,
// refusing one that is ambiguous: a name twice, an empty command, a
// parameter without a pattern, a placeholder no parameter declares.
func LoadOperatorInjectors(path string) (map[string]*OperatorInjector, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--%s (%s): %w", FlagInjectorsFile, path, err)
	}
	var file struct {
		Injectors []*OperatorInjector `yaml:"injectors"`
	}
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&file); err != nil {
		return nil, fmt.Errorf("--%s (%s): %w", FlagInjectorsFile, path, err)
	}
	out := map[string]*OperatorInjector{}
	for _, inj := range file.Injectors {
		if err := inj.check(); err != nil {
			return nil, fmt.Errorf("--%s (%s): injector %q: %w", FlagInjectorsFile, path, inj.Name, err)
		}
		if out[inj.Name] != nil {
			return nil, fmt.Errorf("--%s (%s): injector %q is defined twice", FlagInjectorsFile, path, inj.Name)
		}
		out[inj.Name] = inj
	}
	return out, nil
}

func (inj *OperatorInjector) check() error {
	if inj.Name == "" || strings.ContainsAny(inj.Name, ". \t\n") {
		return fmt.Errorf("a name is required, without dots or spaces")
	}
	if len(inj.Command) == 0 || inj.Command[0] == "" {
		return fmt.Errorf("no command")
	}
	declared := map[string]bool{}
	for i := range inj.Parameters {
		p := &inj.Parameters[i]
		if p.Pattern == "" {
			return fmt.Errorf("parameter %q has no pattern: say which values an Application may give", p.Name)
		}
		re, err := regexp.Compile(`^(?:` + p.Pattern + `)$`)
		if err != nil {
			return fmt.Errorf("parameter %q: %w", p.Name, err)
		}
		p.re = re
		if p.Default != nil && !re.MatchString(*p.Default) {
			return fmt.Errorf("parameter %q: the default %q does not match its pattern", p.Name, *p.Default)
		}
		declared[p.Name] = true
	}
	for _, a := range inj.Command {
		for _, m := range placeholder.FindAllStringSubmatch(a, -1) {
			if !declared[m[1]] {
				return fmt.Errorf("the command uses {{%s}}, which is no parameter", m[1])
			}
		}
	}
	if placeholder.MatchString(inj.Command[0]) {
		return fmt.Errorf("the program cannot come from a parameter")
	}
	return nil
}

// CommandLine is Argv as a line --inject takes (docs and tests).
func (inj *OperatorInjector) CommandLine(given map[string]string) (string, error) {
	argv, err := inj.Argv(given)
	if err != nil {
		return "", err
	}
	return inject.QuoteCommand(argv), nil
}

// Argv is the injector's command with an Application's parameter values,
// each placeholder replaced inside its own argument. A parameter the
// operator did not expose, a value that does not match its pattern and a
// missing required one are refused, naming the injector and the
// parameter.
func (inj *OperatorInjector) Argv(given map[string]string) ([]string, error) {
	values := map[string]string{}
	for _, p := range inj.Parameters {
		v, ok := given[p.Name]
		switch {
		case !ok && p.Default == nil:
			return nil, fmt.Errorf("injector %q: parameter %q is required (%s.%s in %q)", inj.Name, p.Name, inj.Name, p.Name, ParamOperatorInjectorSet)
		case !ok:
			v = *p.Default
		case !p.re.MatchString(v):
			return nil, fmt.Errorf("injector %q: parameter %q: %q does not match the operator's pattern %s", inj.Name, p.Name, v, p.Pattern)
		}
		values[p.Name] = v
	}
	for _, k := range slices.Sorted(maps.Keys(given)) {
		if _, ok := values[k]; !ok {
			return nil, fmt.Errorf("injector %q has no parameter %q (it has: %s)", inj.Name, k, inj.parameterNames())
		}
	}
	argv := make([]string, len(inj.Command))
	for i, a := range inj.Command {
		argv[i] = placeholder.ReplaceAllStringFunc(a, func(m string) string {
			return values[placeholder.FindStringSubmatch(m)[1]]
		})
	}
	return argv, nil
}

func (inj *OperatorInjector) parameterNames() string {
	if len(inj.Parameters) == 0 {
		return "none"
	}
	names := make([]string, len(inj.Parameters))
	for i, p := range inj.Parameters {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}
