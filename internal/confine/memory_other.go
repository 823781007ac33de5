//go:build !linux

package confine

import "runtime/debug"

// LimitMemory sets only the Go runtime's soft limit here: RLIMIT_DATA is
// Linux's.
func LimitMemory(limit int64) error {
	if limit > 0 {
		debug.SetMemoryLimit(limit / 4 * 3)
	}
	return nil
}
