package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The helm-inject binary advises the start of its heap for transparent
// huge pages (internal/hugeheap) where the kernel's mode is "madvise",
// unless GODEBUG=disablethp=1. An injector
// is a child of the process, so it can read the process's mappings while
// it runs: this one counts those the kernel marks "hg" (MADV_HUGEPAGE).
func TestBinaryHeapStartOnHugePages(t *testing.T) {
	// Only where the kernel gives huge pages to advised memory alone.
	enabled, _ := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	madvise := strings.Contains(string(enabled), "[madvise]")
	dir := t.TempDir()
	script := filepath.Join(dir, "count-advised.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ngrep -c '^VmFlags:.* hg' /proc/$PPID/smaps > \"$1\"\ncat\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		godebug string
		want    bool
	}{
		{"", madvise},
		{"disablethp=1", false},
	} {
		t.Run("GODEBUG="+tc.godebug, func(t *testing.T) {
			count := filepath.Join(dir, "count"+tc.godebug)
			command{env: []string{"GODEBUG=" + tc.godebug}}.mustRun(t, filepath.Join(binDir, "helm-inject"),
				"template", "web", webappChart, "--inject", script+" "+count)
			b, err := os.ReadFile(count)
			if err != nil {
				t.Fatal(err)
			}
			n, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatalf("the injector counted %q: %v", b, err)
			}
			if got := n > 0; got != tc.want {
				t.Errorf("GODEBUG=%q: helm-inject had %d mappings advised for huge pages, want some: %v", tc.godebug, n, tc.want)
			}
		})
	}
}
