package profiling

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// gzipMagic starts every profile pprof writes (a gzipped protocol buffer).
var gzipMagic = []byte{0x1f, 0x8b}

// TestStartWritesProfilesNamedByTheEnvironment: each variable set gives
// its profile file, unset ones none, and a file that cannot be created is
// an error naming the variable.
func TestStartWritesProfilesNamedByTheEnvironment(t *testing.T) {
	dir := t.TempDir()
	cpu, mem := filepath.Join(dir, "cpu.prof"), filepath.Join(dir, "mem.prof")
	for _, tt := range []struct {
		name     string
		env      map[string]string
		cpu, mem bool
	}{
		{"neither", nil, false, false},
		{"cpu", map[string]string{EnvCPUProfile: cpu}, true, false},
		{"mem", map[string]string{EnvMemProfile: mem}, false, true},
		{"both", map[string]string{EnvCPUProfile: cpu, EnvMemProfile: mem}, true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			os.Remove(cpu)
			os.Remove(mem)
			stop, err := Start(func(k string) string { return tt.env[k] })
			if err != nil {
				t.Fatal(err)
			}
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			for path, want := range map[string]bool{cpu: tt.cpu, mem: tt.mem} {
				b, err := os.ReadFile(path)
				if got := err == nil; got != want {
					t.Fatalf("%s written: %v, want %v", filepath.Base(path), got, want)
				}
				if want && !bytes.HasPrefix(b, gzipMagic) {
					t.Errorf("%s is not a profile: % x", filepath.Base(path), b[:min(len(b), 8)])
				}
			}
		})
	}
	_, err := Start(func(k string) string {
		if k == EnvCPUProfile {
			return filepath.Join(dir, "no-such-folder", "cpu.prof")
		}
		return ""
	})
	if err == nil || !strings.Contains(err.Error(), EnvCPUProfile) {
		t.Errorf("a CPU profile in a missing folder: %v, want an error naming %s", err, EnvCPUProfile)
	}
	stop, _ := Start(func(k string) string {
		if k == EnvMemProfile {
			return filepath.Join(dir, "no-such-folder", "mem.prof")
		}
		return ""
	})
	if err := stop(); err == nil || !strings.Contains(err.Error(), EnvMemProfile) {
		t.Errorf("a heap profile in a missing folder: %v, want an error naming %s", err, EnvMemProfile)
	}
}
