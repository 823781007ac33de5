package cli

import (
	"slices"
	"strings"
	"testing"
)

// TestArgoGenerateOperatorBounds: the bounds are the operator's, on
// plugin.yaml's command line: a tighter --max-files, --max-read-bytes or
// --max-output-bytes refuses the webapp chart, which the defaults render,
// with the application and the flag named and nothing on stdout.
func TestArgoGenerateOperatorBounds(t *testing.T) {
	appDir, env := argoApp(t)
	generate := func(params string, args ...string) (string, string, error) {
		r := runChild(t, "helm-inject", appDir, append(slices.Clone(env), "ARGOCD_APP_PARAMETERS="+params), append([]string{"argocd", "generate", "--confine=off"}, args...)...)
		return r.stdout, r.stderr, r.err
	}
	// a[1] makes a list of two slots.
	const listParam = `[{"name":"set","map":{"a[1]":"x"}}]`
	if out, stderr, err := generate(listParam); err != nil || !strings.Contains(out, "kind: Deployment") {
		t.Fatalf("the defaults: %v\n%s", err, stderr)
	}
	for _, flag := range []string{"--max-files=5", "--max-read-bytes=2000", "--max-output-bytes=1000", "--max-list-slots=1"} {
		name, _, _ := strings.Cut(flag, "=")
		out, stderr, err := generate(listParam, flag)
		if err == nil || out != "" || !strings.Contains(stderr, "application web: ") || !strings.Contains(stderr, name) {
			t.Errorf("%s: %v, stdout %d bytes, stderr %q; want a refusal naming the application and %s", flag, err, len(out), stderr, name)
		}
	}
}

// TestArgoParametersOperatorBounds: argocd parameters, which loads the
// application's chart for Argo CD's UI, reads under the operator's bounds
// too: --max-files=5 and --max-read-bytes=2000 each refuse the webapp
// chart, which the defaults load.
func TestArgoParametersOperatorBounds(t *testing.T) {
	appDir, env := argoApp(t)
	parameters := func(args ...string) (string, string, error) {
		r := runChild(t, "helm-inject", appDir, env, append([]string{"argocd", "parameters", "--confine=off"}, args...)...)
		return r.stdout, r.stderr, r.err
	}
	if out, stderr, err := parameters(); err != nil || !strings.Contains(out, `"chart-values"`) {
		t.Fatalf("the defaults: %v\n%s", err, stderr)
	}
	for _, flag := range []string{"--max-files=5", "--max-read-bytes=2000"} {
		name, _, _ := strings.Cut(flag, "=")
		out, stderr, err := parameters(flag)
		if err == nil || out != "" || !strings.Contains(stderr, name) {
			t.Errorf("%s: %v, stdout %q, stderr %q; want a refusal naming %s and nothing printed", flag, err, out, stderr, name)
		}
	}
}
