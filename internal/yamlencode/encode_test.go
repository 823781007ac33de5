package yamlencode

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// cases are documents with whether the fast path must write them itself.
var cases = []struct {
	name string
	doc  string
	fast bool
}{
	{"deployment", `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    app.kubernetes.io/name: web
    "helm.sh/chart": "web-1.0.0"
  annotations: {}
spec:
  replicas: 3
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: app
        image: "registry.example/web:1.0"
        args:
        - --port
        - "8080"
        - '--level=info'
        ports:
        - containerPort: 8080
          protocol: TCP
        env:
        - name: A
          value: "true"
        - name: B
          value: '1'
        - name: C
          value: ""
        - name: D
        resources: {}
      volumes: []
`, true},
	{"nested sequences and empty items", "a:\n- - x\n  - - y\n- []\n- {}\n- \n- ~\n- null\n- - k: v\n    l: w\n", true},
	{"scalars that need quotes", `a: 'it''s'
b: "say \"hi\" \\ there"
c: ': x'
d: 'x: y'
e: 'x #y'
f: 'x#y'
g: '- x'
h: '-x'
i: '? x'
j: ' lead'
k: 'trail '
l: '---x'
m: '...'
n: '@x'
o: '%x'
p: '*x'
q: '&x'
r: '!x'
s: '|x'
t: '>x'
u: '[x'
v: 'x]'
w: '{x'
x: 'x,y'
y: '` + "`" + `x'
z: '#x'
`, true},
	{"scalars of other types", `int: 10
neg: -3
hex: 0x1F
oct: 0o17
bin: 0b101
under: 1_000
float: 1.5
exp: 1e3
dot: .5
inf: .inf
nan: .NaN
bool: true
Null: Null
tilde: ~
empty:
date: 2024-01-02
time: 2001-12-14t21:59:43.10-05:00
big: 123456789012345678901234567890
quoted: "10"
squoted: 'true'
version: 1.20
notdate: 2024-13-45
ver: 1.2.3
plus: +1
y: y
no: no
on: on
merge: "<<"
`, true},
	{"keys", "\"1\": a\n'': b\n\"true\": c\n? \"x: y\"\n: d\nnull: e\n\"\": f\n", true},
	{"long key", "? " + strings.Repeat("k", 129) + "\n: v\n", false},
	{"flow collections", `args: ["-i", tail, 'x', "", a:b, a b, -x, "-", ":x", "x,y", "[x", "x?y", "{", "#x", x#y, "x #y", 1, true, ~, null, "1", "- x", "x: y"]
resources:
  requests: {cpu: 10m, memory: 32Mi, "": x, '1': y, "a:b": c}
  nested: {a: [b, {c: d, e: []}, {}], f: {g: h}}
list:
- [a, [b, c], {d: e}]
- {k: v}
empty: {}
`, true},
	{"comment", "a: 1 # one\nb: 2\n", false},
	{"head comment", "# top\na: 1\n", false},
	{"anchor", "a: &x 1\nb: *x\n", false},
	{"explicit tag", "a: !!str 1\nb: !custom x\n", false},
	{"literal", "a: |\n  line one\n  line two\n", false},
	{"folded", "a: >\n  folded\n", false},
	{"multi-line quoted", "a: \"one\\ntwo\"\n", false},
	{"tab", "a: \"x\\ty\"\n", false},
	{"unicode", "a: café\n", false},
	{"top-level sequence", "- a\n- b\n", false},
	{"top-level scalar", "a\n", false},
}

func TestEncodeMatchesYAMLv3(t *testing.T) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var doc yaml.Node
			if err := yaml.Unmarshal([]byte(tc.doc), &doc); err != nil {
				t.Fatal(err)
			}
			check(t, &doc, tc.fast)
			// Nodes an injector builds carry a !!str tag and no style,
			// whatever their value looks like: yaml.v3 quotes those that
			// would read back as another type.
			retag(&doc, false)
			check(t, &doc, tc.fast)
			// And quoted strings as code sets them, without a style:
			// yaml.v3 decides how to quote them.
			retag(&doc, true)
			check(t, &doc, tc.fast)
		})
	}
}

