package chartify

import (
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	commonutil "helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"

	"helm.sh/helm/v4/pkg/engine"
)

// renderWithHelm renders text as a template of a chart with Helm's engine.
func renderWithHelm(t *testing.T, text string) string {
	t.Helper()
	ch := &chart.Chart{
		Metadata:  &chart.Metadata{APIVersion: "v2", Name: "esc", Version: "0.1.0"},
		Templates: []*common.File{{Name: "templates/t.yaml", Data: []byte(text)}},
	}
	vals, err := commonutil.ToRenderValues(ch, map[string]any{"literal": "EVALUATED"}, common.ReleaseOptions{Name: "r"}, common.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	out, err := engine.Render(ch, vals)
	if err != nil {
		t.Fatalf("rendering %q: %v", text, err)
	}
	return out["esc/templates/t.yaml"]
}

func TestEscapeRoundTripsThroughHelm(t *testing.T) {
	for _, s := range []string{
		"plain: text",
		"a: {{ .Values.literal }}",
		"a: '{{- .x -}}'",
		"{{{{",
		"}}}}",
		"{{{ }}}",
		"{ } { } {{",
		"}}",
		"{",
		"data: \"{{\\\"}}\\\"\"",
		"a: {{ \"{{\" }}",
		"key: \"}}{{\"",
		"unicode: ✓ {{ é }}",
		"",
	} {
		if got := renderWithHelm(t, Escape(s)); got != s {
			t.Errorf("Escape(%q) renders as %q", s, got)
		}
	}
}

func FuzzEscape(f *testing.F) {
	for _, s := range []string{"{{", "}}", "{{.}}", "a{b}c", "{{{", "}}}", "x: {{ template \"y\" }}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got := renderWithHelm(t, Escape(s)); got != s {
			t.Errorf("Escape(%q) renders as %q", s, got)
		}
	})
}
