//go:build linux

package confine

import "golang.org/x/sys/unix"

// x32Bit marks the x32 ABI's system calls, which reach the kernel as
// AUDIT_ARCH_X86_64 with this bit set in the number.
const x32Bit = 0x40000000

// socketTables are x86-64 and x32 (socket 41, io_uring_setup 425), and
// 32-bit x86 (socketcall 102, socket 359, io_uring_setup 425).
func socketTables() []syscallTable {
	return []syscallTable{
		{unix.AUDIT_ARCH_X86_64, []uint32{41, 425, x32Bit | 41, x32Bit | 425}},
		{unix.AUDIT_ARCH_I386, []uint32{102, 359, 425}},
	}
}
