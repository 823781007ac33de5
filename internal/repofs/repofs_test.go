package repofs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/helm-inject/helm-inject/internal/budget"
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

// TestBudget: a repository opened with a budget charges it every file and
// folder opened or listed and every byte read or listed, whichever way it
// is read (ReadFile, FS's ReadFile, Open and Read, ReadDir, WalkDir), after
// links: a file reached through a link and by its own name is charged
// twice. Past a bound the read fails naming it and the path.
func TestBudget(t *testing.T) {
	top := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	const content = "0123456789" // 10 bytes
	must(os.MkdirAll(filepath.Join(top, "d"), 0o755))
	must(os.WriteFile(filepath.Join(top, "d", "f"), []byte(content), 0o644))
	must(os.Symlink("d", filepath.Join(top, "l")))
	must(os.MkdirAll(filepath.Join(top, "many"), 0o755))
	for i := range 600 {
		must(os.WriteFile(filepath.Join(top, "many", fmt.Sprintf("%04d", i)), nil, 0o644))
	}
	// A sparse file of 1 GiB: charged its size before a byte is read.
	must(os.WriteFile(filepath.Join(top, "big"), nil, 0o644))
	must(os.Truncate(filepath.Join(top, "big"), 1<<30))

	readAll := func(r *Repo, name string) error {
		f, err := r.FS().Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.ReadAll(f)
		return err
	}
	tests := []struct {
		name   string
		limits budget.Limits
		read   func(r *Repo) error
		// files and bytes charged, or the bound passed.
		files, bytes int64
		bound        budget.Bound
	}{
		{name: "ReadFile", read: func(r *Repo) error { _, err := r.ReadFile("d/f"); return err }, files: 1, bytes: 10},
		{name: "FS ReadFile", read: func(r *Repo) error { _, err := fs.ReadFile(r.FS(), "d/f"); return err }, files: 1, bytes: 10},
		{name: "Open and Read", read: func(r *Repo) error { return readAll(r, "d/f") }, files: 1, bytes: 10},
		{
			name: "a file by its name and through a link, each way",
			read: func(r *Repo) error {
				_, err1 := r.ReadFile("d/f")
				_, err2 := r.ReadFile("l/f")
				_, err3 := fs.ReadFile(r.FS(), "l/f")
				return errors.Join(err1, err2, err3)
			},
			files: 3, bytes: 30,
		},
		{
			name:  "ReadDir: the folder and its entries",
			read:  func(r *Repo) error { _, err := fs.ReadDir(r.FS(), "d"); return err },
			files: 1, bytes: int64(len("f")) + entryCost,
		},
		{
			name: "WalkDir through a link: each folder listed, each file read",
			read: func(r *Repo) error {
				return fs.WalkDir(r.FS(), "l", func(p string, d fs.DirEntry, err error) error {
					if err != nil || d.IsDir() {
						return err
					}
					_, err = fs.ReadFile(r.FS(), p)
					return err
				})
			},
			// "l" is a link: WalkDir stats it as the folder it leads to.
			files: 2, bytes: int64(len("f")) + entryCost + 10,
		},
		{name: "Stat is not a read", read: func(r *Repo) error { _, err := r.Stat("d/f"); return err }},
		{
			name:   "files past the bound",
			limits: budget.Limits{Files: 1},
			read: func(r *Repo) error {
				_, err1 := r.ReadFile("d/f")
				_, err2 := r.ReadFile("l/f")
				return errors.Join(err1, err2)
			},
			bound: budget.Files,
		},
		{name: "a file larger than the budget", limits: budget.Limits{Bytes: 1 << 20}, read: func(r *Repo) error { _, err := r.ReadFile("big"); return err }, bound: budget.Bytes},
		{name: "a file larger than the budget, read in pieces", limits: budget.Limits{Bytes: 1 << 20}, read: func(r *Repo) error { return readAll(r, "big") }, bound: budget.Bytes},
		{
			name:   "a folder of many entries",
			limits: budget.Limits{Bytes: 500 * entryCost},
			read:   func(r *Repo) error { _, err := fs.ReadDir(r.FS(), "many"); return err },
			bound:  budget.Bytes,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := budget.New(tc.limits)
			r, err := OpenBudget(top, b)
			must(err)
			defer r.Close()
			if r.Budget() != b {
				t.Errorf("Budget() = %p, want %p", r.Budget(), b)
			}
			err = tc.read(r)
			var e *budget.ExceededError
			if tc.bound != 0 {
				if !errors.As(err, &e) || e.Bound != tc.bound {
					t.Fatalf("err = %v, want the %v bound", err, tc.bound)
				}
				if u := b.Used(); u.Bytes > b.Limits().Bytes {
					t.Errorf("charged %d bytes past the bound of %d", u.Bytes, b.Limits().Bytes)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if u := b.Used(); u.Files != tc.files || u.Bytes != tc.bytes {
				t.Errorf("charged %d files, %d bytes; want %d, %d", u.Files, u.Bytes, tc.files, tc.bytes)
			}
		})
	}

	// Listed in chunks, a folder's entries come whole and sorted, as the
	// root's ReadDir gives them.
	counted, err := OpenBudget(top, budget.New(budget.Limits{}))
	must(err)
	defer counted.Close()
	entries, err := fs.ReadDir(counted.FS(), "many")
	if err != nil || len(entries) != 600 || !slices.IsSortedFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) }) {
		t.Errorf("ReadDir(many) with a budget: %d entries, sorted %v, %v", len(entries), slices.IsSortedFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) }), err)
	}

	// Without a budget nothing is counted.
	r, err := Open(top)
	must(err)
	defer r.Close()
	if r.Budget() != nil {
		t.Error("Open's repository has a budget")
	}
	if names, err := fs.ReadDir(r.FS(), "many"); err != nil || len(names) != 600 {
		t.Errorf("ReadDir(many) without a budget: %d entries, %v", len(names), err)
	}
}
