//go:build !unix

package inject

import "os/exec"

// setProcessGroup keeps exec's default: cancellation kills the process.
func setProcessGroup(*exec.Cmd) {}
