// Package release installs, upgrades and inspects helm-inject releases
// through the Helm SDK. A helm-inject release is an ordinary Helm release
// whose chart is the temporary chart built by chartify, so every Helm
// command works on it. One verb per file, as in Helm's pkg/action.
package release

import (
	"fmt"
	"log/slog"
	"os"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/cli"
	"helm.sh/helm/v4/pkg/kube"
)

// FieldManager is the field manager of every object helm-inject applies:
// the helm CLI's own (helm 4 names it after its file name, "helm"), so
// that helm-inject and helm can follow each other on one release without
// server-side apply conflicts.
const FieldManager = "helm"

// NewConfiguration builds a Helm action configuration for namespace from the
// user's settings (kubeconfig, context, HELM_DRIVER), as the helm CLI does.
// log receives Helm's log; nil discards it.
func NewConfiguration(settings *cli.EnvSettings, namespace string, log slog.Handler) (*action.Configuration, error) {
	if log == nil {
		log = slog.DiscardHandler
	}
	if err := checkKubeconfig(settings); err != nil {
		return nil, err
	}
	// The SDK reads its field manager from this package variable only; it
	// is the same constant for every configuration, so setting it again is
	// harmless.
	kube.ManagedFieldsManager = FieldManager
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(log))
	// One view of the cluster for everything this configuration builds
	// (see clusterview.go), where helm's settings would load the kubeconfig
	// and read the discovery cache again for every object.
	if err := cfg.Init(newClusterView(settings.RESTClientGetter()), namespace, os.Getenv("HELM_DRIVER")); err != nil {
		return nil, fmt.Errorf("connecting to Kubernetes: %w", err)
	}
	if kc, ok := cfg.KubeClient.(*kube.Client); ok {
		kc.Factory = &sharedValidators{Factory: kc.Factory}
	}
	return cfg, nil
}
