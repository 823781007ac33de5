package helmfile

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// EnvPackage carries, from `helm-inject helmfile package` to the shim, the
// package flags (a JSON array) every release's template call becomes a
// package with.
const EnvPackage = "HELM_INJECT_PACKAGE"

// templateOnly reports flags helmfile passes to `helm template` that
// choose what template prints or check it against the cluster; a package
// holds the whole chart and renders offline, so they are left out.
// takesValue: the flag's value is the next argument.
func templateOnly(flag string) (only, takesValue bool) {
	switch flag {
	case "--output-dir", "--show-only", "-s":
		return true, true
	case "--validate", "--include-crds", "--no-hooks", "--skip-tests", "--is-upgrade", "--release-name", "--hide-secret", "--dry-run":
		return true, false
	}
	return false, false
}

// PackageArgs is helm-inject's command line for a template call of a
// `helmfile package` run: package instead of template, without the flags
// only template has, with the injector flags and then the run's package
// flags.
func PackageArgs(c Call, packageFlags []string) ([]string, error) {
	verb := slices.Index(c.Rest, "template")
	if verb < 0 {
		return nil, fmt.Errorf("helmfile package: the call %q is not a template", strings.Join(c.Args, " "))
	}
	out := slices.Clone(c.Rest[:verb])
	out = append(out, "package")
	rest := c.Rest[verb+1:]
	for i := 0; i < len(rest); i++ {
		name, _, hasValue := strings.Cut(rest[i], "=")
		if only, takesValue := templateOnly(name); only {
			if takesValue && !hasValue {
				i++
			}
			continue
		}
		out = append(out, rest[i])
	}
	return slices.Concat(out, c.InjectArgs, packageFlags), nil
}

// EncodePackageFlags is EnvPackage's value for flags.
func EncodePackageFlags(flags []string) string {
	b, _ := json.Marshal(flags)
	return string(b)
}

// DecodePackageFlags reads EnvPackage's value.
func DecodePackageFlags(v string) ([]string, error) {
	var flags []string
	if err := json.Unmarshal([]byte(v), &flags); err != nil {
		return nil, fmt.Errorf("%s: %w", EnvPackage, err)
	}
	return flags, nil
}
