package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The program advises the start of its heap for transparent huge pages by
// importing internal/hugeheap, whose init does it; this test binary links
// the program's imports, so a child of it shows what helm-inject does (the
// e2e suite checks the built binary the same way).
func TestProgramAdvisesHeapStart(t *testing.T) {
	if os.Getenv("HELM_INJECT_REPORT_ADVISED") != "" {
		smaps, err := os.ReadFile("/proc/self/smaps")
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for sc := bufio.NewScanner(bytes.NewReader(smaps)); sc.Scan(); {
			if f := strings.Fields(sc.Text()); len(f) > 0 && f[0] == "VmFlags:" && slices.Contains(f[1:], "hg") {
				n++
			}
		}
		fmt.Printf("advised mappings: %d\n", n)
		return
	}
	// Only where the kernel gives huge pages to advised memory alone.
	enabled, _ := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	want := strings.Contains(string(enabled), "[madvise]")
	cmd := exec.Command(os.Args[0], "-test.run=^TestProgramAdvisesHeapStart$", "-test.count=1")
	cmd.Env = append(os.Environ(), "HELM_INJECT_REPORT_ADVISED=1", "GODEBUG=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var n int
	if _, err := fmt.Sscanf(string(out), "advised mappings: %d", &n); err != nil {
		t.Fatalf("child printed %q: %v", out, err)
	}
	if got := n > 0; got != want {
		t.Errorf("%d mappings advised for huge pages, want some: %v (transparent huge pages: %q)", n, want, enabled)
	}
}

// Go initialises a package once its imports are, the first of those ready
// in the order of import paths; internal/hugeheap's init must run right
// after package syscall's, before the packages that allocate the first
// megabytes (its doc.go). In this test binary, which links the program's
// imports, a child prints the order (GODEBUG=inittrace=1 lists every
// package whose initialisation does work). The package's own test binary
// cannot show it: there the package's test files' imports come first.
func TestHugeheapInitRunsRightAfterSyscall(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var order []string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "init" {
			order = append(order, f[1])
		}
	}
	const hugeheap = "github.com/helm-inject/helm-inject/internal/hugeheap"
	for i, pkg := range order {
		if pkg == "syscall" {
			if i+1 >= len(order) || order[i+1] != hugeheap {
				t.Fatalf("initialised after syscall: %v, want %s\nthe whole order: %v", order[i+1:min(i+4, len(order))], hugeheap, order)
			}
			return
		}
	}
	t.Fatalf("no init of syscall in %v", order)
}
