package hugeheap

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// vma is one mapping of /proc/self/smaps.
type vma struct {
	start, end uintptr
	flags      []string
}

func mappings(t *testing.T) []vma {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []vma
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "VmFlags:"); ok {
			out[len(out)-1].flags = strings.Fields(rest)
			continue
		}
		lo, hi, ok := strings.Cut(strings.Fields(line)[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil {
			continue // a field line such as "Rss:"
		}
		out = append(out, vma{start: uintptr(start), end: uintptr(end)})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// thpMode is the kernel's transparent huge pages mode as this machine's
// sysfs says ("always", "madvise", "never"), or "" on a kernel without
// them.
func thpMode(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if errors.Is(err, os.ErrNotExist) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range strings.Fields(string(b)) {
		if strings.HasPrefix(w, "[") {
			return strings.Trim(w, "[]")
		}
	}
	t.Fatalf("no mode chosen in %q", b)
	return ""
}

// inChild runs the named test of this binary again in a child process with
// the given environment, and reports whether the child was asked for.
func inChild(t *testing.T, name string, env ...string) (isChild bool) {
	t.Helper()
	if os.Getenv("HUGEHEAP_CHILD") == name {
		return true
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+name+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), append([]string{"HUGEHEAP_CHILD=" + name}, env...)...)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+name) {
		t.Fatalf("%s in a child process (%v): %v\n%s", name, env, err, out)
	}
	return false
}

// In a child whose init advised nothing (GODEBUG=disablethp=1, under which
// the runtime marks its heap "nh"), so that only this call's advice can
// mark the range "hg".
func TestAdviseHeapStart(t *testing.T) {
	if !inChild(t, "TestAdviseHeapStart", "GODEBUG=disablethp=1") {
		return
	}
	const size = 32 << 20
	start, end, err := adviseHeapStart(size)
	if thpMode(t) == "" {
		if !errors.Is(err, syscall.EINVAL) {
			t.Fatalf("on a kernel without transparent huge pages adviseHeapStart = %v, want EINVAL", err)
		}
		return
	}
	if err != nil {
		t.Fatalf("adviseHeapStart(%d): %v", size, err)
	}
	page := uintptr(os.Getpagesize())
	if start%page != 0 || end%page != 0 || end-start < size-page || end-start > size {
		t.Fatalf("advised %#x-%#x: want a range of whole pages within the %d bytes allocated", start, end, size)
	}
	// The range is free again for what the program allocates next: the
	// heap does not hold the 32 MiB.
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if ms.HeapAlloc >= size {
		t.Errorf("after adviseHeapStart the heap holds %d bytes: the %d advised are still allocated", ms.HeapAlloc, size)
	}
	// Every mapping over the range carries the kernel's mark of
	// MADV_HUGEPAGE, "hg", and the range is mapped throughout.
	covered := start
	for _, m := range mappings(t) {
		if m.end <= start || m.start >= end {
			continue
		}
		if !slices.Contains(m.flags, "hg") {
			t.Errorf("mapping %#x-%#x over the advised range %#x-%#x has flags %v, want hg", m.start, m.end, start, end, m.flags)
		}
		if m.start > covered {
			t.Errorf("advised range %#x-%#x: no mapping at %#x", start, end, covered)
		}
		covered = max(covered, m.end)
	}
	if covered < end {
		t.Errorf("advised range %#x-%#x: mapped only up to %#x", start, end, covered)
	}
}

// The process itself: this test binary imports the package, so its init
// ran before the tests. A child reports its own mappings.
func TestProcessStartIsAdvised(t *testing.T) {
	if os.Getenv("HUGEHEAP_REPORT") != "" {
		n := 0
		for _, m := range mappings(t) {
			if slices.Contains(m.flags, "hg") {
				n++
			}
		}
		fmt.Printf("advised mappings: %d\n", n)
		return
	}
	// Only where the kernel gives huge pages to advised memory alone.
	madvise := thpMode(t) == "madvise"
	for _, tc := range []struct {
		godebug string
		want    bool
	}{
		{"", madvise},
		{"disablethp=1", false},
		{"madvdontneed=1,disablethp=1", false},
		{"disablethp=1,disablethp=0", madvise},
		{"disablethp=0", madvise},
	} {
		t.Run("GODEBUG="+tc.godebug, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestProcessStartIsAdvised$", "-test.count=1")
			cmd.Env = append(os.Environ(), "HUGEHEAP_REPORT=1", "GODEBUG="+tc.godebug)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			var n int
			if _, err := fmt.Sscanf(string(out), "advised mappings: %d", &n); err != nil {
				t.Fatalf("child printed %q: %v", out, err)
			}
			if got := n > 0; got != tc.want {
				t.Errorf("GODEBUG=%q: %d mappings advised for huge pages, want some: %v", tc.godebug, n, tc.want)
			}
		})
	}
}

