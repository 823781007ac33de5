// Package release installs, upgrades and inspects helm-inject releases
// through the Helm SDK. A helm-inject release is an ordinary Helm release
// whose chart is the temporary chart built by chartify, so every Helm
// command works on it. One verb per file, as in Helm's pkg/action.
package release

import (
	"fmt"
	"os"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/cli"
)

// NewConfiguration builds a Helm action configuration for namespace from the
// user's settings (kubeconfig, context, HELM_DRIVER), as the helm CLI does.
// debug receives Helm's debug log; nil discards it.
func NewConfiguration(settings *cli.EnvSettings, namespace string, debug func(format string, v ...any)) (*action.Configuration, error) {
	if debug == nil {
		debug = func(string, ...any) {}
	}
	if err := checkKubeconfig(settings); err != nil {
		return nil, err
	}
	cfg := new(action.Configuration)
	if err := cfg.Init(settings.RESTClientGetter(), namespace, os.Getenv("HELM_DRIVER"), debug); err != nil {
		return nil, fmt.Errorf("connecting to Kubernetes: %w", err)
	}
	return cfg, nil
}
