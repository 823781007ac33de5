package hugeheap

// Only the runtime, syscall and unsafe are imported, so that Go's
// initialisation order runs this package's init right after syscall's (see
// doc.go). Even strings or strconv would hold it back: they wait for
// unicode, and by then dozens of github.com/[a-h]... packages of Helm's
// and Kubernetes' are ready too, and are initialised first because their
// import paths sort before this one's (measured: 16 ms into the process
// instead of 5.5 ms). TestHugeheapInitRunsRightAfterSyscall, in the
// program's package, holds this.
import (
	"runtime"
	"syscall"
	"unsafe"
)

// advisedBytes is how much of the heap's start is advised: a template of
// the 500-workload benchmark chart peaks at about 17 MB of heap; 16, 32
// and 64 MiB measured the same there (0.136, 0.135, 0.132 s of CPU), and
// 32 leaves room for an apply's larger heap while bounding the huge pages
// it can hold at a time to 16.
const advisedBytes = 32 << 20

// madvHugepage is MADV_HUGEPAGE, 14 on every Linux architecture Go supports
// (the runtime's defs_linux_*.go).
const madvHugepage = 14

// The kernel's settings for transparent huge pages.
const (
	thpEnabledFile  = "/sys/kernel/mm/transparent_hugepage/enabled"
	thpPageSizeFile = "/sys/kernel/mm/transparent_hugepage/hpage_pmd_size"
)

func init() {
	godebug, _ := syscall.Getenv("GODEBUG")
	if thpDisabled(godebug) {
		return
	}
	enabled, _ := readSysFile(thpEnabledFile)
	pageSize, _ := readSysFile(thpPageSizeFile)
	if !worthAdvising(enabled, pageSize) {
		return
	}
	// Best effort: should the kernel refuse the advice, the heap is what
	// it would have been.
	_, _, _ = adviseHeapStart(advisedBytes)
}

// worthAdvising reports, from the kernel's transparent huge pages settings,
// whether advising the heap's start gains anything without a new risk:
// only in "madvise" mode. In "always" mode the heap gets huge pages
// anyway, where one is free, and advising would only let a fault compact
// memory to find one (defrag's default, "madvise", compacts for advised
// memory alone); in "never" mode, or without the settings (a kernel
// without transparent huge pages), nothing is gained. A huge page larger
// than an eighth of the range (512 MiB on arm64 kernels of 64 KiB pages)
// would rarely fit in it.
func worthAdvising(enabled, pageSize string) bool {
	if !containsWord(enabled, "[madvise]") {
		return false
	}
	n, ok := parseInt32(trimNewline(pageSize))
	return ok && n > 0 && n <= advisedBytes/8
}

// adviseHeapStart allocates size bytes of heap, marks them MADV_HUGEPAGE
// and frees them for what the program allocates next, with a collection
// (see doc.go for why at once). It returns the advised range's bounds as
// addresses, which keep nothing alive.
func adviseHeapStart(size int) (start, end uintptr, err error) {
	b := make([]byte, size)
	// A large object starts on a runtime page (8 KiB), which need not be
	// a kernel page (16 or 64 KiB on some arm64 kernels): madvise wants
	// the kernel's, and a range that ends inside one would reach past
	// the object.
	start, end = pageRange(uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(size), uintptr(syscall.Getpagesize()))
	if start >= end {
		return 0, 0, syscall.EINVAL
	}
	_, _, errno := syscall.Syscall(syscall.SYS_MADVISE, start, end-start, madvHugepage)
	runtime.KeepAlive(b)
	runtime.GC()
	if errno != 0 {
		return start, end, errno
	}
	return start, end, nil
}

// pageRange returns the whole pages within [addr, addr+size), for a page
// size that is a power of two; start >= end when there are none.
func pageRange(addr, size, page uintptr) (start, end uintptr) {
	return (addr + page - 1) &^ (page - 1), (addr + size) &^ (page - 1)
}

// readSysFile reads a small file of /sys, such as the kernel's settings
// (os may not be imported: see the imports).
func readSysFile(path string) (string, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	defer syscall.Close(fd)
	var buf [128]byte
	n, err := syscall.Read(fd, buf[:])
	if err != nil {
		return "", err
	}
	return string(buf[:max(n, 0)]), nil
}

// containsWord reports whether the space-separated words of s hold w.
func containsWord(s, w string) bool {
	for s != "" {
		i := 0
		for i < len(s) && s[i] != ' ' && s[i] != '\n' {
			i++
		}
		if s[:i] == w {
			return true
		}
		if i == len(s) {
			break
		}
		s = s[i+1:]
	}
	return false
}

func trimNewline(s string) string {
	if len(s) > 0 && s[len(s)-1] == '\n' {
		return s[:len(s)-1]
	}
	return s
}

// thpDisabled reports whether GODEBUG sets disablethp to a non-zero
// number, as the runtime reads it: settings are comma-separated, read left
// to right, the last one of a name wins, and a value that is not a 32-bit
// decimal number leaves the setting as it was.
func thpDisabled(godebug string) bool {
	const key = "disablethp="
	disabled := false
	for godebug != "" {
		setting := godebug
		godebug = ""
		for i := 0; i < len(setting); i++ {
			if setting[i] == ',' {
				setting, godebug = setting[:i], setting[i+1:]
				break
			}
		}
		if len(setting) < len(key) || setting[:len(key)] != key {
			continue
		}
		if n, ok := parseInt32(setting[len(key):]); ok {
			disabled = n != 0
		}
	}
	return disabled
}

// parseInt32 is strconv.ParseInt(s, 10, 32) without the error's detail
// (strconv may not be imported: see the imports). The runtime reads
// GODEBUG's numbers with the same function since Go 1.26 (before, a "+"
// was refused).
func parseInt32(s string) (int32, bool) {
	negative := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		negative, s = s[0] == '-', s[1:]
	}
	if s == "" {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int64(s[i]-'0')
		if n > 1<<31 {
			return 0, false
		}
	}
	if negative {
		return int32(-n), true
	}
	if n > 1<<31-1 {
		return 0, false
	}
	return int32(n), true
}
