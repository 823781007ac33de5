package inject

import (
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
