package inject

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/helm-inject/helm-inject/internal/redact"
	"github.com/helm-inject/helm-inject/manifest"
)

// TestDescribeChangesSaysOnlyWhatHappened: an injector that only adds a
// resource is not said to have dropped one, and one that only drops is
// not said to have added one.
func TestDescribeChangesSaysOnlyWhatHappened(t *testing.T) {
	secret := manifest.ID{APIVersion: "v1", Kind: "Secret", Name: "extra"}
	pod := manifest.ID{APIVersion: "v1", Kind: "Pod", Name: "b"}
	for _, tt := range []struct {
		dropped, added []manifest.ID
		want           string
	}{
		{nil, []manifest.ID{secret}, "added v1 Secret extra"},
		{[]manifest.ID{pod}, nil, "dropped or renamed v1 Pod b"},
	} {
		if got := describeChanges(tt.dropped, tt.added, "ns"); got != tt.want {
			t.Errorf("describeChanges(%v, %v) = %q, want %q", tt.dropped, tt.added, got, tt.want)
		}
	}
}

// TestStderrTail: an injector's stderr is kept up to the limit whole, and
// beyond it only its end, marked "..." as cut.
func TestStderrTail(t *testing.T) {
	b := &tailBuffer{limit: 8}
	_, _ = b.Write([]byte("12345678"))
	if got := b.suffix(nil); got != "; its stderr:\n12345678" {
		t.Errorf("exactly the limit: %q", got)
	}
	_, _ = b.Write([]byte("9"))
	if got := b.suffix(nil); got != "; its stderr:\n...23456789" {
		t.Errorf("one byte over the limit: %q", got)
	}
}

// TestStderrMasksASecretWhole: a multi-line Secret value an injector
// echoes is masked whole, once, not line by line.
func TestStderrMasksASecretWhole(t *testing.T) {
	secret := []byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  key: |-\n    first-line\n    second-line\n")
	b := &tailBuffer{limit: 1 << 10}
	_, _ = b.Write([]byte("bad input: first-line\nsecond-line\n"))
	if got, want := b.suffix(secret), "; its stderr:\nbad input: "+redact.Mask; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestExcerptLimits: an error's excerpt is the first five lines, each at
// most 200 bytes; more is marked "...".
func TestExcerptLimits(t *testing.T) {
	five := "1\n2\n3\n4\n5"
	if got := excerpt(five); strings.Contains(got, "...") || strings.Count(got, "  | ") != 5 {
		t.Errorf("five lines:\n%s", got)
	}
	if got := excerpt(five + "\n6"); !strings.HasSuffix(got, "  | ...") || strings.Contains(got, "6") {
		t.Errorf("six lines:\n%s", got)
	}
	long := strings.Repeat("x", 200)
	if got := excerpt(long); got != "  | "+long {
		t.Errorf("a line of 200 bytes: %q", got)
	}
	if got := excerpt(long + "y"); got != "  | "+long+"..." {
		t.Errorf("a line of 201 bytes: %q", got)
	}
}

// TestLockFileErrorNamesTheLine: a malformed line of a library's lock file
// is named by its number, comments and blank lines counted.
func TestLockFileErrorNamesTheLine(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, LockFileName), []byte("# pinned digests\n\nsidecar 1.0.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadLibrary(dir)
	if want := filepath.Join(dir, LockFileName) + ":3: want"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want one with %q", err, want)
	}
}

// TestNoPins: an empty pins file encodes as an empty flow mapping, and
// pinning into no pins at all starts a new set.
func TestNoPins(t *testing.T) {
	b, err := Pins{}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "injectors: {}") {
		t.Errorf("empty pins encode as:\n%s", b)
	}
	lib, err := LoadLibrary(exampleLibrary)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := ParseTemplateRef(lib, "log-shipper@1.0.0", nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Pins(nil).Pin(lib, []*TemplateRef{ref}, false)
	if err != nil || got["log-shipper"].Version != "1.0.0" {
		t.Errorf("pinning into nil pins: %v, %v", got, err)
	}
	// Pins are written one per block, for reviews to read.
	if b, err = got.Encode(); err != nil || !strings.Contains(string(b), "injectors:\n  log-shipper:\n") {
		t.Errorf("pins encode as:\n%s (%v)", b, err)
	}
}

// TestRenderedPatchLimit: a patch of exactly maxRenderBytes is rendered; one
// byte more is refused, however it is written.
func TestRenderedPatchLimit(t *testing.T) {
	w := &renderWriter{done: make(chan struct{})}
	if _, err := w.Write([]byte(strings.Repeat("x", maxRenderBytes-1))); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("y")); err != nil {
		t.Errorf("the last byte within the limit: %v", err)
	}
	if _, err := w.Write([]byte("z")); err == nil || !strings.Contains(err.Error(), "the rendered patch is over 4194304 bytes") {
		t.Errorf("one byte over the limit: %v", err)
	}
	if w.buf.Len() != maxRenderBytes {
		t.Errorf("kept %d bytes, want %d", w.buf.Len(), maxRenderBytes)
	}
}
