package testfs

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Golden compares got with the golden file at path, after writing got
// there when write is set (a test's -update flag). mismatch says what to do
// when they differ; it follows the diff in the failure.
func Golden(t testing.TB, path string, got []byte, write bool, mismatch string) {
	t.Helper()
	if write {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-golden +now). %s\n%s", path, mismatch, diff)
	}
}
