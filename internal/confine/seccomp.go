//go:build linux

package confine

import (
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The socket filter is a seccomp-bpf program: it refuses, with EACCES,
// every system call that makes a socket (socket(), the 32-bit
// socketcall(), and io_uring_setup, whose rings can open sockets without
// a socket() call), for every address family, unix sockets included, in
// this process and every program it starts. A render and its injectors
// read files and write files; none of them needs a socket. seccomp-bpf
// is in every kernel since 3.5 and needs no privilege once no_new_privs
// is set, so it holds where Landlock's network rules (ABI 4, Linux 6.7)
// and socket-file rules (ABI 9) do not.
//
// The program is built with golang.org/x/net/bpf (the Go team's BPF
// assembler) and installed with the raw seccomp(2) call of
// golang.org/x/sys: both already in the module graph, pure Go, and the
// filter is a dozen instructions, where libseccomp would need cgo and a
// C library in the image.

// syscallTable is the system calls the filter refuses for one
// architecture, as the kernel numbers them there.
type syscallTable struct {
	arch uint32 // AUDIT_ARCH_*
	deny []uint32
}

// seccompData offsets of struct seccomp_data: the call's number, then
// the architecture.
const (
	seccompNr   = 0
	seccompArch = 4
)

// socketFilterProgram is the filter for tables (the native architecture
// and the compat ones the kernel also runs): a call of a listed number
// under a listed architecture gets EACCES, any other call of a listed
// architecture is allowed, and any call of an architecture not listed is
// refused (there is none on a kernel that runs this program).
func socketFilterProgram(tables []syscallTable) []bpf.Instruction {
	deny := bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.EACCES)}
	allow := bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW}
	var prog []bpf.Instruction
	for _, t := range tables {
		// ld arch; jne t.arch -> next table; ld nr; jeq n -> deny ...; allow
		block := []bpf.Instruction{bpf.LoadAbsolute{Off: seccompNr, Size: 4}}
		for i, n := range t.deny {
			// Skip to the deny that ends this block: past the other
			// comparisons and the allow.
			block = append(block, bpf.JumpIf{Cond: bpf.JumpEqual, Val: n, SkipTrue: uint8(len(t.deny) - i)})
		}
		block = append(block, allow, deny)
		prog = append(prog, bpf.LoadAbsolute{Off: seccompArch, Size: 4},
			bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: t.arch, SkipTrue: uint8(len(block))})
		prog = append(prog, block...)
	}
	return append(prog, bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.EACCES)})
}
