package manifest

import (
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"
)

// renderedDeployment is a Deployment as charts render them: nested block
// mappings, an indented and an indentless sequence, items that are
// mappings, quoted, plain, numeric, boolean and null scalars, empty
// collections, an empty value, blank lines and trailing spaces.
const renderedDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: "web"
  namespace: shop
  labels:
    app.kubernetes.io/name: web
    helm.sh/chart: web-1.2.3
  annotations: {}
spec:
  replicas: 3
  revisionHistoryLimit: 0
  selector:
    matchLabels:
      app.kubernetes.io/name: web

  template:
    metadata:
      labels:
        app.kubernetes.io/name: web
    spec:
      serviceAccountName: web   
      securityContext: {}
      containers:
        - name: app
          image: "registry.example/web:1.2.3"
          imagePullPolicy: IfNotPresent
          "quoted key": 'it''s: fine'
          'single key': x
          args:
          - --port=8080
          - -v
          - 'it''s'
          ports:
            - name: http
              containerPort: 8080
              protocol: TCP
          env:
            - name: DEBUG
              value: "false"
            - name: RATIO
              value: 0.5
            - name: EMPTY
              value:
            - name: TILDE
              value: ~
          livenessProbe:
            httpGet:
              path: /healthz
              port: http
          resources: {}
      volumes: []
      nodeSelector:
        kubernetes.io/os: linux
      tolerations:
      - key: node-role
        operator: Exists
        effect: NoSchedule`

// renderedService is a small Service, rendered indented by two spaces.
const renderedService = `  apiVersion: v1
  kind: Service
  metadata:
    name: web
  spec:
    type: ClusterIP
    ports:
      - port: 80
        targetPort: http
    selector:
      app.kubernetes.io/name: web
      yes: on
      <<: merged
      8080: port
      a key with spaces: x:y
      hooks: before-hook-creation,hook-succeeded[0]{a}
