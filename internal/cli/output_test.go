package cli

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestOutputFormats: every command that prints a result takes -o table,
// json or yaml, and refuses another format by name before it runs.
func TestOutputFormats(t *testing.T) {
	lib := []string{"--injector-library", "../../examples/injectors"}
	t.Run("injectors list", func(t *testing.T) {
		out, stderr, code := runCLI(t, append([]string{"injectors", "list", "-o", "json"}, lib...)...)
		var got []injectorVersion
		if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil {
			t.Fatalf("exit %d, %v: %s%s", code, err, out, stderr)
		}
		want := injectorVersion{Name: "log-shipper", Version: "1.1.0", Locked: true, File: "../../examples/injectors/log-shipper/1.1.0.yaml"}
		if !slices.Contains(got, want) {
			t.Errorf("injectors list -o json lacks %+v: %+v", want, got)
		}
		out, _, code = runCLI(t, append([]string{"injectors", "list", "-o", "yaml"}, lib...)...)
		var again []injectorVersion
		if err := yaml.Unmarshal([]byte(out), &again); code != 0 || err != nil || len(again) != len(got) || again[0] != got[0] {
			t.Errorf("injectors list -o yaml (%v): %s", err, out)
		}
	})
	t.Run("version", func(t *testing.T) {
		for _, format := range []string{"json", "yaml"} {
			out, _, code := runCLI(t, "version", "-o", format)
			var v struct {
				Version string `json:"version"`
			}
			if err := yaml.Unmarshal([]byte(out), &v); code != 0 || err != nil || v.Version == "" {
				t.Errorf("version -o %s: exit %d, %v: %s", format, code, err, out)
			}
		}
		if out, _, _ := runCLI(t, "version"); strings.HasPrefix(out, "{") {
			t.Errorf("version prints JSON by default: %s", out)
		}
	})
	for _, args := range [][]string{
		{"version", "-o", "xml"},
		append([]string{"injectors", "list", "-o", "xml"}, lib...),
		{"list", "-o", "xml"},
		{"status", "x", "-o", "xml"},
	} {
		_, stderr, code := runCLI(t, args...)
		if code == 0 || !strings.Contains(stderr, `unknown output format "xml" (want table, json or yaml)`) {
			t.Errorf("%s: exit %d: %s", strings.Join(args, " "), code, stderr)
		}
	}
}

// TestLiveFlagsCheckedFirst: status's and list's live-view flags are
// checked before the cluster is asked anything (the kubeconfig here does
// not exist).
func TestLiveFlagsCheckedFirst(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"status", "r", "--detailed-exitcode"}, "--detailed-exitcode and --ignore-drift need --live"},
		{[]string{"list", "--ignore-drift", "/spec/replicas"}, "--detailed-exitcode and --ignore-drift need --live"},
		{[]string{"status", "r", "--live", "--ignore-drift", "spec/replicas"}, `--ignore-drift: drift ignore rule "spec/replicas": the path must be a JSON pointer starting with /`},
		{[]string{"list", "--live", "--ignore-drift", "a/b/c:/spec"}, `--ignore-drift: drift ignore rule "a/b/c:/spec": want [KIND[/NAME]:]/JSON/POINTER`},
		{[]string{"status", "r", "--live"}, "no kubeconfig"},
	} {
		_, errOut, code := runCLI(t, append(tt.args, "--kubeconfig", "/nonexistent")...)
		if code != 1 || !strings.Contains(errOut, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want %q", tt.args, code, errOut, tt.want)
		}
	}
}
