package inject

import (
	"slices"
	"strings"
	"testing"

	"github.com/helm-inject/helm-inject/internal/testfs"
)

// versionsLibrary writes a library holding injector "x" at each of
// versions (a definition that adds one annotation) and loads it.
func versionsLibrary(t *testing.T, versions ...string) *Library {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{}
	for _, v := range versions {
		files["x/"+v+".yaml"] = "name: x\nversion: " + v + "\nparameters:\n  - name: colour\n    default: blue\ntemplate: |\n  annotations: {x: \"" + v + "\"}\n"
	}
	testfs.Write(t, dir, files)
	lib, err := LoadLibrary(dir)
	if err != nil {
		t.Fatal(err)
	}
	return lib
}

// TestReconcileChoice: the version of a built-in injector a release gets,
// per reconcile strategy (docs/versioned-injectors.md "Reconcile
// strategies"). The release has x 1.0.0; the library now also has 1.1.0
// and 2.0.0. A user who gets the wrong one sees pods roll that were meant
// to stay (never, with-chart), or stay on a version that was meant to
// move (--update-injectors, a changed chart, a constraint that no longer
// allows the old version).
func TestReconcileChoice(t *testing.T) {
	lib := versionsLibrary(t, "1.0.0", "1.1.0", "2.0.0")
	has := func(v string) map[string]Record { return map[string]Record{"x": {Name: "x", Version: v}} }
	for _, tt := range []struct {
		name       string
		constraint string
		choice     Choice
		want       string // the version injected, or the error's text
		wantErr    bool
	}{
		{"always moves to the newest allowed", "^1", Choice{Strategy: ReconcileAlways, Recorded: has("1.0.0")}, "1.1.0", false},
		{"no strategy is always", "^1", Choice{Recorded: has("1.0.0")}, "1.1.0", false},
		{"never keeps the recorded version", "^1", Choice{Strategy: ReconcileNever, Recorded: has("1.0.0")}, "1.0.0", false},
		{"never: a new release gets the newest allowed", "^1", Choice{Strategy: ReconcileNever}, "1.1.0", false},
		{"never: a release of another injector gets the newest", "^1", Choice{Strategy: ReconcileNever, Recorded: map[string]Record{"y": {Name: "y", Version: "1.0.0"}}}, "1.1.0", false},
		{"never: --update-injectors moves", "^1", Choice{Strategy: ReconcileNever, Update: true, Recorded: has("1.0.0")}, "1.1.0", false},
		{"never: a constraint that excludes the recorded version moves", ">=1.1, <2", Choice{Strategy: ReconcileNever, Recorded: has("1.0.0")}, "1.1.0", false},
		{"never: no constraint keeps the recorded version", "", Choice{Strategy: ReconcileNever, Recorded: has("1.0.0")}, "1.0.0", false},
		{"with-chart keeps it while the chart is unchanged", "^1", Choice{Strategy: ReconcileWithChart, Recorded: has("1.0.0")}, "1.0.0", false},
		{"with-chart moves in the revision the chart changes", "^1", Choice{Strategy: ReconcileWithChart, ChartChanged: true, Recorded: has("1.0.0")}, "1.1.0", false},
		{"with-chart: --update-injectors moves", "^1", Choice{Strategy: ReconcileWithChart, Update: true, Recorded: has("1.0.0")}, "1.1.0", false},
		{"always: a changed chart changes nothing", "^1", Choice{Strategy: ReconcileAlways, ChartChanged: true, Recorded: has("1.0.0")}, "1.1.0", false},
		{"never: the recorded version gone from the library", "^1", Choice{Strategy: ReconcileNever, Recorded: has("0.9.0")}, "the release has x@0.9.0, which is not in the library", true},
		{"always: the recorded version gone does not matter", "^1", Choice{Strategy: ReconcileAlways, Recorded: has("0.9.0")}, "1.1.0", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ref := &TemplateRef{Library: lib, Ref: "x@" + tt.constraint, Injector: "x", Constraint: tt.constraint}
			p, err := (&Declared{Specs: []Spec{ref}}).Resolve(tt.choice)
			if tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("error %v, want %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Injectors[0].(*TemplateInjector).Def.Version; got != tt.want {
				t.Errorf("injected x %s, want %s", got, tt.want)
			}
		})
	}
}

