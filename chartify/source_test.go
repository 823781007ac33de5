package chartify

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadChartRefusesWhatHelm4CannotInstall: an apiVersion v3 chart (helm
// 4.3.2 refuses it for install) and a library chart are refused with the
// chart named; v1 and v2 charts load.
func TestLoadChartRefusesWhatHelm4CannotInstall(t *testing.T) {
	for _, tt := range []struct {
		chartYAML string
		wantErr   string
	}{
		{"apiVersion: v2\nname: web\nversion: 0.1.0\n", ""},
		{"apiVersion: v1\nname: web\nversion: 0.1.0\n", ""},
		{"apiVersion: v3\nname: web\nversion: 0.1.0\n", `has apiVersion "v3": helm-inject installs apiVersion v1 and v2 charts only`},
		{"apiVersion: v2\nname: web\nversion: 0.1.0\ntype: library\n", "is a library chart and cannot be installed"},
	} {
		dir := filepath.Join(t.TempDir(), "web")
		if err := os.MkdirAll(filepath.Join(dir, "templates"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "Chart.yaml"), []byte(tt.chartYAML), 0o644); err != nil {
			t.Fatal(err)
		}
		ch, err := loadChart(dir)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%q: %v", tt.chartYAML, err)
		case tt.wantErr == "" && ch.Name() != "web":
			t.Errorf("%q: loaded %q", tt.chartYAML, ch.Name())
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), dir)):
			t.Errorf("%q: error %v, want one naming %s and saying %q", tt.chartYAML, err, dir, tt.wantErr)
		}
	}
}
