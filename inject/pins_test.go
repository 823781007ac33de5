package inject

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPins(t *testing.T) {
	lib, err := LoadLibrary(exampleLibrary)
	if err != nil {
		t.Fatal(err)
	}
	ref := func(r string) *TemplateRef {
		name, constraint, _ := strings.Cut(r, "@")
		return &TemplateRef{Library: lib, Ref: r, Injector: name, Constraint: constraint, Params: map[string]any{"destination": "logs:24224"}}
	}
	v100, v110 := lib.Get("log-shipper", "1.0.0"), lib.Get("log-shipper", "1.1.0")
	old := Pins{"log-shipper": {Constraint: "^1", Version: "1.0.0", Digest: v100.Digest}}

	tests := []struct {
		name   string
		refs   []*TemplateRef
		update bool
		want   string // log-shipper's pinned version
	}{
		{"a pin that satisfies the constraint is kept", []*TemplateRef{ref("log-shipper@^1")}, false, "1.0.0"},
		{"--update moves it to the newest allowed", []*TemplateRef{ref("log-shipper@^1")}, true, "1.1.0"},
		{"--update without names moves every pin within its constraint", nil, true, "1.1.0"},
		{"a constraint the pin no longer satisfies chooses again", []*TemplateRef{ref("log-shipper@>=1.1")}, false, "1.1.0"},
		{"an exact version", []*TemplateRef{ref("log-shipper@1.0.0")}, true, "1.0.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := old.Pin(lib, tt.refs, tt.update)
			if err != nil {
				t.Fatal(err)
			}
			if got["log-shipper"].Version != tt.want {
				t.Errorf("pinned %s, want %s", got["log-shipper"].Version, tt.want)
			}
			if old["log-shipper"].Version != "1.0.0" {
				t.Error("Pin changed the pins it was called on")
			}
		})
	}

	// A pin whose definition changed since it was pinned is not kept: the
	// version is chosen again, with the digest the library has now.
	stale := Pins{"log-shipper": {Constraint: "^1", Version: "1.0.0", Digest: "sha256:changed-since"}}
	got, err := stale.Pin(lib, []*TemplateRef{ref("log-shipper@^1")}, false)
	if err != nil {
		t.Fatal(err)
	}
	if p := got["log-shipper"]; p.Version != "1.1.0" || p.Digest != v110.Digest {
		t.Errorf("a pin whose definition changed became %+v, want 1.1.0 with its digest", p)
	}

	// The pinned version is injected, whatever the library has since.
	choice := Choice{Pins: old}
	d := &Declared{Specs: []Spec{ref("log-shipper@^1")}}
	p, err := d.Resolve(choice)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Injectors[0].(*TemplateInjector).Def.Version; got != "1.0.0" {
		t.Errorf("resolved %s under a pin to 1.0.0", got)
	}

	for name, tc := range map[string]struct {
		pins Pins
		ref  string
		want string
	}{
		"no pin":             {Pins{}, "log-shipper@^1", `injector log-shipper@^1 has no pin in helm-inject-pins.yaml: run "helm-inject argocd pin --with log-shipper@^1 DIR"`},
		"not in the library": {Pins{"log-shipper": {Version: "0.9.0", Digest: "sha256:x"}}, "log-shipper@*", "pinned to 0.9.0, which is not in the library"},
		"changed since":      {Pins{"log-shipper": {Version: "1.1.0", Digest: v100.Digest}}, "log-shipper@^1", "log-shipper@1.1.0 in " + v110.File + " is not the one pinned"},
		"outside constraint": {old, "log-shipper@>=1.1", "pinned to 1.0.0, outside its constraint"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := (&Declared{Specs: []Spec{ref(tc.ref)}}).Resolve(Choice{Pins: tc.pins})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestPinsFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), PinsFileName)
	pins := Pins{"oauth2-proxy": {Constraint: "~1.0", Version: "1.0.0", Digest: "sha256:b"}, "log-shipper": {Version: "1.1.0", Digest: "sha256:a"}}
	b, err := pins.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Index(string(b), "log-shipper") > strings.Index(string(b), "oauth2-proxy") {
		t.Errorf("pins are not sorted by name:\n%s", b)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadPins(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(pins, got); diff != "" {
		t.Errorf("read back (-wrote +read)\n%s", diff)
	}
	again, _ := got.Encode()
	if string(again) != string(b) {
		t.Error("the same pins encode to other bytes")
	}
	for content, want := range map[string]string{
		"injectors:\n  log-shipper: {version: 1.0.0}\n": "injector log-shipper: a pin needs a version and a digest",
		"injectors: {}\nextra: 1\n":                     "field extra not found",
	} {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadPins(path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("reading %q: %v, want %q", content, err, want)
		}
	}
}

func TestParseTemplateRef(t *testing.T) {
	for ref, want := range map[string][2]string{"log-shipper": {"log-shipper", ""}, "log-shipper@^1": {"log-shipper", "^1"}, "a@>=1 <2": {"a", ">=1 <2"}} {
		r, err := ParseTemplateRef(nil, ref, nil)
		if err != nil || r.Injector != want[0] || r.Constraint != want[1] || r.Ref != ref {
			t.Errorf("ParseTemplateRef(%q) = %+v, %v; want %v", ref, r, err, want)
		}
	}
	if _, err := ParseTemplateRef(nil, "@^1", nil); err == nil || err.Error() != `"@^1": want NAME or NAME@VERSION-CONSTRAINT` {
		t.Errorf("no name: %v", err)
	}
}

// TestRemoved: a locked version whose file is gone is listed; one that is
// there is not.
func TestRemoved(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(exampleLibrary)); err != nil {
		t.Fatal(err)
	}
	lib, err := LoadLibrary(dir)
	if err != nil {
		t.Fatal(err)
	}
	if gone := lib.Removed(); len(gone) != 0 {
		t.Fatalf("Removed() = %v on a whole library", gone)
	}
	locked, err := lib.Lock()
	if err != nil || len(locked) != 0 {
		t.Fatalf("the example library is not fully locked: %v %v", locked, err)
	}
	var want []string
	for _, name := range lib.Names()[:2] {
		d := lib.Newest(name)
		if err := os.Remove(d.File); err != nil {
			t.Fatal(err)
		}
		want = append(want, d.Ref())
	}
	lib, err = LoadLibrary(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := lib.Removed(); !slices.Equal(got, want) {
		t.Errorf("Removed() = %v, want %v", got, want)
	}
}