// TestParseReconcileStrategy: the three strategies of --reconcile are
// accepted as written; anything else is refused naming them. A user whose
// strategy is refused cannot apply with it at all.
func TestParseReconcileStrategy(t *testing.T) {
	for _, s := range []string{"always", "never", "with-chart"} {
		got, err := ParseReconcileStrategy(s)
		if err != nil || string(got) != s {
			t.Errorf("ParseReconcileStrategy(%q) = %q, %v", s, got, err)
		}
	}
	for _, s := range []string{"", "Never", "withchart", "sometimes"} {
		if _, err := ParseReconcileStrategy(s); err == nil || !strings.Contains(err.Error(), "want always, never or with-chart") {
			t.Errorf("ParseReconcileStrategy(%q): %v, want it refused", s, err)
		}
	}
}

// TestVersionsInSemverOrder: versions are ordered as semver orders them,
// not as text: with 1.9.0 and 1.10.0 in the library the newest is 1.10.0,
// and it is what ^1 and no constraint inject. A user would otherwise get
// an older sidecar than the one released last.
func TestVersionsInSemverOrder(t *testing.T) {
	lib := versionsLibrary(t, "1.10.0", "1.2.0", "1.9.0", "10.0.0", "2.0.0")
	var order []string
	for _, d := range lib.Versions("x") {
		order = append(order, d.Version)
	}
	if want := []string{"1.2.0", "1.9.0", "1.10.0", "2.0.0", "10.0.0"}; !slices.Equal(order, want) {
		t.Errorf("versions %v, want %v", order, want)
	}
	if got := lib.Newest("x").Version; got != "10.0.0" {
		t.Errorf("newest %s, want 10.0.0", got)
	}
	for constraint, want := range map[string]string{"^1": "1.10.0", "": "10.0.0", "<2": "1.10.0", "~1.9": "1.9.0"} {
		d, err := lib.Resolve("x", constraint)
		if err != nil || d.Version != want {
			t.Errorf("Resolve(x, %q) = %v, %v; want %s", constraint, d, err, want)
		}
	}
}

// TestPinUpdateKeepsTheConstraint: `argocd pin --update DIR` without
// names chooses again for every pin within the constraint each pin
// recorded, never past it; a pin without a constraint moves to the
// newest. A user would otherwise see an application moved to a major
// version nobody asked for.
func TestPinUpdateKeepsTheConstraint(t *testing.T) {
	lib := versionsLibrary(t, "1.0.0", "1.0.1", "1.1.0", "2.0.0")
	for _, tt := range []struct{ constraint, want string }{
		{"~1.0", "1.0.1"},
		{"^1", "1.1.0"},
		{"1.0.0", "1.0.0"},
		{"", "2.0.0"},
	} {
		old := Pins{"x": {Constraint: tt.constraint, Version: "1.0.0", Digest: lib.Get("x", "1.0.0").Digest}}
		got, err := old.Pin(lib, nil, true)
		if err != nil {
			t.Fatal(err)
		}
		if p := got["x"]; p.Version != tt.want || p.Constraint != tt.constraint || p.Digest != lib.Get("x", tt.want).Digest {
			t.Errorf("constraint %q: pinned %+v, want %s with its digest and the constraint kept", tt.constraint, p, tt.want)
		}
	}
}

// TestTemplateDigest: the digest a revision records of a built-in
// injector covers the definition and the parameter values it ran with
// (defaults included): other values give another digest, and a value
// given at its default gives the same digest as leaving it out, since the
// bytes injected are the same. A user would otherwise see status and diff
// call two different injections the same, or the same one different.
func TestTemplateDigest(t *testing.T) {
	lib := versionsLibrary(t, "1.0.0", "1.1.0")
	digest := func(version string, params map[string]any) string {
		t.Helper()
		ti, err := NewTemplateInjector(lib.Get("x", version), params)
		if err != nil {
			t.Fatal(err)
		}
		return ti.Digest()
	}
	base := digest("1.0.0", nil)
	if !strings.HasPrefix(base, "sha256:") || len(base) != len("sha256:")+64 {
		t.Fatalf("digest %q is not sha256:HEX", base)
	}
	for _, tt := range []struct {
		name    string
		version string
		params  map[string]any
		same    bool
	}{
		{"the same definition and values", "1.0.0", nil, true},
		{"a value given at its default", "1.0.0", map[string]any{"colour": "blue"}, true},
		{"another value", "1.0.0", map[string]any{"colour": "red"}, false},
		{"another version", "1.1.0", nil, false},
	} {
		if got := digest(tt.version, tt.params); (got == base) != tt.same {
			t.Errorf("%s: digest %s, base %s; want same=%v", tt.name, got, base, tt.same)
		}
	}
}
