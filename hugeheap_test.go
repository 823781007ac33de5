package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
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
			if f := strings.Fields(sc.Text()); len(f) > 0 && f[0] == "VmFlags:" && contains(f[1:], "hg") {
				n++
			}
		}
		fmt.Printf("advised mappings: %d\n", n)
		return
	}
	_, err := os.Stat("/sys/kernel/mm/transparent_hugepage/enabled")
	want := err == nil
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
		t.Errorf("%d mappings advised for huge pages, want some: %v (kernel with transparent huge pages: %v)", n, want, want)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
