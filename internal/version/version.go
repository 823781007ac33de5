// Package version holds the build information that `helm-inject version`
// prints. The values are set at link time by goreleaser (or `make build`)
// through -ldflags "-X ...".
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// These are overwritten at link time; they are never assigned at run time.
var (
	version = "dev"
	commit  = ""
	date    = ""
)

// Info describes the running binary.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	Date      string `json:"date,omitempty"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Get returns the build information of the running binary. When the binary
// was built without ldflags (go install, go run), the module version and VCS
// revision recorded by the Go toolchain are used instead.
func Get() Info {
	info := Info{
		Version:   version,
		Commit:    commit,
		Date:      date,
		GoVersion: runtime.Version(),
		Platform:  runtime.GOOS + "/" + runtime.GOARCH,
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if info.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && info.Commit == "" {
				info.Commit = s.Value
			}
		}
	}
	return info
}

// String is the one-line form printed by `helm-inject version`.
func (i Info) String() string {
	s := fmt.Sprintf("helm-inject %s (%s, %s)", i.Version, i.GoVersion, i.Platform)
	if i.Commit != "" {
		s += " commit " + i.Commit
	}
	if i.Date != "" {
		s += " built " + i.Date
	}
	return s
}
