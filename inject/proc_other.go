//go:build !unix

package inject

import "os/exec"

// setProcessGroup keeps exec's default: cancellation kills the process.
func setProcessGroup(*exec.Cmd) {}

// killGroup does nothing: without process groups there is no group to
// kill.
func killGroup(*exec.Cmd) {}
