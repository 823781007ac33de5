package hugeheap

// Only the runtime, syscall and unsafe are imported, so that Go's
// initialisation order runs this package's init right after syscall's (see
// doc.go). Even strings or strconv would hold it back: they wait for
// unicode, and by then dozens of github.com/[a-h]... packages of Helm's
// and Kubernetes' are ready too, and are initialised first because their
// import paths sort before this one's (measured: 16 ms into the process
// instead of 5.5 ms).
import (
	"runtime"
	"syscall"
	"unsafe"
)

// advisedBytes is how much of the heap's start is advised: a template of
// the 500-workload benchmark chart peaks at about 17 MB of heap; 16, 32
// and 64 MiB measured the same there (0.136, 0.135, 0.132 s of CPU), and
// 32 leaves room for an apply's larger heap while bounding the faults that
// may compact memory to 16.
const advisedBytes = 32 << 20

// madvHugepage is MADV_HUGEPAGE, 14 on every Linux architecture Go supports
// (the runtime's defs_linux_*.go).
const madvHugepage = 14

func init() {
	godebug, _ := syscall.Getenv("GODEBUG")
	if thpDisabled(godebug) {
		return
	}
	// Best effort: a kernel without transparent huge pages refuses the
	// advice (EINVAL), and the heap is then what it would have been.
	_, _, _ = adviseHeapStart(advisedBytes)
}

// adviseHeapStart allocates size bytes of heap, marks them MADV_HUGEPAGE
// and frees them for what the program allocates next, with a collection
// (see doc.go for why at once). It returns the advised range's bounds as
// addresses, which keep nothing alive.
func adviseHeapStart(size int) (start, end uintptr, err error) {
	b := make([]byte, size)
	// A large object starts on a runtime page (8 KiB), which need not be
	// a kernel page (64 KiB on some arm64 kernels): madvise wants the
	// kernel's.
	page := uintptr(syscall.Getpagesize())
	start = uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	end = start + uintptr(size)
	start += (page - start%page) % page
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
// (strconv may not be imported: see the imports).
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