func check(t *testing.T, doc *yaml.Node, wantFast bool) {
	t.Helper()
	want, err := Slow(doc)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := Fast(doc)
	if ok != wantFast {
		t.Fatalf("fast path taken: %v, want %v, for\n%s", ok, wantFast, want)
	}
	if ok && string(got) != string(want) {
		t.Fatalf("fast path wrote\n%s\nyaml.v3 writes\n%s", got, want)
	}
	enc, err := Encode(doc)
	if err != nil || string(enc) != string(want) {
		t.Fatalf("Encode = %q, %v; want %q", enc, err, want)
	}
}

// retag gives every unquoted scalar (every quoted one too, with
// unquote) the tag and style of a string that code set.
func retag(n *yaml.Node, unquote bool) {
	if unquote && n.Kind == yaml.ScalarNode {
		n.Style &^= yaml.SingleQuotedStyle | yaml.DoubleQuotedStyle
	}
	if n.Kind == yaml.ScalarNode && n.Style == 0 {
		n.Tag = "!!str"
	}
	for _, c := range n.Content {
		retag(c, unquote)
	}
}

func FuzzEncode(f *testing.F) {
	for _, tc := range cases {
		f.Add(tc.doc, false, false)
		f.Add(tc.doc, true, false)
		f.Add(tc.doc, true, true)
	}
	f.Fuzz(func(t *testing.T, doc string, asStrings, unquote bool) {
		var n yaml.Node
		if yaml.Unmarshal([]byte(doc), &n) != nil {
			return
		}
		if asStrings {
			retag(&n, unquote)
		}
		want, err := Slow(&n)
		if err != nil {
			return
		}
		if got, ok := Fast(&n); ok && string(got) != string(want) {
			t.Fatalf("fast path wrote\n%s\nyaml.v3 writes\n%s", got, want)
		}
	})
}

func TestResolvePlain(t *testing.T) {
	// yaml.v3 is the reference: the tag it reads a plain scalar as.
	for _, v := range []string{"", "a", "1", "-1", "+1", "0x10", "0o7", "0b1", "-0b1", "-0o7", "1_0", "1.5", ".5", "1e5", "1e", "1.2.3",
		"true", "True", "tRUE", "yes", "no", "on", "~", "null", "NULL", ".inf", "-.Inf", ".nan", "2024-01-02", "2024-1-2",
		"2024-01-02T03:04:05Z", "2024-01-02 03:04:05", "2024-13-01", "99999999999999999999", "-99999999999999999999",
		"18446744073709551615", "0b", "0x", "+", ".", "1e999", "0777", "08", "+.inf", "-0", "0.", "-.5e-3"} {
		// Not "<<": the parser reads it as a merge key, yaml.v3's encoder
		// as a string; resolvePlain is the encoder's view.
		var n yaml.Node
		if err := yaml.Unmarshal([]byte("v: "+v), &n); err != nil {
			t.Fatalf("%q: %v", v, err)
		}
		want := n.Content[0].Content[1].Tag
		if got := resolvePlain(v); got != want {
			t.Errorf("resolvePlain(%q) = %s, yaml.v3 reads %s", v, got, want)
		}
	}
}

func BenchmarkEncode(b *testing.B) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(cases[0].doc), &doc); err != nil {
		b.Fatal(err)
	}
	b.Run("fast", func(b *testing.B) {
		for b.Loop() {
			if _, ok := Fast(&doc); !ok {
				b.Fatal("not fast")
			}
		}
	})
	b.Run("yaml.v3", func(b *testing.B) {
		for b.Loop() {
			if _, err := Slow(&doc); err != nil {
				b.Fatal(err)
			}
		}
	})
}
