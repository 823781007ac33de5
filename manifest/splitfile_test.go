package manifest

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSplitFile: a rendered template file splits where a line starts with
// "---", as Helm 4 splits it, and each document keeps the white space
// between it and the next separator or the end of the file, which Helm 4
// prints and stores.
func TestSplitFile(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		want       []Part
	}{
		{"one, line end", "a: 1\n", []Part{{"a: 1", "\n"}}},
		{"trim marker: none", "a: 1", []Part{{"a: 1", ""}}},
		{"blank lines after", "a: 1\n\n\n", []Part{{"a: 1", "\n\n\n"}}},
		{"two", "a: 1\n---\nb: 2\n", []Part{{"a: 1", "\n"}, {"b: 2", "\n"}}},
		{"blank line before a separator", "a: 1\n\n---\nb: 2", []Part{{"a: 1", "\n\n"}, {"b: 2", ""}}},
		{"leading separator and blank lines", "---\n\na: 1\n", []Part{{"a: 1", "\n"}}},
		{"separator with blanks after it", "a: 1\n---  \nb: 2\n", []Part{{"a: 1", "\n"}, {"b: 2", "\n"}}},
		{"CRLF", "a: 1\r\n---\r\nb: 2\r\n", []Part{{"a: 1", "\r\n"}, {"b: 2", "\r\n"}}},
		{"trailing spaces on the last line", "a: 1  \n", []Part{{"a: 1", "  \n"}}},
		{"empty documents dropped", "---\n---\na: 1\n---\n", []Part{{"a: 1", "\n"}}},
		{"only white space", " \n\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, SplitFile(tc.file)); diff != "" {
				t.Errorf("SplitFile(%q) (-want +got):\n%s", tc.file, diff)
			}
		})
	}
}
