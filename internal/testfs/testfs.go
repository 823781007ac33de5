// Package testfs writes small file trees for tests.
package testfs

import (
	"os"
	"path/filepath"
	"testing"
)

// Write creates each file of files (slash-separated paths relative to dir,
// to contents) below dir, with the folders they need.
func Write(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
