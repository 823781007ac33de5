package repofs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestResolve resolves names the way the kernel would open them: links
// replaced before the elements after them, nothing above the top.
func TestResolve(t *testing.T) {
	top := t.TempDir()
	outside := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(top, "charts", "app"), 0o755))
	must(os.MkdirAll(filepath.Join(top, "deep", "er"), 0o755))
	must(os.WriteFile(filepath.Join(top, "charts", "app", "values.yaml"), []byte("a: 1\n"), 0o644))
	must(os.WriteFile(filepath.Join(outside, "secret"), []byte("s\n"), 0o644))
	must(os.Symlink("charts/app", filepath.Join(top, "app")))                // relative, inside
	must(os.Symlink("../../charts", filepath.Join(top, "deep", "er", "up"))) // "up/.." is the parent of charts
	must(os.Symlink(outside, filepath.Join(top, "abs")))                     // absolute
	must(os.Symlink("../..", filepath.Join(top, "deep", "climb")))           // climbs above the top
	must(os.Symlink("loop", filepath.Join(top, "loop")))

	r, err := Open(top)
	must(err)
	defer r.Close()

	for _, tc := range []struct {
		name, want string
		err        error
	}{
		{name: "", want: "."},
		{name: ".", want: "."},
		{name: "charts/app/values.yaml", want: "charts/app/values.yaml"},
		{name: "./charts//app/", want: "charts/app"},
		{name: "app/values.yaml", want: "charts/app/values.yaml"},
		{name: "charts/../app", want: "charts/app"},
		// "up/.." is the parent of where up leads (the top), not deep/er.
		{name: "deep/er/up/..", want: "."},
		{name: "deep/er/up/app", want: "charts/app"},
		{name: "app/missing/x", want: "charts/app/missing/x", err: fs.ErrNotExist},
		{name: "..", err: ErrOutside},
		{name: "charts/../../x", err: ErrOutside},
		{name: "/etc/passwd", err: ErrOutside},
		{name: `\etc`, err: ErrOutside},
		{name: "https://example.invalid/values.yaml", err: ErrOutside},
		{name: "abs/secret", err: ErrOutside},
		{name: "deep/climb/x", err: ErrOutside},
	} {
		got, err := r.Resolve(tc.name)
		if tc.err != nil {
			if !errors.Is(err, tc.err) {
				t.Errorf("Resolve(%q) = %q, %v; want error %v", tc.name, got, err, tc.err)
			}
			if tc.err == fs.ErrNotExist && got != tc.want {
				t.Errorf("Resolve(%q) = %q; want %q", tc.name, got, tc.want)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
	if _, err := r.Resolve("loop"); err == nil {
		t.Error("Resolve(loop) succeeded; want too many links")
	}
	b, err := r.ReadFile("app/values.yaml")
	if err != nil || string(b) != "a: 1\n" {
		t.Errorf("ReadFile(app/values.yaml) = %q, %v", b, err)
	}
	if _, err := r.ReadFile("abs/secret"); !errors.Is(err, ErrOutside) {
		t.Errorf("ReadFile(abs/secret) error = %v; want ErrOutside", err)
	}
	if _, err := fs.ReadFile(r.FS(), "deep/climb/x"); err == nil {
		t.Error("FS().ReadFile through a climbing link succeeded")
	}
	if fi, err := r.Stat("app"); err != nil || !fi.IsDir() {
		t.Errorf("Stat(app) = %v, %v; want a folder", fi, err)
	}
}
