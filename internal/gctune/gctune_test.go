package gctune

import (
	"fmt"
	"os"
	"os/exec"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
)

// TestPercent: a helm-inject process collects at GOGC=200 unless its
// environment sets GOGC, which then wins, whatever its value.
func TestPercent(t *testing.T) {
	if os.Getenv("GCTUNE_CHILD") != "" {
		fmt.Println(debug.SetGCPercent(100))
		return
	}
	for gogc, want := range map[string]string{"": "200", "GOGC=50": "50", "GOGC=100": "100", "GOGC=off": "-1"} {
		env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "GOGC=") })
		env = append(env, "GCTUNE_CHILD=1")
		if gogc != "" {
			env = append(env, gogc)
		}
		cmd := exec.Command(os.Args[0], "-test.run", "^TestPercent$")
		cmd.Env = env
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v", gogc, err)
		}
		if got, _, _ := strings.Cut(string(out), "\n"); got != want {
			t.Errorf("with %q the GC percent is %s, want %s", gogc, got, want)
		}
	}
}
