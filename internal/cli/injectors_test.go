package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInjectorsCommands: injectors list shows each version and whether it
// is locked; verify fails on an unlocked version and on a locked one whose
// file changed, naming the file; lock records the new versions.
func TestInjectorsCommands(t *testing.T) {
	lib := t.TempDir()
	for _, v := range []string{"1.0.0", "1.1.0"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "examples", "injectors", "log-shipper", v+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(lib, "log-shipper"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(lib, "log-shipper", v+".yaml"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) (string, string, int) {
		t.Helper()
		return runCLI(t, append(append([]string{"injectors"}, args...), "--injector-library", lib)...)
	}
	if out, _, code := run("list"); code != 0 || strings.Count(out, "NOT LOCKED") != 2 || !strings.Contains(out, "1.1.0") {
		t.Errorf("injectors list before lock: exit %d:\n%s", code, out)
	}
	if _, errOut, code := run("verify"); code == 0 || !strings.Contains(errOut, "not locked in "+filepath.Join(lib, "injectors.lock")) || !strings.Contains(errOut, "log-shipper@1.1.0") {
		t.Errorf("injectors verify with unlocked versions: exit %d: %s", code, errOut)
	}
	if out, _, code := run("lock"); code != 0 || !strings.Contains(out, "locked log-shipper@1.0.0") || !strings.Contains(out, "locked log-shipper@1.1.0") {
		t.Errorf("injectors lock: exit %d:\n%s", code, out)
	}
	if out, errOut, code := run("verify"); code != 0 || !strings.Contains(out, "every injector version is locked and unchanged") {
		t.Errorf("injectors verify after lock: exit %d: %s%s", code, out, errOut)
	}
	if out, _, code := run("list"); code != 0 || strings.Contains(out, "NOT LOCKED") {
		t.Errorf("injectors list after lock: exit %d:\n%s", code, out)
	}
	changed := filepath.Join(lib, "log-shipper", "1.0.0.yaml")
	f, err := os.OpenFile(changed, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString("# edited after release\n")
	f.Close()
	if _, errOut, code := run("verify"); code == 0 || !strings.Contains(errOut, changed+" was changed after log-shipper@1.0.0 was locked") {
		t.Errorf("injectors verify with a changed version: exit %d: %s", code, errOut)
	}
}

// TestInjectorsLockSaysWhenNothingChanged: lock on a locked library says
// so, and only then.
func TestInjectorsLockSaysWhenNothingChanged(t *testing.T) {
	lib := t.TempDir()
	if err := os.CopyFS(lib, os.DirFS(filepath.Join("..", "..", "fixtures", "injectors", "library"))); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(t, "injectors", "lock", "--injector-library", lib)
	if code != 0 || out != "every version was already locked\n" {
		t.Errorf("lock of a locked library: exit %d: %q %s", code, out, errOut)
	}
	def, err := os.ReadFile(filepath.Join(lib, "sidecar", "1.0.0.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(lib, "sidecar", "1.0.1.yaml"), []byte(strings.Replace(string(def), "1.0.0", "1.0.1", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = runCLI(t, "injectors", "lock", "--injector-library", lib)
	if code != 0 || out != "locked sidecar@1.0.1\n" {
		t.Errorf("lock of a new version: exit %d: %q %s", code, out, errOut)
	}
}
