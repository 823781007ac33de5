package manifest

import (
	"testing"

	"gopkg.in/yaml.v3"
)

// TestBlockScalarKeepsItsLineBreak: a block scalar that ends a document
// reads as Helm's client reads it from the release manifest, where the
// document's last line ends: "|" keeps one line break, "|-" none. Parsed
// and written back by an injector, or compared with the cluster's object,
// a script would otherwise lose its last line break.
func TestBlockScalarKeepsItsLineBreak(t *testing.T) {
	for _, tt := range []struct {
		content, want string
	}{
		{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  run.sh: |\n    echo hi", "echo hi\n"},
		{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  run.sh: |-\n    echo hi", "echo hi"},
		{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  run.sh: >\n    echo\n    hi", "echo hi\n"},
		{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  run.sh: plain", "plain"},
	} {
		d, err := ParseTree("c/templates/c.yaml", tt.content)
		if err != nil {
			t.Fatal(err)
		}
		for _, from := range []string{"the kept parse", "a new parse"} {
			root, err := d.Tree()
			if err != nil {
				t.Fatal(err)
			}
			var o struct {
				Data map[string]string `yaml:"data"`
			}
			if err := root.Decode(&o); err != nil {
				t.Fatal(err)
			}
			if o.Data["run.sh"] != tt.want {
				t.Errorf("%q, %s: run.sh = %q, want %q", tt.content, from, o.Data["run.sh"], tt.want)
			}
		}
		var o struct {
			Data map[string]string `yaml:"data"`
		}
		if err := yaml.Unmarshal(d.YAML(), &o); err != nil || o.Data["run.sh"] != tt.want {
			t.Errorf("%q: YAML() reads run.sh = %q (%v), want %q", tt.content, o.Data["run.sh"], err, tt.want)
		}
	}
}
