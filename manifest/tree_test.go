package manifest

import (
	"reflect"
	"strings"
	"sync"
	"testing"

	"gopkg.in/yaml.v3"
)

const deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1"

func encode(t *testing.T, n *yaml.Node) string {
	t.Helper()
	var b strings.Builder
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(b.String())
}

// TestTreeHandedOutOnce: the parse ParseTree keeps goes to the first Tree
// of the document or of any copy; the caller may change it, and every
// later Tree is a new parse of Content, untouched by that change.
func TestTreeHandedOutOnce(t *testing.T) {
	d, err := ParseTree("t.yaml", deployment)
	if err != nil {
		t.Fatal(err)
	}
	if d.tree == nil || d.tree.root == nil {
		t.Fatal("ParseTree kept no parse")
	}
	copyOfD := d
	first, err := d.Tree()
	if err != nil {
		t.Fatal(err)
	}
	if d.tree.root != nil {
		t.Error("the kept parse is still kept after it was handed out")
	}
	first.Content[0].Content[1].Value = "changed/v1" // apiVersion
	for _, doc := range []Document{d, copyOfD} {
		again, err := doc.Tree()
		if err != nil {
			t.Fatal(err)
		}
		if got := encode(t, again); got != deployment {
			t.Errorf("a later Tree:\n%s\nwant the parse of Content:\n%s", got, deployment)
		}
	}
}

// TestTreeOfChangedContent: a document whose Content changed after
// ParseTree gets the parse of its new Content, not the kept one.
func TestTreeOfChangedContent(t *testing.T) {
	d, err := ParseTree("t.yaml", deployment)
	if err != nil {
		t.Fatal(err)
	}
	d.Content = strings.Replace(deployment, "replicas: 1", "replicas: 3", 1)
	tree, err := d.Tree()
	if err != nil {
		t.Fatal(err)
	}
	if got := encode(t, tree); got != d.Content {
		t.Errorf("Tree of changed content:\n%s\nwant:\n%s", got, d.Content)
	}
}

// TestTreeOnce: documents sharing one kept parse, asked at once, hand it
// to one caller only.
func TestTreeOnce(t *testing.T) {
	d, err := ParseTree("t.yaml", deployment)
	if err != nil {
		t.Fatal(err)
	}
	root := d.tree.root
	var mu sync.Mutex
	got := 0
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			n, _ := d.Tree()
			mu.Lock()
			defer mu.Unlock()
			if n == root {
				got++
			}
		})
	}
	wg.Wait()
	if got != 1 {
		t.Errorf("the kept parse was handed out %d times, want once", got)
	}
}

// TestParseKeepsNoTree: Parse, and WithoutTree, keep no parse (its memory
// is freed); the identity is ParseTree's.
func TestParseKeepsNoTree(t *testing.T) {
	d, err := Parse("t.yaml", deployment)
	if err != nil {
		t.Fatal(err)
	}
	kept, _ := ParseTree("t.yaml", deployment)
	if d.tree != nil || kept.WithoutTree().tree != nil {
		t.Error("a parse kept without ParseTree")
	}
	if !d.Equal(kept) || d.ID != (ID{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}) {
		t.Errorf("Parse %+v, ParseTree %+v", d, kept)
	}
	if _, err := (Document{Content: "a: [b"}).Tree(); err == nil || !strings.HasPrefix(err.Error(), "yaml: ") {
		t.Errorf("Tree of invalid YAML: %v, want yaml.v3's error", err)
	}
}

// TestDocumentEqual: every field but the kept parse is part of a
// document's value.
func TestDocumentEqual(t *testing.T) {
	base, err := ParseTree("t.yaml", deployment)
	if err != nil {
		t.Fatal(err)
	}
	if !base.Equal(base.WithoutTree()) {
		t.Error("a document without its kept parse is not equal to itself")
	}
	changes := map[string]func(*Document){
		"Source":      func(d *Document) { d.Source = "u.yaml" },
		"Content":     func(d *Document) { d.Content += "\n" },
		"Trailer":     func(d *Document) { d.Trailer = "\n" },
		"ID":          func(d *Document) { d.ID.Namespace = "shop" },
		"Hook":        func(d *Document) { d.Hook = "test" },
		"ID's name":   func(d *Document) { d.ID.Name = "other" },
		"NotResource": func(d *Document) { d.NotResource = "resource name may not be empty" },
	}
	for i := range reflect.TypeFor[Document]().NumField() {
		if f := reflect.TypeFor[Document]().Field(i); f.IsExported() && changes[f.Name] == nil {
			t.Errorf("no case changes Document.%s: is it in Equal?", f.Name)
		}
	}
	for name, change := range changes {
		other := base
		change(&other)
		if base.Equal(other) {
			t.Errorf("documents that differ in %s are Equal", name)
		}
	}
}
