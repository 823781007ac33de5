//go:build linux

package confine

import (
	"bytes"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"

	"golang.org/x/sys/unix"
)

// LimitMemory lets this process map at most limit bytes more than it has
// mapped now (RLIMIT_AS). Every program it starts inherits the same
// address-space limit, which bounds it as well.
//
// Why the address space: RLIMIT_DATA does not bind the Go heap, which
// grows by mapping memory over address space it reserved beforehand
// without write access (the kernel counts such a mapping as no growth),
// and no cgroup is the render's own. What a process has not mapped it
// cannot touch, so the render's resident memory grows by at most limit
// from here. A render past it fails alone, with the Go runtime's out of
// memory error, where the cgroup's out-of-memory kill would take the
// whole sidecar (Kubernetes kills a container's processes as a group on
// cgroup v2) with every tenant's render in flight. The runtime's own soft
// limit is set below it, so the collector works harder before.
func LimitMemory(limit int64) error {
	if limit <= 0 {
		return nil
	}
	now, err := mappedNow()
	if err != nil {
		return fmt.Errorf("setting the render's memory ceiling: %w", err)
	}
	rl := unix.Rlimit{Cur: uint64(now + limit), Max: uint64(now + limit)}
	if err := unix.Setrlimit(unix.RLIMIT_AS, &rl); err != nil {
		return fmt.Errorf("setting the render's memory ceiling (RLIMIT_AS %d bytes): %w", now+limit, err)
	}
	debug.SetMemoryLimit(limit / 4 * 3)
	return nil
}

// mappedNow is the process's address space in bytes (VmSize).
func mappedNow() (int64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for line := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(line, []byte("VmSize:")); ok {
			f := bytes.Fields(v)
			if len(f) == 2 {
				kb, err := strconv.ParseInt(string(f[0]), 10, 64)
				return kb << 10, err
			}
		}
	}
	return 0, fmt.Errorf("no VmSize in /proc/self/status")
}
