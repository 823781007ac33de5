package e2e

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/helm-inject/helm-inject/manifest"
)

// TestKeptParseOfParityCharts: for every document that the charts of the
// parity corpus render, the tree helm-inject parses once and hands to a
// built-in injector (manifest.ParseTree, then Document.Tree) is the tree
// yaml.v3 reads from the document as it stands in helm's output, node for
// node, whether it comes from the parse kept or a new one. The documents are helm 4's `helm template` output without
// the "# Source:" line it prints and its engine does not render.
func TestKeptParseOfParityCharts(t *testing.T) {
	share := filepath.Join(filepath.Dir(cluster.ToolsBin), "share")
	for _, c := range parityCorpus {
		t.Run(c.name, func(t *testing.T) {
			out := command{}.mustRun(t, helm4Bin(t), append([]string{"template", "p", filepath.Join(share, c.dir)}, c.flags...)...).stdout
			docs := 0
			for _, text := range manifest.Split(out) {
				if first, rest, ok := strings.Cut(text, "\n"); ok && strings.HasPrefix(first, "# Source: ") {
					text = rest
				}
				// yaml.v3 reads the document as it stands in helm's
				// output, its last line ended (a block scalar that ends
				// it keeps its line break).
				want := &yaml.Node{}
				if err := yaml.Unmarshal([]byte(text+"\n"), want); err != nil || want.Kind == 0 {
					continue // helm 4 prints comments-only documents too
				}
				d, err := manifest.ParseTree("t.yaml", text)
				if err != nil {
					t.Fatalf("ParseTree: %v\n%s", err, text)
				}
				got, err := d.Tree()
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(want, got) {
					t.Errorf("the kept tree differs from yaml.v3's (-yaml.v3 +kept):\n%s\nof:\n%s", cmp.Diff(want, got), text)
				}
				docs++
			}
			if docs == 0 {
				t.Fatal("the chart rendered no document: the case tests nothing")
			}
		})
	}
}
