//go:build unix

package confine

import (
	"errors"
	"syscall"
)

// processAlive reports whether a process pid exists (signal 0 checks
// without sending; EPERM means it exists under another user).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