`

// mustMatchYAMLv3 fails when parseBlock takes text that yaml.v3 would
// not, or reads it into another tree than yaml.v3's. It reports whether
// parseBlock took the text.
func mustMatchYAMLv3(t *testing.T, text string) bool {
	t.Helper()
	got, ok := parseBlock(text)
	if !ok {
		return false
	}
	want := &yaml.Node{}
	if err := yaml.Unmarshal([]byte(text), want); err != nil {
		t.Fatalf("parseBlock took what yaml.v3 refuses (%v):\n%s", err, text)
	}
	// reflect.DeepEqual first: cmp.Diff on every tree would take minutes.
	if !reflect.DeepEqual(want, got) {
		t.Fatalf("parseBlock read another tree than yaml.v3 (-yaml.v3 +parseBlock):\n%s\nof:\n%s", cmp.Diff(want, got), text)
	}
	return true
}

// TestParseBlockTakesRenderedManifests: what charts render is read by
// parseBlock, node for node as yaml.v3 reads it.
func TestParseBlockTakesRenderedManifests(t *testing.T) {
	for name, text := range map[string]string{
		"deployment":                           renderedDeployment,
		"indented service":                     renderedService,
		"trailing newline":                     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n",
		"empty value at the end":               "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:",
		"indentless sequence at end":           "a:\n- 1\n- 2",
		"quoted values":                        "a: \"x: y, {z}\"\nb: 'p: q, r'\nc: \"\"\nd: ''",
		"quoted keys":                          "\"helm.sh/hook\": post-install\n'it''s': \"x\"",
		"flow indicators after the first byte": "a: x,y\nb: x[0]\nc[1]: y{z}",
		"quoted items":                         "a:\n- \"x\"\n- 'y'",
		"a key of 1000 bytes":                  strings.Repeat("k", 1000) + ": v",
		"more nodes than counted":              "a:\n  b:\n    c:\n      d:",
		"resolved scalars":                     "a: 1\nb: -2\nc: 0x1F\nd: 1e3\ne: .inf\nf: true\ng: False\nh: null\ni: 2001-12-14\nj: y\nk: +1",
	} {
		t.Run(name, func(t *testing.T) {
			if !mustMatchYAMLv3(t, text) {
				t.Errorf("parseBlock declined a document in its subset:\n%s", text)
			}
		})
	}
}

// TestParseBlockDeclines: what lies outside the subset goes to yaml.v3,
// which also reports every error.
func TestParseBlockDeclines(t *testing.T) {
	for name, text := range map[string]string{
		"comment":                "a: 1 # one",
		"comment line":           "# head\na: 1",
		"tab":                    "a:\t1",
		"anchor and alias":       "a: &x 1\nb: *x",
		"tag":                    "a: !!str 1",
		"literal block":          "a: |\n  x",
		"folded block":           "a: >\n  x",
		"multi-line plain":       "a: x\n  y",
		"multi-line quoted":      "a: \"x\n  y\"",
		"escape":                 "a: \"x\\ny\"",
		"flow mapping":           "a: {b: 1}",
		"flow sequence":          "a: [1, 2]",
		"document marker":        "a: 1\n---\nb: 2",
		"marker as a key":        "--- 0:",
		"end marker as a key":    "a: 1\n... b: 2",
		"tab indentation":        "a:\n\tb: 1",
		"tab after a value":      "a: 1\t",
		"DEL":                    "a: x\x7f",
		"unit separator":         "a: x\x1f",
		"a key of 1001 bytes":    strings.Repeat("k", 1001) + ": v",
		"non-ASCII":              "a: é",
		"CR":                     "a: 1\r\nb: 2",
		"space after quoted key": "\"a\" : 1",
		"complex key":            "? a\n: 1",
		"sequence document":      "- a\n- b",
		"scalar document":        "just text",
		"mapping in a value":     "a: b: c",
		"entry in a value":       "a: - b",
		"item on its own line":   "a:\n  -\n    b: 1",
		"nested entry":           "a:\n  - - b",
		"dedent into nothing":    "  a: 1\nb: 2",
		"deeper key":             "a: 1\n  b: 2",
		"entry after a key":      "a: 1\n- b",
		"lone dash":              "a: -",
		"space before colon":     "a : 1",
		"unclosed quote":         "a: \"x",
		"stray single quote":     "a: 'x'y'",
		"empty":                  "",
	} {
		t.Run(name, func(t *testing.T) {
			if _, ok := parseBlock(text); ok {
				t.Errorf("parseBlock took a document outside its subset:\n%s", text)
			}
		})
	}
}

// TestParseBlockMatchesYAMLv3 edits rendered manifests one byte at a time
// (deleted, or another inserted: an indicator, a quote, a space, a line
// break) and a line at a time (indented or dedented by one, repeated):
// whatever of that parseBlock takes, yaml.v3 must read the same way.
func TestParseBlockMatchesYAMLv3(t *testing.T) {
	inserts := []string{" ", "\n", ":", "-", "- ", "'", "\"", "x", "{}", "[]", "0", "~", ": ", ",", "[", "}", "\"k\": ", "'k': ", "\t", "#", "---", "..."}
	for name, text := range map[string]string{"deployment": renderedDeployment, "service": renderedService} {
		t.Run(name, func(t *testing.T) {
			var variants []string
			for i := 0; i <= len(text); i++ {
				if i < len(text) {
					variants = append(variants, text[:i]+text[i+1:])
				}
				for _, s := range inserts {
					variants = append(variants, text[:i]+s+text[i:])
				}
			}
			lines := strings.Split(text, "\n")
			for i := range lines {
				for _, edit := range []func(string) string{
					func(l string) string { return " " + l },
					func(l string) string { return strings.TrimPrefix(l, " ") },
					func(l string) string { return l + "\n" + l },
				} {
					edited := append([]string(nil), lines...)
					edited[i] = edit(edited[i])
					variants = append(variants, strings.Join(edited, "\n"))
				}
			}
			taken := 0
			for _, v := range variants {
				if mustMatchYAMLv3(t, v) {
					taken++
				}
			}
			t.Logf("parseBlock took %d of %d edited documents", taken, len(variants))
			// The edits must reach the parser, not only its declines.
			if taken < len(variants)/3 {
				t.Errorf("parseBlock took %d of %d edited documents", taken, len(variants))
			}
		})
	}
}

// FuzzParseBlock: parseBlock never takes text yaml.v3 would read another
// way or refuse (go test -fuzz FuzzParseBlock ./manifest).
func FuzzParseBlock(f *testing.F) {
	f.Add(renderedDeployment)
	f.Add(renderedService)
	f.Add("a:\n- b: 1\n  c:\n  - 2\nd: {}")
	f.Fuzz(func(t *testing.T, text string) {
		mustMatchYAMLv3(t, text)
	})
}

// TestParseBlockDepth: parseBlock reads collections nested maxDepth deep
// and leaves a deeper document to yaml.v3, which refuses one nested more
// than 10,000 deep: a rendered document parseBlock takes is never one
// yaml.v3 would refuse for its depth.
func TestParseBlockDepth(t *testing.T) {
	nested := func(depth int) string {
		var b strings.Builder
		for d := 0; d < depth; d++ {
			b.WriteString(strings.Repeat(" ", d) + "k:\n")
		}
		b.WriteString(strings.Repeat(" ", depth) + "v: 1")
		return b.String()
	}
	// depth keys nest depth+1 mappings, the top one included.
	if !mustMatchYAMLv3(t, nested(maxDepth-1)) {
		t.Errorf("parseBlock declined a document nested %d deep", maxDepth)
	}
	if _, ok := parseBlock(nested(maxDepth)); ok {
		t.Errorf("parseBlock took a document nested %d deep", maxDepth+1)
	}
	if _, ok := parseBlock(nested(10001)); ok {
		t.Error("parseBlock took a document yaml.v3 refuses for its depth")
	}
}

// TestParseBlockContentsApart: the Content slices parseBlock cuts from one
// array stay apart: a built-in injector appending a container to one
// sequence, or a key to one mapping, changes no other node's children.
func TestParseBlockContentsApart(t *testing.T) {
	root, ok := parseBlock("a:\n  - x\nb:\n  c: 1\nd: 2")
	if !ok {
		t.Fatal("parseBlock declined")
	}
	top := root.Content[0]
	seq, inner := top.Content[1], top.Content[3]
	seq.Content = append(seq.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "added"})
	inner.Content = append(inner.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "k"}, &yaml.Node{Kind: yaml.ScalarNode, Value: "v"})
	want := "a:\n  - x\n  - added\nb:\n  c: 1\n  k: v\nd: 2"
	if got := encode(t, root); got != want {
		t.Errorf("after the appends:\n%s\nwant:\n%s", got, want)
	}
}
