package chartify

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/helm-inject/helm-inject/internal/testfs"
)

// TestRenderKeepsNotResources: a chart whose templates render documents
// that are valid YAML but no Kubernetes object renders, as helm template
// does, with each such document kept where Helm sorts it and marked with
// Helm's words (a null document holds no object and is no such
// document); YAML that Helm's render refuses is still refused.
func TestRenderKeepsNotResources(t *testing.T) {
	chart := func(templates map[string]string) string {
		dir := t.TempDir()
		files := map[string]string{"Chart.yaml": "apiVersion: v2\nname: c\nversion: 0.1.0\n"}
		for name, text := range templates {
			files["templates/"+name] = text
		}
		testfs.Write(t, dir, files)
		return dir
	}
	type doc struct{ source, notResource string }
	const unset = "error validating data: [apiVersion not set, kind not set]"
	tests := []struct {
		name, dir string
		want      []doc
		err       string
	}{
		{name: "helm's issue-9027", dir: filepath.Join(helmModuleDir(t), "pkg", "cmd", "testdata", "testcharts", "issue-9027"), want: []doc{
			{"issue-9027/charts/subchart/templates/values.yaml", unset},
			{"issue-9027/templates/values.yaml", unset},
		}},
		{name: "mixed with resources", dir: chart(map[string]string{
			"all.yaml":  "values:\n  a: 1\n---\napiVersion: v1\nkind: ConfigMap\ndata: {}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n---\nkind: Service\nmetadata:\n  name: s\n",
			"null.yaml": "~\n",
		}), want: []doc{
			{"c/templates/all.yaml", "resource name may not be empty"},
			{"c/templates/all.yaml", ""},
			{"c/templates/all.yaml", "error validating data: apiVersion not set"},
			{"c/templates/all.yaml", unset},
			{"c/templates/null.yaml", ""},
		}},
		{name: "a sequence", dir: chart(map[string]string{"s.yaml": "- a\n- b\n"}), err: "rendered template c/templates/s.yaml: invalid YAML"},
		{name: "a string", dir: chart(map[string]string{"s.yaml": "just text\n"}), err: "rendered template c/templates/s.yaml: invalid YAML"},
		{name: "not YAML", dir: chart(map[string]string{"s.yaml": "kind: [\n"}), err: "rendered template c/templates/s.yaml: invalid YAML"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch, _, err := Load(tt.dir, LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			r, err := Render(ch, nil, RenderOptions{ReleaseName: "x", Namespace: "ns"})
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []doc
			for _, d := range r.Documents {
				got = append(got, doc{d.Source, d.NotResource})
			}
			if len(got) != len(tt.want) {
				t.Fatalf("rendered %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("document %d: %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}
