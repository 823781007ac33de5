package inject

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// seedCache writes a cache file whose one entry, for path, holds the
// file's present identity changed by edit and the digest "sha256:cached":
// a Sum that answers "sha256:cached" took it from the cache.
func seedCache(t *testing.T, c *DigestCache, path string, edit func(*digestEntry)) {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	// Read here from stat(2), not through identify: a field identify
	// left out would make the same file miss.
	id := fileID{Dev: st.Dev, Ino: st.Ino, Size: st.Size, Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano()}
	e := digestEntry{fileID: id, SHA256: "sha256:cached"}
	key := path
	if edit != nil {
		edit(&e)
	}
	if e.SHA256 == "" { // edit moved the entry to another path
		key, e.SHA256 = path+".other", "sha256:cached"
	}
	if err := c.write(map[string]digestEntry{key: e}); err != nil {
		t.Fatal(err)
	}
}

// TestDigestCache: an entry answers only for the same path, device,
// inode, size, modification time and change time; each of them changed
// alone misses, and so does a program rewritten or replaced with its
// modification time set back (touch -r).
func TestDigestCache(t *testing.T) {
	dir := t.TempDir()
	prog := writeProgram(t, dir, "prog", "echo a")
	cache := &DigestCache{File: filepath.Join(dir, "cache", "digests.json")}
	first, err := cache.Sum(prog)
	if err != nil {
		t.Fatal(err)
	}
	uncached, err := (*DigestCache)(nil).Sum(prog)
	if err != nil || uncached != first || first != "sha256:"+sha256Hex("#!/bin/sh\necho a\n") {
		t.Fatalf("without a cache: %s %v; with one %s", uncached, err, first)
	}
	if fi, err := os.Stat(filepath.Dir(cache.File)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the cache folder was created %v (%v), want 0700", fi.Mode(), err)
	}
	if fi, err := os.Stat(cache.File); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the cache file was written %v (%v), want 0600", fi.Mode(), err)
	}

	for _, tt := range []struct {
		name string
		edit func(*digestEntry)
		hit  bool
	}{
		{"the same file", nil, true},
		{"another path", func(e *digestEntry) { e.SHA256 = "" }, false},
		{"another device", func(e *digestEntry) { e.Dev++ }, false},
		{"another inode", func(e *digestEntry) { e.Ino++ }, false},
		{"another size", func(e *digestEntry) { e.Size++ }, false},
		{"another modification time", func(e *digestEntry) { e.Mtime++ }, false},
		{"another change time", func(e *digestEntry) { e.Ctime++ }, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			seedCache(t, cache, prog, tt.edit)
			got, err := cache.Sum(prog)
			if err != nil {
				t.Fatal(err)
			}
			if want := map[bool]string{true: "sha256:cached", false: first}[tt.hit]; got != want {
				t.Errorf("Sum = %s, want %s", got, want)
			}
		})
	}

	// The attack: other content of the same size, the modification time
	// set back. The change time moves (no user can set it back), on the
	// coarse clock the kernel stamps it with: wait for it to tick.
	restore := func(path string, fi os.FileInfo) {
		t.Helper()
		if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
			t.Fatal(err)
		}
	}
	seedCache(t, cache, prog, nil)
	fi, _ := os.Stat(prog)
	time.Sleep(50 * time.Millisecond)
	if err := os.WriteFile(prog, []byte("#!/bin/sh\necho b\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	restore(prog, fi)
	rewritten := "sha256:" + sha256Hex("#!/bin/sh\necho b\n")
	if got, _ := cache.Sum(prog); got != rewritten {
		t.Errorf("a program rewritten in place, its time set back: %s, want %s", got, rewritten)
	}
	// Replaced (a new file renamed over it), its time set back.
	seedCache(t, cache, prog, nil)
	fi, _ = os.Stat(prog)
	time.Sleep(50 * time.Millisecond)
	other := writeProgram(t, t.TempDir(), "new", "echo c")
	restore(other, fi)
	if err := os.Rename(other, prog); err != nil {
		t.Fatal(err)
	}
	if got, _ := cache.Sum(prog); got != "sha256:"+sha256Hex("#!/bin/sh\necho c\n") {
		t.Errorf("a program replaced, its time set back: %s", got)
	}

	// A damaged cache file is rebuilt, not an error.
	if err := os.WriteFile(cache.File, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := cache.Sum(prog); err != nil {
		t.Errorf("a damaged cache: %v", err)
	}
}

func sha256Hex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// TestDigestCacheTrust: the cache is read only from a file of the current
// user that no one else may write to, in a folder (not a link) of the
// user that no one else may write to; anything else is ignored and the
// digest computed afresh, and nothing is written into a folder that is
// not trusted.
func TestDigestCacheTrust(t *testing.T) {
	prog := writeProgram(t, t.TempDir(), "prog", "echo a")
	want := "sha256:" + sha256Hex("#!/bin/sh\necho a\n")
	// setup seeds a cache in a fresh 0700 folder and returns it.
	setup := func(t *testing.T) *DigestCache {
		c := &DigestCache{File: filepath.Join(t.TempDir(), "cache", "digests.json")}
		seedCache(t, c, prog, nil)
		if got, _ := c.Sum(prog); got != "sha256:cached" {
			t.Fatalf("a private cache was not used: %s", got)
		}
		return c
	}
	chmod := func(t *testing.T, path string, mode os.FileMode) {
		t.Helper()
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
	}
	chown := func(t *testing.T, path string) {
		t.Helper()
		if os.Getuid() != 0 {
			t.Skip("giving a file to another user takes root")
		}
		if err := os.Lchown(path, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		name string
		// spoil makes the cache untrusted; writable says whether the
		// folder is still one to write the fresh digest into.
		spoil    func(t *testing.T, c *DigestCache)
		writable bool
	}{
		{"a file others may write to (0666)", func(t *testing.T, c *DigestCache) { chmod(t, c.File, 0o666) }, true},
		{"a file the group may write to (0620)", func(t *testing.T, c *DigestCache) { chmod(t, c.File, 0o620) }, true},
		{"a file of another user", func(t *testing.T, c *DigestCache) { chown(t, c.File) }, true},
		{"a folder others may write to (0777)", func(t *testing.T, c *DigestCache) { chmod(t, filepath.Dir(c.File), 0o777) }, false},
		{"a folder the group may write to (0770)", func(t *testing.T, c *DigestCache) { chmod(t, filepath.Dir(c.File), 0o770) }, false},
		{"a folder of another user", func(t *testing.T, c *DigestCache) { chown(t, filepath.Dir(c.File)) }, false},
		{"a folder and file of another user (uid)", func(t *testing.T, c *DigestCache) {
			uid := os.Getuid()
			c.uid = func() int { return uid + 1 }
		}, false},
		{"a folder that is a link", func(t *testing.T, c *DigestCache) {
			dir := filepath.Dir(c.File)
			if err := os.Rename(dir, dir+".real"); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(dir+".real", dir); err != nil {
				t.Fatal(err)
			}
		}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := setup(t)
			tt.spoil(t, c)
			before, _ := os.ReadFile(c.File)
			got, err := c.Sum(prog)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("the untrusted cache answered %s, want the file's digest %s", got, want)
			}
			after, _ := os.ReadFile(c.File)
			names, _ := os.ReadDir(filepath.Dir(c.File))
			if !tt.writable && (string(after) != string(before) || len(names) != 1) {
				t.Errorf("the untrusted folder was written to: %s, %d entries", after, len(names))
			}
			if tt.writable {
				// The fresh digest replaced the file with the user's own,
				// mode 0600.
				fi, err := os.Stat(c.File)
				if err != nil || fi.Mode().Perm() != 0o600 || !strings.Contains(string(after), want) {
					t.Errorf("the cache file after: %v %v %s", fi.Mode(), err, after)
				}
			}
		})
	}
}
