//go:build linux

package confine

import "golang.org/x/sys/unix"

// socketTables are arm64 (socket 198, io_uring_setup 425) and 32-bit arm
// (socket 281, io_uring_setup 425; EABI has no socketcall).
func socketTables() []syscallTable {
	return []syscallTable{
		{unix.AUDIT_ARCH_AARCH64, []uint32{198, 425}},
		{unix.AUDIT_ARCH_ARM, []uint32{281, 425}},
	}
}
