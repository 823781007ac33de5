package helmfile

import (
	"os"
	"strings"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
)

// nothingToBuild reports whether a `helm dependency build` call (args as
// helmfile made it) is one the real helm would finish without doing
// anything or printing anything: a chart directory that declares no
// dependencies and has no lock file (helm's downloader.Manager.Build then
// returns from Update before it reads a repository). helmfile runs it for
// every local chart in every run, and through the shim each one costs a
// second process; the shim answers these itself. Any flag it does not know
// to be harmless, or a chart helm would complain about, goes to the real
// helm.
func nothingToBuild(c Call) bool {
	if c.Verb != "dependency" && c.Verb != "dep" && c.Verb != "dependencies" {
		return false
	}
	var positional []string
	for i := 0; i < len(c.Rest); i++ {
		a := c.Rest[i]
		name, _, hasValue := strings.Cut(a, "=")
		switch {
		case !strings.HasPrefix(a, "-"):
			positional = append(positional, a)
		case a == "--skip-refresh" || a == "--verify" || a == "--debug":
		case name == "--keyring" || globalValueFlag(name):
			if !hasValue {
				i++
			}
		default:
			return false
		}
	}
	// positional[0] is the verb itself.
	if len(positional) != 3 || positional[1] != "build" {
		return false
	}
	dir := positional[2]
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return false
	}
	ch, err := loader.LoadDir(dir)
	if err != nil {
		return false
	}
	return ch.Lock == nil && ch.Metadata.Dependencies == nil
}
