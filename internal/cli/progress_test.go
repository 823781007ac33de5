package cli

import (
	"bytes"
	"testing"

	"github.com/helm-inject/helm-inject/helmfile"
	"github.com/helm-inject/helm-inject/internal/progress"
)

// TestProgressMode: --progress=auto is plain when stderr is not a terminal
// and none when helmfile runs helm-inject as its helm (helm shows no
// progress, and helmfile's output must not change); an explicit mode wins.
func TestProgressMode(t *testing.T) {
	tests := []struct {
		flag   string
		asHelm bool
		want   progress.Mode
	}{
		{"auto", false, progress.Plain},
		{"auto", true, progress.None},
		{"plain", true, progress.Plain},
		{"none", false, progress.None},
	}
	for _, tt := range tests {
		if tt.asHelm {
			t.Setenv(helmfile.EnvAsHelm, "1")
		} else {
			t.Setenv(helmfile.EnvAsHelm, "")
		}
		got, err := progressMode(tt.flag, &bytes.Buffer{})
		if err != nil || got != tt.want {
			t.Errorf("--progress=%s (as helmfile's helm: %v) = %q, %v; want %q", tt.flag, tt.asHelm, got, err, tt.want)
		}
	}
}

// TestProgressReporter: a valid --progress gives a reporter that prints
// (plain) or nothing (none); an unknown mode is refused.
func TestProgressReporter(t *testing.T) {
	var out bytes.Buffer
	r, err := progressReporter("plain", &out)
	if err != nil || r == nil {
		t.Fatalf("--progress=plain: %v, %v", r, err)
	}
	r.Line("a step")
	if out.String() != "progress: a step\n" {
		t.Errorf("plain reporter printed %q", out.String())
	}
	if _, err := progressReporter("sometimes", &out); err == nil {
		t.Error("--progress=sometimes accepted")
	}
}
