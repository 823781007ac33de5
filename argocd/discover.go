package argocd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/helm-inject/helm-inject/inject"
)

// Discover says whether the plugin renders the application in appDir,
// given the environment the cmp-server runs its discovery command with
// (the repo-server's variables for the application, and
// ARGOCD_APP_PARAMETERS when the Application has a plugin section).
//
// Argo CD asks a plugin's discovery even when the Application names the
// plugin (util/app/discovery: a named plugin whose discovery does not
// match is "not supporting the given repository"), so discovery must say
// yes to every application that names it, and, for one that does not, to
// those it should take:
//   - a folder with a pins file is helm-inject's, named or not;
//   - an Application with a plugin section (named or not) whose parameters
//     are all helm-inject's, none included, is helm-inject's: Argo CD sets
//     ARGOCD_APP_PARAMETERS only for a plugin section, and a parameter
//     helm-inject does not have means the section is another plugin's.
//
// An Application without a plugin section and without a pins file is left
// to Argo CD's own Helm, Kustomize and Directory types.
func Discover(appDir string, environ []string) bool {
	// As Argo CD's own discover.fileName would (a link counts; generate
	// checks where it leads).
	if _, err := os.Stat(filepath.Join(appDir, inject.PinsFileName)); err == nil {
		return true
	}
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k != EnvParameters {
			continue
		}
		var ps []parameter
		if err := json.Unmarshal([]byte(v), &ps); err != nil {
			// Not JSON Argo CD writes: generate reports it, if the
			// plugin is named.
			return false
		}
		names := parameterNames()
		return !slices.ContainsFunc(ps, func(p parameter) bool { return !slices.Contains(names, p.Name) })
	}
	return false
}
