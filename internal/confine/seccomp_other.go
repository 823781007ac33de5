//go:build !linux || !(amd64 || arm64)

package confine

import (
	"fmt"
	"runtime"
)

// installSocketFilter has no filter for this platform.
func installSocketFilter() error {
	return fmt.Errorf("no seccomp socket filter for %s/%s", runtime.GOOS, runtime.GOARCH)
}
