package argocd

import (
	"fmt"
	"slices"
	"strings"

	"github.com/helm-inject/helm-inject/internal/budget"
	"github.com/helm-inject/helm-inject/internal/confine"
)

// Operator is the plugin operator's policy as the sidecar's plugin.yaml
// gives it, on the command line of generate, parameters and discover
// (deploy/argocd): how the kernel confines a render, the programs external
// injectors may run, the folders they may read, the injector library and
// the file of named injectors.
//
// It is never read from the environment. Argo CD's cmp-server runs a
// plugin command with its own environment followed by the request's
// (cmpserver/plugin/plugin.go: append(os.Environ(), environ(envEntries)...)),
// and the last duplicate wins: whoever can reach the cmp-server's socket
// could set any variable. A variable may only tighten the policy
// (Operator.Policy).
type Operator struct {
	// Confine is best-effort, required or off.
	Confine         string
	AllowedCommands []string
	// Read are more files and folders injectors read (istioctl's mesh
	// config, say).
	Read []string
	// Library is the built-in injector library applications use unless
	// they name one in their repository.
	Library string
	// InjectorsFile is the operator's file of named injectors.
	InjectorsFile string
	// MaxMemoryMiB is the memory ceiling of the command and of each
	// program it starts (0: none).
	MaxMemoryMiB int64
	// Limits are the render's budget (package budget); zero fields are
	// the defaults.
	Limits budget.Limits
}

// DefaultMaxMemoryMiB is the memory ceiling of a render and of each of
// its injectors: far above what a chart of the parity corpus takes (the
// webapp chart's generate peaks at 80 MiB, a 66 MB render at 655 MB
// unbounded), under the shipped sidecar's 1 GiB with room for the
// cmp-server.
const DefaultMaxMemoryMiB = 512

// The variables that may tighten the operator's policy, never loosen it.
const (
	// EnvAllowedCommands, when set, narrows the allowed programs to
	// those it also lists (comma separated).
	EnvAllowedCommands = "HELM_INJECT_ALLOWED_COMMANDS"
	// confine.EnvMode, when set, makes the mode stricter, never laxer.
)

// The flags that give an Operator, as plugin.yaml writes them.
const (
	FlagConfine         = "confine"
	FlagAllowedCommands = "allowed-commands"
	FlagConfineRead     = "confine-read"
	FlagLibrary         = "injector-library"
	FlagInjectorsFile   = "operator-injectors"
	FlagMaxMemory       = "max-memory-mib"
)

// Policy is the operator's policy with what the environment tightens
// (lookup is os.LookupEnv): the stricter of the two modes, and only the
// allowed programs both list. It reads the named-injectors file.
func (o Operator) Policy(lookup func(string) (string, bool)) (Policy, error) {
	mode, err := confine.ParseMode("--"+FlagConfine, o.Confine)
	if err != nil {
		return Policy{}, err
	}
	if v, ok := lookup(confine.EnvMode); ok && v != "" {
		env, err := confine.ParseMode(confine.EnvMode, v)
		if err != nil {
			return Policy{}, err
		}
		mode = mode.Stricter(env)
	}
	if o.MaxMemoryMiB < 0 {
		return Policy{}, fmt.Errorf("--%s=%d: give a number of MiB, 0 for no ceiling", FlagMaxMemory, o.MaxMemoryMiB)
	}
	p := Policy{Mode: mode, Library: o.Library, Read: cleanList(o.Read), MaxMemory: o.MaxMemoryMiB << 20, Limits: o.Limits}
	p.AllowedCommands = cleanList(o.AllowedCommands)
	if v, ok := lookup(EnvAllowedCommands); ok {
		narrower := cleanList(strings.Split(v, ","))
		p.AllowedCommands = slices.DeleteFunc(p.AllowedCommands, func(c string) bool { return !slices.Contains(narrower, c) })
	}
	if o.InjectorsFile != "" {
		p.InjectorsFile = o.InjectorsFile
		if p.Injectors, err = LoadOperatorInjectors(o.InjectorsFile); err != nil {
			return Policy{}, err
		}
	}
	return p, nil
}

// cleanList is l without blanks around its entries and without empty
// ones (a flag given as --allowed-commands= allows none).
func cleanList(l []string) []string {
	var out []string
	for _, s := range l {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
