// Package argocd runs helm-inject as an Argo CD Config Management Plugin.
// The repo-server runs the plugin's commands in the application's folder of
// a copy of the Git repository, with no cluster access, and says what it
// wants through the environment: the application's name and destination
// namespace, the cluster's Kubernetes and API versions, and the
// Application's plugin parameters. This package reads that environment
// into a Request, checks it against the operator's policy, and turns it
// into the arguments of `helm-inject template`, so that what Argo CD
// applies is exactly what template prints for the same inputs.
package argocd

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The variables the repo-server sets for a plugin (Argo CD's
// reposerver/repository: newEnv and getPluginEnvs).
const (
	EnvAppName     = "ARGOCD_APP_NAME"
	EnvAppNS       = "ARGOCD_APP_NAMESPACE"
	EnvSourcePath  = "ARGOCD_APP_SOURCE_PATH"
	EnvKubeVersion = "KUBE_VERSION"
	EnvAPIVersions = "KUBE_API_VERSIONS"
	EnvParameters  = "ARGOCD_APP_PARAMETERS"
	// EnvPrefix starts the names of an Application's plugin env entries.
	EnvPrefix = "ARGOCD_ENV_"
)

// The plugin parameters, named as helm-inject's flags.
const (
	ParamChart       = "chart"
	ParamValuesFiles = "values-files"
	ParamValues      = "values"
	ParamSet         = "set"
	ParamSetString   = "set-string"
	ParamInjector    = "injector"
	ParamInject      = "inject"
	// The operator's named injectors (--operator-injectors) and their parameters.
	ParamOperatorInjector    = "operator-injector"
	ParamOperatorInjectorSet = "operator-injector-set"
	ParamWith                = "with"
	ParamWithSet             = "with-set"
	ParamInjectorLibrary     = "injector-library"
	ParamSkipInjectHooks     = "skip-inject-hooks"
	ParamSkipInjectTests     = "skip-inject-tests"
	ParamSkipTests           = "skip-tests"
	// The parameters of Argo CD's own Helm source type, named as its
	// fields are (helm.releaseName, skipCrds, ...).
	ParamReleaseName             = "release-name"
	ParamSetFile                 = "set-file"
	ParamSkipCRDs                = "skip-crds"
	ParamSkipSchemaValidation    = "skip-schema-validation"
	ParamIgnoreMissingValueFiles = "ignore-missing-value-files"
	// ParamChartValues is announced with the chart's own values, for a
	// person to read in Argo CD's UI; generate reads nothing from it (the
	// UI saves an announced map as it is shown, and chart defaults given
	// as --set would beat the application's values files).
	ParamChartValues = "chart-values"
)

// kind says how a parameter is given.
type kind int

const (
	kindString kind = iota
	kindBool
	kindArray
	kindMap
)

type paramDef struct {
	name, title, tooltip string
	kind                 kind
}

// parameters lists every parameter, its kind and what it means; the
// announcement and docs/argocd.md are made from it.
var parameters = []paramDef{
	{ParamReleaseName, "Release name", "the Helm release name (default: the application's name, as Argo CD's Helm source type)", kindString},
	{ParamChart, "Chart", "the chart: a folder or .tgz in the repository, relative to the application's folder (default: the folder itself)", kindString},
	{ParamValuesFiles, "Values files", "values files in the repository, relative to the application's folder, in order (helm's --values)", kindArray},
	{ParamValues, "Values", "inline values, YAML, applied after the values files", kindString},
	{ParamSet, "Set", "values set by path, as helm's --set key=value", kindMap},
	{ParamSetString, "Set string", "string values set by path, as helm's --set-string key=value", kindMap},
	{ParamSetFile, "Set file", "values set by path from a file in the repository, relative to the application's folder, as helm's --set-file key=path", kindMap},
	{ParamIgnoreMissingValueFiles, "Ignore missing values files", "true: a values file that does not exist is left out (Argo CD's ignoreMissingValueFiles)", kindBool},
	{ParamInjector, "Injectors (helm-x form)", `injectors in helm-x form, e.g. "linkerd inject,--manual,FILE", in order (--injector)`, kindArray},
	{ParamInject, "Injector commands", `injector command lines, e.g. "my-injector --label 'a b' FILE", in order (--inject)`, kindArray},
	{ParamOperatorInjector, "Operator's injectors", "injectors the plugin's operator defines, by name, in order, after the injector commands", kindArray},
	{ParamOperatorInjectorSet, "Operator's injector parameters", "NAME.PARAM: VALUE, e.g. istio.revision: canary; only parameters the operator exposes, matching its pattern", kindMap},
	{ParamWith, "Built-in injectors", "built-in injectors from the library, NAME@CONSTRAINT, e.g. log-shipper@^1, at the version helm-inject-pins.yaml pins (--with)", kindArray},
	{ParamWithSet, "Built-in injector parameters", "NAME.PARAM: VALUE, e.g. log-shipper.destination: logs:24224 (--with-set)", kindMap},
	{ParamInjectorLibrary, "Injector library", "a library folder in the repository, relative to the application's folder (default: the plugin's library, $HELM_INJECT_INJECTOR_LIBRARY)", kindString},
	{ParamSkipInjectHooks, "Skip hooks", "true: do not give hooks to the injectors (--skip-inject-hooks)", kindBool},
	{ParamSkipInjectTests, "Skip test hooks", "true: do not give helm test hooks to the injectors (--skip-inject-tests)", kindBool},
	{ParamSkipTests, "Leave out tests", "true: leave helm test hooks out of the output (helm template's --skip-tests)", kindBool},
	{ParamSkipCRDs, "Skip CRDs", "true: leave the chart's crds/ folder out of the output (Argo CD's skipCrds)", kindBool},
	{ParamSkipSchemaValidation, "Skip schema validation", "true: do not check values against the chart's values.schema.json (--skip-schema-validation)", kindBool},
	{ParamChartValues, "Chart values (to read)", "the chart's own values, flattened; shown for reading, generate ignores this parameter: give what you change in Set", kindMap},
}

// Params are an Application's plugin parameters.
type Params struct {
	ReleaseName string
	Chart       string
	ValuesFiles []string
	Values      string
	Set         map[string]string
	SetString   map[string]string
	SetFile     map[string]string
	Injector    []string
	Inject      []string
	// OperatorInjector names the operator's injectors to run, and
	// OperatorInjectorSet gives their parameters (NAME.PARAM).
	OperatorInjector    []string
	OperatorInjectorSet map[string]string
	With                []string
	WithSet             map[string]string
	InjectorLibrary     string
	SkipInjectHooks     bool
	SkipInjectTests     bool
	SkipTests           bool
	SkipCRDs            bool
	SkipSchema          bool
	IgnoreMissingValues bool
	// ChartValues is what the UI saved of the announced chart values;
	// never used.
	ChartValues map[string]string
}

// Request is what the repo-server asks generate for.
type Request struct {
	// Release is the "release-name" parameter, else the application's
	// name without the "<namespace>_" prefix Argo CD gives applications
	// outside its own namespace, as its Helm support names the release.
	// It is empty when Argo CD asks for the parameters of an application
	// that has no name yet (the New App panel).
	Release string
	// Namespace is the application's destination namespace.
	Namespace string
	// SourcePath is the application's folder in the repository.
	SourcePath  string
	KubeVersion string
	APIVersions []string
	Params      Params
	// CMPWorkDir is the folder Argo CD's cmp-server unpacks each request
	// into, one folder per request ($ARGOCD_CMP_WORKDIR, else the temporary
	// folder, then _cmp_server, as Argo CD's common.GetCMPWorkDir).
	CMPWorkDir string
}

// parameter is one entry of ARGOCD_APP_PARAMETERS, as Argo CD marshals
// ApplicationSourcePluginParameter.
type parameter struct {
	Name   string            `json:"name"`
	String *string           `json:"string,omitempty"`
	Array  []string          `json:"array,omitempty"`
	Map    map[string]string `json:"map,omitempty"`
}

// ReadRequest reads the environment the repo-server gives a plugin
// (environ as os.Environ). The application's name may be empty: Argo CD
// asks for parameters before a new application has one; generate refuses
// it (TemplateArgs). Parameters come from ARGOCD_APP_PARAMETERS; an
// Application's plugin env entries (ARGOCD_ENV_NAME) give the string and
// list parameters too (lists one item a line, maps only as parameters),
// and a parameter wins over an env entry. The PARAM_* variables carry the
// same values as ARGOCD_APP_PARAMETERS with map keys upper-cased, so they
// are not read.
func ReadRequest(environ []string) (*Request, error) {
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	name := env[EnvAppName]
	if _, after, ok := strings.Cut(name, "_"); ok {
		name = after
	}
	r := &Request{
		Release:     name,
		Namespace:   env[EnvAppNS],
		SourcePath:  env[EnvSourcePath],
		KubeVersion: strings.TrimSpace(env[EnvKubeVersion]),
		CMPWorkDir:  cmpWorkDir(env),
	}
	for _, v := range strings.Split(env[EnvAPIVersions], ",") {
		if v = strings.TrimSpace(v); v != "" {
			r.APIVersions = append(r.APIVersions, v)
		}
	}
	given := map[string]parameter{}
	if s := env[EnvParameters]; s != "" {
		var ps []parameter
		if err := json.Unmarshal([]byte(s), &ps); err != nil {
			return nil, fmt.Errorf("%s: reading %s: %w", r.app(), EnvParameters, err)
		}
		for _, p := range ps {
			given[p.Name] = p
		}
	}
	for _, def := range parameters {
		if _, ok := given[def.name]; ok || def.kind == kindMap {
			continue
		}
		v, ok := env[EnvPrefix+escaped(def.name)]
		if !ok {
			continue
		}
		p := parameter{Name: def.name}
		if def.kind == kindArray {
			for _, line := range strings.Split(v, "\n") {
				if line = strings.TrimSpace(line); line != "" {
					p.Array = append(p.Array, line)
				}
			}
		} else {
			p.String = &v
		}
		given[def.name] = p
	}
	if err := r.Params.set(given); err != nil {
		return nil, fmt.Errorf("%s: %w", r.app(), err)
	}
	if r.Params.ReleaseName != "" {
		r.Release = r.Params.ReleaseName
	}
	return r, nil
}

// set fills the parameters from what the Application gives, refusing a
// parameter helm-inject does not have or one of the wrong kind.
func (p *Params) set(given map[string]parameter) error {
	for _, name := range slices.Sorted(maps.Keys(given)) {
		g := given[name]
		if f := p.field(name); f != nil && g.String == nil && g.Array == nil && g.Map == nil {
			// A parameter with no value at all is not given.
			continue
		}
		switch f := p.field(name).(type) {
		case nil:
			return fmt.Errorf("unknown plugin parameter %q (helm-inject has: %s)", name, strings.Join(parameterNames(), ", "))
		case *string:
			if g.String == nil {
				return fmt.Errorf("plugin parameter %q is a string", name)
			}
			*f = *g.String
		case *bool:
			if g.String == nil {
				return fmt.Errorf("plugin parameter %q is a string", name)
			}
			v := strings.TrimSpace(*g.String)
			if v == "" {
				// Argo CD's UI saves an unticked box as "".
				v = "false"
			}
			b, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("plugin parameter %q: want true or false, got %q", name, *g.String)
			}
			*f = b
		case *[]string:
			if g.String != nil || g.Map != nil {
				return fmt.Errorf("plugin parameter %q is an array", name)
			}
			*f = g.Array
		case *map[string]string:
			if g.String != nil || g.Array != nil {
				return fmt.Errorf("plugin parameter %q is a map", name)
			}
			*f = g.Map
		}
	}
	return nil
}

