//go:build linux && (amd64 || arm64)

package confine

import (
	"fmt"
	"runtime"
	"unsafe"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// installSocketFilter sets no_new_privs on every thread of the process
// (seccomp needs it to install a filter without privilege, and Landlock
// has set it already where the kernel has Landlock), then installs the
// socket filter on all of them at once (SECCOMP_FILTER_FLAG_TSYNC: the Go
// runtime's threads are many, and a goroutine may move between them).
func installSocketFilter() error {
	raw, err := bpf.Assemble(socketFilterProgram(socketTables()))
	if err != nil {
		return fmt.Errorf("assembling the socket filter: %w", err)
	}
	if err := llsys.AllThreadsPrctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("setting no_new_privs for the socket filter: %w", err)
	}
	prog := unix.SockFprog{Len: uint16(len(raw)), Filter: (*unix.SockFilter)(unsafe.Pointer(&raw[0]))}
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog)))
	runtime.KeepAlive(raw)
	switch {
	case errno != 0:
		return fmt.Errorf("installing the seccomp socket filter: %w", errno)
	case r != 0:
		return fmt.Errorf("installing the seccomp socket filter: thread %d could not take it", r)
	}
	return nil
}
