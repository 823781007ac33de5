package inject

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseSpec(t *testing.T) {
	tests := []struct {
		name string
		spec string
		want []string
	}{
		{"seed form: words then one k=v list",
			"istioctl kube-inject f=FILE,injectConfigFile=inject-config.yaml",
			[]string{"istioctl", "kube-inject", "-f", "FILE", "--injectConfigFile", "inject-config.yaml"}},
		{"helm-x comma form",
			"istioctl kube-inject,f=FILE,injectConfigFile=inject-config.yaml",
			[]string{"istioctl", "kube-inject", "-f", "FILE", "--injectConfigFile", "inject-config.yaml"}},
		{"fully comma separated",
			"istioctl,kube-inject,f=FILE",
			[]string{"istioctl", "kube-inject", "-f", "FILE"}},
		{"linkerd: bare tokens pass as they are",
			"linkerd inject,--manual,FILE",
			[]string{"linkerd", "inject", "--manual", "FILE"}},
		{"a dash token keeps its '='",
			"tool --revision=default,FILE",
			[]string{"tool", "--revision=default", "FILE"}},
		{"quoted value keeps its space",
			"my-injector label='a b',FILE",
			[]string{"my-injector", "--label", "a b", "FILE"}},
		{"empty value",
			"tool k=,FILE",
			[]string{"tool", "-k", "", "FILE"}},
		{"shell metacharacters are plain text inside quotes",
			`tool "x=$(touch /tmp/pwned)"`,
			[]string{"tool", "-x", "$(touch /tmp/pwned)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseSpec(tt.spec)
			if err != nil {
				t.Fatalf("ParseSpec(%q): %v", tt.spec, err)
			}
			if diff := cmp.Diff(tt.want, c.Argv); diff != "" {
				t.Errorf("ParseSpec(%q) argv (-want +got):\n%s", tt.spec, diff)
			}
			if c.Name() != tt.spec {
				t.Errorf("Name() = %q, want the spec as written", c.Name())
			}
		})
	}
}

func TestParseSpecErrors(t *testing.T) {
	tests := []struct {
		spec, want string
	}{
		{"", "empty injector command"},
		{"   ", "empty injector command"},
		{"istioctl 'kube-inject", "unbalanced quotes"},
		{"tool k=v=w", "more than one '='"},
		{"tool =v", "no key before '='"},
		{"tool a,,b", "empty element between commas"},
		{"tool a, b", "empty element between commas"},
		{"tool FILE; rm -rf /", "shell operator \";\""},
		{"tool FILE | tee x", "shell operator \"|\""},
		{"|tool FILE", "shell operator \"|\""},
		{"FILE x", "the command itself cannot be FILE"},
		{"f=FILE", `no command: the spec starts with the option "f=FILE"`},
		{"f=FILE,injectConfigFile=x", `no command: the spec starts with the option "f=FILE"`},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			_, err := ParseSpec(tt.spec)
			var se *SpecError
			if !errors.As(err, &se) {
				t.Fatalf("ParseSpec(%q) error = %v, want a *SpecError", tt.spec, err)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.spec) {
				t.Errorf("ParseSpec(%q) error = %q, want it to name the spec and say %q", tt.spec, err, tt.want)
			}
		})
	}
}

func TestParseCommand(t *testing.T) {
	tests := []struct {
		line     string
		want     []string
		usesFile bool
	}{
		{"my-injector --label 'a b' FILE", []string{"my-injector", "--label", "a b", "FILE"}, true},
		{"linkerd inject --manual -", []string{"linkerd", "inject", "--manual", "-"}, false},
		{"tool --in=FILE", []string{"tool", "--in=FILE"}, true},
		{"tool --profile PROFILE", []string{"tool", "--profile", "PROFILE"}, false},
		{`tool "a,b=c"`, []string{"tool", "a,b=c"}, false},
		// Nothing is expanded: a variable is text, quoted or not.
		{`tool $HOME ${HOME} "$HOME/x" FILE`, []string{"tool", "$HOME", "${HOME}", "$HOME/x", "FILE"}, true},
		// Nor is a command substitution run.
		{"tool `echo hi` $(echo hi)", []string{"tool", "`echo hi`", "$(echo hi)"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			c, err := ParseCommand(tt.line)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, c.Argv); diff != "" {
				t.Errorf("argv (-want +got):\n%s", diff)
			}
			if c.usesFile != tt.usesFile {
				t.Errorf("usesFile = %v, want %v", c.usesFile, tt.usesFile)
			}
		})
	}
}

// FuzzParseSpec: the spec parsers never panic; whatever they accept has a
// program, and a command line rebuilt from the parsed words with every word
// single-quoted parses back to the same words (nothing was expanded or
// evaluated on the way: no variables, no backticks, no globbing).
func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{
		"istioctl kube-inject,f=FILE",
		"istioctl kube-inject -f FILE --meshConfigFile mesh.yaml",
		"linkerd inject --manual FILE",
		"tool k=v=w", "tool a,,b", "f=FILE", "'unbalanced", `tool "a b" 'c d' e\ f`,
		"tool $(touch canary)", "tool `id`", "tool FILE; rm -rf /", "tool $HOME *", "",
	} {
		f.Add(s)
	}
	quote := func(words []string) string {
		q := make([]string, len(words))
		for i, w := range words {
			q[i] = "'" + strings.ReplaceAll(w, "'", `'"'"'`) + "'"
		}
		return strings.Join(q, " ")
	}
	f.Fuzz(func(t *testing.T, s string) {
		for name, parse := range map[string]func(string) (*Command, error){"ParseSpec": ParseSpec, "ParseCommand": ParseCommand} {
			c, err := parse(s)
			if err != nil {
				continue
			}
			if len(c.Argv) == 0 || c.Argv[0] == "" {
				t.Fatalf("%s(%q) accepted a spec without a program: %q", name, s, c.Argv)
			}
			back, err := ParseCommand(quote(c.Argv))
			if err != nil {
				t.Fatalf("%s(%q) = %q, which does not parse back: %v", name, s, c.Argv, err)
			}
			if !slices.Equal(back.Argv, c.Argv) {
				t.Fatalf("%s(%q) = %q; quoted and parsed again: %q", name, s, c.Argv, back.Argv)
			}
		}
	})
}

// TestQuoteCommand: a quoted argv parses back to itself, whatever its
// words hold (shell operators, quotes, spaces, $, empty words).
func TestQuoteCommand(t *testing.T) {
	for _, argv := range [][]string{
		{"istioctl", "kube-inject", "-f", "FILE", "--revision", "default"},
		{"inj", "a b", "it's", `"q"`, "x;y", "$HOME", "`id`", "", "a|b&c>d", `back\slash`, "--x=a b", "-", "ünï"},
	} {
		line := QuoteCommand(argv)
		c, err := ParseCommand(line)
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if !slices.Equal(c.Argv, argv) {
			t.Errorf("QuoteCommand(%q) = %q, which parses as %q", argv, line, c.Argv)
		}
	}
	if got := QuoteCommand([]string{"istioctl", "kube-inject", "-f", "FILE"}); got != "istioctl kube-inject -f FILE" {
		t.Errorf("plain words are quoted: %q", got)
	}
}
