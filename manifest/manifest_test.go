package manifest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	sigsyaml "sigs.k8s.io/yaml"
)

// helmSplit is Helm's own splitter, in document order.
func helmSplit(s string) []string {
	m := releaseutil.SplitManifests(s)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		var a, b int
		fmt.Sscanf(keys[i], "manifest-%d", &a)
		fmt.Sscanf(keys[j], "manifest-%d", &b)
		return a < b
	})
	var out []string
	for _, k := range keys {
		// Helm 4 keeps a document's trailing white space; Split trims.
		out = append(out, strings.TrimSpace(m[k]))
	}
	return out
}

var splitCases = []string{
	"",
	"---",
	"a: 1",
	"---\na: 1\n---\nb: 2\n",
	"a: 1\n---\n\n---\nb: 2",
	"a: |\n  ---\n  not a separator\n---\nb: 2",
	"--- \na: 1\n---   \nb: 2",
	"a: 1\n--- # comment\nb: 2",
	"  \n\n---\n\n",
	// Helm 4 cuts at every line that starts with "---", even "----" and
	// "---b" (helm 3 kept "---" in the second document of the first).
	"a\n---\n---\nb",
	"---\n---\na: 1",
	"a\n----\nb",
	"a\n---b\n",
	"a\r\n---\r\nb\f\n---\t\v\nc",
	// A line that starts with two dashes only is no separator.
	"args:\n--verbose: true\n---\nb: 2",
}

func TestSplitMatchesHelm(t *testing.T) {
	for _, s := range splitCases {
		if diff := cmp.Diff(helmSplit(s), Split(s)); diff != "" {
			t.Errorf("Split(%q) differs from Helm (-helm +ours):\n%s", s, diff)
		}
	}
}

func FuzzSplit(f *testing.F) {
	for _, s := range splitCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		docs := Split(s)
		if diff := cmp.Diff(helmSplit(s), docs); diff != "" {
			t.Fatalf("Split(%q) differs from Helm (-helm +ours):\n%s", s, diff)
		}
		for _, d := range docs {
			// Parse must never panic. What it accepts is a resource with
			// a full identity, or a document that holds no object:
			// comments only, or a YAML null, which Helm's client skips
			// (kept, and Empty, so nothing is created from it), its
			// content intact.
			// What ParseRendered takes beyond comments, Helm's render
			// takes too (unless Helm's YAML library, sigs.k8s.io/yaml,
			// cannot read the text: the two libraries part ways on
			// control bytes and the like, which this does not hold), and
			// sorts by the same kind. (A document that Helm would split
			// again, "---:" after a "---" line, is no document of a file;
			// a template renders UTF-8, not UTF-16.)
			rendered, err := ParseRendered("c/templates/x.yaml", d)
			_, jsonErr := sigsyaml.YAMLToJSON([]byte(d))
			if again := helmSplit(d); err == nil && jsonErr == nil && !onlyComments(d) && utf8.ValidString(d) && len(again) == 1 && again[0] == d {
				_, helmManifests, helmErr := releaseutil.SortManifests(map[string]string{"c/templates/x.yaml": d}, nil, releaseutil.InstallOrder)
				if helmErr != nil {
					t.Fatalf("ParseRendered(%q) took it; Helm's render refuses it: %v", d, helmErr)
				}
				if len(helmManifests) == 1 && helmManifests[0].Head.Kind != rendered.ID.Kind {
					t.Fatalf("ParseRendered(%q) reads kind %q, Helm's render %q", d, rendered.ID.Kind, helmManifests[0].Head.Kind)
				}
			}
			doc, err := Parse("x", d)
			if err != nil {
				continue
			}
			if doc.Content != d {
				t.Fatalf("Parse(%q) changed the content to %q", d, doc.Content)
			}
			complete := doc.ID.Kind != "" && doc.ID.Name != "" && doc.ID.APIVersion != ""
			if !complete && !(doc.Empty() && (onlyComments(d) || helmReadsNull(d))) {
				t.Fatalf("Parse(%q) accepted a document that is neither a resource nor comments only: %+v", d, doc.ID)
			}
		}
	})
}