func TestWorthAdvising(t *testing.T) {
	for _, tc := range []struct {
		enabled, pageSize string
		want              bool
	}{
		{"always [madvise] never\n", "2097152\n", true},
		{"always [madvise] never", "2097152", true},
		{"[always] madvise never\n", "2097152\n", false},
		{"always madvise [never]\n", "2097152\n", false},
		{"", "", false}, // no transparent huge pages at all
		{"always [madvise] never\n", "", false},
		{"always [madvise] never\n", "4194304\n", true},    // an eighth of the range
		{"always [madvise] never\n", "8388608\n", false},   // a quarter
		{"always [madvise] never\n", "536870912\n", false}, // arm64, 64 KiB pages
		{"always [madvise] never\n", "0\n", false},
		{"always [madvise] never\n", "two\n", false},
		{"always madvise never\n", "2097152\n", false},
		{"always [madvise]x never\n", "2097152\n", false},
		{"always madvise [never]", "2097152", false}, // no newline after the last word
	} {
		if got := worthAdvising(tc.enabled, tc.pageSize); got != tc.want {
			t.Errorf("worthAdvising(%q, %q) = %v, want %v", tc.enabled, tc.pageSize, got, tc.want)
		}
	}
}

func TestPageRange(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		addr, size, page uintptr
		start, end       uintptr
	}{
		{0x10000, 32 * mib, 0x1000, 0x10000, 0x10000 + 32*mib},  // x86-64: a runtime page is whole kernel pages
		{0x12000, 32 * mib, 0x10000, 0x20000, 0x10000 + 32*mib}, // 64 KiB pages: in by 56 KiB, out by 8
		{0x12000, 32 * mib, 0x4000, 0x14000, 0x10000 + 32*mib},  // 16 KiB pages
		{0x12000, 0xe000, 0x10000, 0x20000, 0x20000},            // no whole page
	} {
		start, end := pageRange(tc.addr, tc.size, tc.page)
		if start != tc.start || end != tc.end {
			t.Errorf("pageRange(%#x, %#x, %#x) = %#x-%#x, want %#x-%#x", tc.addr, tc.size, tc.page, start, end, tc.start, tc.end)
		}
	}
}

func TestReadSysFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "enabled")
	if err := os.WriteFile(path, []byte("always [madvise] never\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := readSysFile(path); err != nil || got != "always [madvise] never\n" {
		t.Errorf("readSysFile = %q, %v", got, err)
	}
	if got, err := readSysFile(path + "-missing"); !errors.Is(err, syscall.ENOENT) || got != "" {
		t.Errorf("readSysFile of a missing file = %q, %v, want ENOENT", got, err)
	}
}

func TestThpDisabled(t *testing.T) {
	for _, tc := range []struct {
		godebug string
		want    bool
	}{
		{"", false},
		{"disablethp=1", true},
		{"disablethp=0", false},
		{"disablethp=2", true},
		{"disablethp=-1", true},
		{"disablethp=+1", true},
		{"madvdontneed=1,disablethp=1", true},
		{"disablethp=1,madvdontneed=1", true},
		{"disablethp=1,disablethp=0", false},
		{"disablethp=0,disablethp=1", true},
		// A value the runtime cannot read leaves the setting as it was.
		{"disablethp=yes", false},
		{"disablethp=1,disablethp=yes", true},
		{"disablethp=", false},
		{"disablethp=1,disablethp=", true},
		{"disablethp=4294967297", false},           // does not fit 32 bits
		{"disablethp=18446744073709551617", false}, // nor 64: 2⁶⁴+1
		{"disablethp", false},
		{"xdisablethp=1", false},
		{"disablethpx=1", false},
		{" disablethp=1", false},
		{",,disablethp=1,", true},
	} {
		if got := thpDisabled(tc.godebug); got != tc.want {
			t.Errorf("thpDisabled(%q) = %v, want %v", tc.godebug, got, tc.want)
		}
	}
}

func TestParseInt32(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int32
		ok   bool
	}{
		{"0", 0, true},
		{"1", 1, true},
		{"007", 7, true},
		{"+5", 5, true},
		{"-5", -5, true},
		{"2147483647", 2147483647, true},
		{"-2147483648", -2147483648, true},
		{"2147483648", 0, false},
		{"-2147483649", 0, false},
		{"99999999999999999999", 0, false},
		{"18446744073709551617", 0, false}, // 2⁶⁴+1, 1 if the sum wrapped
		{"-18446744073709551615", 0, false},
		{"", 0, false},
		{"+", 0, false},
		{"-", 0, false},
		{"1_0", 0, false},
		{"0x1", 0, false},
		{" 1", 0, false},
		{"1 ", 0, false},
		{"--1", 0, false},
	} {
		got, ok := parseInt32(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseInt32(%q) = %d, %v, want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// FuzzParseInt32 holds the copy to what the runtime uses, strconv.
func FuzzParseInt32(f *testing.F) {
	for _, s := range []string{"0", "-2147483648", "2147483648", "+1", "1e3", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseInt32(s)
		want, err := strconv.ParseInt(s, 10, 32)
		if ok != (err == nil) || (ok && int64(got) != want) {
			t.Errorf("parseInt32(%q) = %d, %v; strconv.ParseInt = %d, %v", s, got, ok, want, err)
		}
	})
}
