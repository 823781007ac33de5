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