func TestParse(t *testing.T) {
	tests := []struct {
		name, in string
		want     ID
		hook     string
		err      string
	}{
		{"namespaced", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: ns", ID{"v1", "ConfigMap", "ns", "a"}, "", ""},
		{"hook", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: t\n  annotations:\n    helm.sh/hook: test", ID{"v1", "Pod", "", "t"}, "test", ""},
		{"comments first", "# Source: x\napiVersion: v1\nkind: Secret\nmetadata:\n  name: s", ID{"v1", "Secret", "", "s"}, "", ""},
		{"no kind", "apiVersion: v1\nmetadata:\n  name: a", ID{}, "", "not a Kubernetes resource: error validating data: kind not set"},
		{"no name", "apiVersion: v1\nkind: ConfigMap", ID{}, "", "not a Kubernetes resource: v1 ConfigMap: resource name may not be empty"},
		{"null", "~", ID{}, "", ""},
		{"not YAML", "kind: [", ID{}, "", "invalid YAML"},
		{"only comments", "# switched off\n  # indented\n\n#", ID{}, "", ""},
		{"empty", "", ID{}, "", ""},
		{"comment and a mapping", "# a\nb: c", ID{}, "", "error validating data: [apiVersion not set, kind not set]"},
		{"a sequence", "- a\n- b", ID{}, "", "invalid YAML"},
		{"a scalar", "just text", ID{}, "", "invalid YAML"},
		{"document start marker", "apiVersion: v1\nkind: A\nmetadata:\n  name: a\n--- {b: c}", ID{}, "", "more than one document"},
		{"marker-like text", "apiVersion: v1\nkind: A\nmetadata:\n  name: a\n  annotations:\n    x: |\n      ---\n      ...", ID{"v1", "A", "", "a"}, "", ""},
		{"two documents merged", "apiVersion: v1\nkind: A\nmetadata:\n  name: a\napiVersion: v1\nkind: B\nmetadata:\n  name: b", ID{}, "", "invalid YAML"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Parse("src", tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.ID != tt.want || d.Hook != tt.hook || d.Source != "src" || d.Content != tt.in {
				t.Errorf("Parse = %+v, want ID %+v hook %q", d, tt.want, tt.hook)
			}
		})
	}
	if _, err := Parse("src", "apiVersion: v1\nkind: A"); !errors.Is(err, ErrNotResource) {
		t.Errorf("a document without a name should be ErrNotResource, got %v", err)
	}
}

func TestIsTestHook(t *testing.T) {
	for hook, want := range map[string]bool{"test": true, "pre-install,test": true, "test-success": true, "pre-install": false, "": false, "post-test": false} {
		if got := (Document{Hook: hook}).IsTestHook(); got != want {
			t.Errorf("IsTestHook(%q) = %v, want %v", hook, got, want)
		}
	}
}

func BenchmarkParse(b *testing.B) {
	doc := `apiVersion: apps/v1
kind: Deployment
metadata:
  name: bench-w0001
  labels:
    app.kubernetes.io/name: w0001
    app.kubernetes.io/instance: bench
spec:
  replicas: 1
  selector:
    matchLabels:
      app.kubernetes.io/name: w0001
  template:
    metadata:
      labels:
        app.kubernetes.io/name: w0001
    spec:
      containers:
        - name: app
          image: "registry.example/app:1.0"
          ports:
            - containerPort: 8080
          env:
            - name: LEVEL
              value: "info"`
	for b.Loop() {
		if _, err := Parse("bench", doc); err != nil {
			b.Fatal(err)
		}
	}
}

func TestDigest(t *testing.T) {
	docs := []Document{{Content: "a: 1"}, {Content: "b: 2\nc: 3"}}
	sum := sha256.Sum256([]byte(Join(docs)))
	if got, want := Digest(docs), "sha256:"+hex.EncodeToString(sum[:]); got != want {
		t.Errorf("Digest = %s, the hash of Join is %s", got, want)
	}
	if Join(docs) != "---\na: 1\n---\nb: 2\nc: 3\n" {
		t.Errorf("Join = %q", Join(docs))
	}
}

// TestIDString: the form errors name a resource by.
func TestIDString(t *testing.T) {
	for id, want := range map[ID]string{
		{"apps/v1", "Deployment", "shop", "web"}: "apps/v1 Deployment shop/web",
		{"v1", "Namespace", "", "shop"}:          "v1 Namespace shop",
	} {
		if got := id.String(); got != want {
			t.Errorf("%#v.String() = %q, want %q", id, got, want)
		}
	}
}

func TestInNamespace(t *testing.T) {
	unset := ID{APIVersion: "v1", Kind: "ConfigMap", Name: "c"}
	set := ID{APIVersion: "v1", Kind: "ConfigMap", Namespace: "other", Name: "c"}
	if got := unset.InNamespace("shop"); got.Namespace != "shop" || got.Name != "c" {
		t.Errorf("a resource without a namespace is created in the release's: got %v", got)
	}
	if got := set.InNamespace("shop"); got != set {
		t.Errorf("a resource that names its namespace keeps it: got %v", got)
	}
}

// TestKnownParsesAsParse: a document parsed from a known one of the same
// content is what Parse gives, source included; others are parsed.
func TestKnownParsesAsParse(t *testing.T) {
	known := []string{
		"apiVersion: v1\nkind: Service\nmetadata:\n  name: a",
		"apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\n  annotations:\n    helm.sh/hook: post-install",
		"# only a comment",
	}
	var docs []Document
	for _, c := range known {
		d, err := Parse("chart/templates/a.yaml", c)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, d)
	}
	k := NewKnown(docs)
	for _, c := range append(known, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: new", "kind: [", "kind: Service\nmetadata:\n  name: a") {
		want, wantErr := Parse("chart/templates/b.yaml", c)
		got, err := k.Parse("chart/templates/b.yaml", c)
		if (err != nil) != (wantErr != nil) || !cmp.Equal(got, want) {
			t.Errorf("Known.Parse(%q) = %+v, %v; Parse gives %+v, %v", c, got, err, want, wantErr)
		}
	}
}
