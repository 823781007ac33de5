package argocd

import (
	"flag"
	"testing"

	"github.com/helm-inject/helm-inject/internal/testfs"
)

var update = flag.Bool("update", false, "rewrite deploy/argocd/plugin.yaml")

// TestPluginConfig keeps the shipped plugin.yaml equal to what the code
// announces and runs.
func TestPluginConfig(t *testing.T) {
	b, err := PluginConfig()
	if err != nil {
		t.Fatal(err)
	}
	testfs.Golden(t, "../deploy/argocd/plugin.yaml", b, *update, "Run go test ./argocd -run TestPluginConfig -update.")
}
