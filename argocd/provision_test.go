package argocd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/helm-inject/helm-inject/inject"
	"github.com/helm-inject/helm-inject/internal/testfs"
)

// fixtureLibrary copies the fixture library (sidecar 1.0.0, locked).
func fixtureLibrary(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "lib")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "fixtures", "injectors", "library"))); err != nil {
		t.Fatal(err)
	}
	return dir
}

// fakeSelf stands for the running helm-inject executable.
func fakeSelf(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	testfs.Write(t, dir, map[string]string{"self": "x"})
	return filepath.Join(dir, "self")
}

func TestProvision(t *testing.T) {
	top := t.TempDir()
	testfs.Write(t, top, map[string]string{
		"self":               "#!helm-inject",
		"tools/istioctl":     "istioctl",
		"tools/..data/x":     "a ConfigMap volume's folder",
		"tools/.hidden":      "",
		"dest/bin/old-thing": "",
	})
	dest := filepath.Join(top, "dest")
	if err := Provision(dest, filepath.Join(top, "self"), fixtureLibrary(t), filepath.Join(top, "tools")); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{"bin/helm-inject": "#!helm-inject", "bin/istioctl": "istioctl"} {
		b, err := os.ReadFile(filepath.Join(dest, path))
		if err != nil || string(b) != want {
			t.Errorf("%s: %q %v, want %q", path, b, err, want)
		}
		if fi, err := os.Stat(filepath.Join(dest, path)); err != nil || fi.Mode().Perm() != 0o755 {
			t.Errorf("%s: mode %v %v, want 0755", path, fi.Mode(), err)
		}
	}
	for _, absent := range []string{"bin/..data", "bin/.hidden"} {
		if _, err := os.Lstat(filepath.Join(dest, absent)); err == nil {
			t.Errorf("%s was copied", absent)
		}
	}
	lib, err := inject.LoadLibrary(filepath.Join(dest, "injectors"))
	if err != nil {
		t.Fatal(err)
	}
	if d := lib.Get("sidecar", "1.0.0"); d == nil || !lib.Locked(d) {
		t.Errorf("the provisioned library lacks sidecar 1.0.0, locked: %v", lib.Names())
	}
	if err := lib.Verify(); err != nil {
		t.Error(err)
	}

	// Without a library: an empty one, so that the sidecar's library
	// setting names a folder that exists.
	bare := filepath.Join(top, "bare")
	if err := Provision(bare, filepath.Join(top, "self"), "", ""); err != nil {
		t.Fatal(err)
	}
	if entries, err := os.ReadDir(filepath.Join(bare, "injectors")); err != nil || len(entries) != 0 {
		t.Errorf("injectors without a library: %v %v, want an empty folder", entries, err)
	}
}

// TestProvisionFromAConfigMapVolume: a library mounted from a ConfigMap
// (each key at its path through "items", behind Kubernetes' ..data links)
// is copied as a plain library.
func TestProvisionFromAConfigMapVolume(t *testing.T) {
	src := fixtureLibrary(t)
	vol := filepath.Join(t.TempDir(), "vol")
	stamp := filepath.Join(vol, "..2026_12_04_10_00_00.1")
	if err := os.CopyFS(stamp, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"..data": "..2026_12_04_10_00_00.1", "sidecar": "..data/sidecar", "injectors.lock": "..data/injectors.lock"} {
		if err := os.Symlink(target, filepath.Join(vol, link)); err != nil {
			t.Fatal(err)
		}
	}
	dest := filepath.Join(t.TempDir(), "dest")
	self := fakeSelf(t)
	if err := Provision(dest, self, vol, ""); err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(filepath.Join(src, "sidecar", "1.0.0.yaml"))
	got, err := os.ReadFile(filepath.Join(dest, "injectors", "sidecar", "1.0.0.yaml"))
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("sidecar/1.0.0.yaml: %v, want the library's bytes", err)
	}
}

// TestProvisionRefusesABrokenLibrary: a version not locked, a locked one
// changed, or a locked one removed stops the provisioning, naming it.
func TestProvisionRefusesABrokenLibrary(t *testing.T) {
	self := fakeSelf(t)
	def := func(lib string) []byte {
		b, err := os.ReadFile(filepath.Join(lib, "sidecar", "1.0.0.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for name, tt := range map[string]struct {
		change  func(lib string)
		wantErr string
	}{
		"a locked version removed": {
			change:  func(lib string) { os.Remove(filepath.Join(lib, "sidecar", "1.0.0.yaml")) },
			wantErr: "sidecar@1.0.0 locked in injectors.lock but removed",
		},
		"a version not locked": {
			change: func(lib string) {
				b := bytes.Replace(def(lib), []byte("1.0.0"), []byte("1.0.1"), 1)
				testfs.Write(t, lib, map[string]string{"sidecar/1.0.1.yaml": string(b)})
			},
			wantErr: "not locked",
		},
		"a locked version changed": {
			change: func(lib string) {
				testfs.Write(t, lib, map[string]string{"sidecar/1.0.0.yaml": string(def(lib)) + "\n# changed\n"})
			},
			wantErr: "was changed after sidecar@1.0.0 was locked",
		},
	} {
		t.Run(name, func(t *testing.T) {
			lib := fixtureLibrary(t)
			tt.change(lib)
			err := Provision(filepath.Join(t.TempDir(), "dest"), self, lib, "")
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// TestProvisionChecksWhatItWrote: the copied library must load as the
// source did; a destination holding a broken definition (left from
// elsewhere: a volume reused) fails the provisioning, and so does a lock
// file that cannot be written (a folder where it goes).
func TestProvisionChecksWhatItWrote(t *testing.T) {
	for name, stale := range map[string]map[string]string{
		"a broken definition left":      {"injectors/other/9.9.9.yaml": "not: [a definition"},
		"a lock that cannot be written": {"injectors/injectors.lock/x": ""},
	} {
		t.Run(name, func(t *testing.T) {
			dest := t.TempDir()
			testfs.Write(t, dest, stale)
			err := Provision(dest, fakeSelf(t), fixtureLibrary(t), "")
			if err == nil || !strings.Contains(err.Error(), "injectors") {
				t.Errorf("error %v, want the copied library's", err)
			}
		})
	}
}