// field is the field of p a parameter sets, or nil for an unknown one.
func (p *Params) field(name string) any {
	switch name {
	case ParamChart:
		return &p.Chart
	case ParamValuesFiles:
		return &p.ValuesFiles
	case ParamValues:
		return &p.Values
	case ParamSet:
		return &p.Set
	case ParamSetString:
		return &p.SetString
	case ParamInjector:
		return &p.Injector
	case ParamInject:
		return &p.Inject
	case ParamOperatorInjector:
		return &p.OperatorInjector
	case ParamOperatorInjectorSet:
		return &p.OperatorInjectorSet
	case ParamWith:
		return &p.With
	case ParamWithSet:
		return &p.WithSet
	case ParamInjectorLibrary:
		return &p.InjectorLibrary
	case ParamSkipInjectHooks:
		return &p.SkipInjectHooks
	case ParamSkipInjectTests:
		return &p.SkipInjectTests
	case ParamSkipTests:
		return &p.SkipTests
	case ParamReleaseName:
		return &p.ReleaseName
	case ParamSetFile:
		return &p.SetFile
	case ParamSkipCRDs:
		return &p.SkipCRDs
	case ParamSkipSchemaValidation:
		return &p.SkipSchema
	case ParamIgnoreMissingValueFiles:
		return &p.IgnoreMissingValues
	case ParamChartValues:
		return &p.ChartValues
	}
	return nil
}

func parameterNames() []string {
	names := make([]string, len(parameters))
	for i, p := range parameters {
		names[i] = p.name
	}
	return names
}

// escaped is Argo CD's name of a parameter's or env entry's variable:
// upper case, anything but A-Z, 0-9 and _ as _.
func escaped(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			return r
		}
		return '_'
	}, name)
}

// app names the application in errors: "application NAME", or, before
// Argo CD gave it a name, "the new application".
func (r *Request) app() string {
	if r.Release == "" {
		return "the new application"
	}
	return "application " + r.Release
}

// cmpWorkDir is where Argo CD's cmp-server unpacks requests, given the
// sidecar's environment (Argo CD's common.GetCMPWorkDir: os.TempDir reads
// $TMPDIR, else /tmp).
func cmpWorkDir(env map[string]string) string {
	base := env["ARGOCD_CMP_WORKDIR"]
	if base == "" {
		if base = env["TMPDIR"]; base == "" {
			base = "/tmp"
		}
	}
	return filepath.Join(base, "_cmp_server")
}
