package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/helm-inject/helm-inject/internal/testfs"
)

// TestCompletionScripts: `helm-inject completion SHELL` writes each shell's
// script, wired to helm-inject's __complete; bash's is checked by bash
// itself, and it completes the command names once sourced.
func TestCompletionScripts(t *testing.T) {
	tests := []struct {
		shell string
		want  []string
	}{
		{"bash", []string{"__start_helm-inject", "complete -o default -F __start_helm-inject helm-inject", "__complete"}},
		{"zsh", []string{"#compdef helm-inject", "compdef _helm-inject helm-inject", "__complete"}},
		{"fish", []string{"complete -c helm-inject", "__complete"}},
		{"powershell", []string{"Register-ArgumentCompleter -CommandName 'helm-inject'", "__complete"}},
	}
	for _, tt := range tests {
		t.Run(tt.shell, func(t *testing.T) {
			out, stderr, code := runCLI(t, "completion", tt.shell)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("the %s script lacks %q", tt.shell, w)
				}
			}
		})
	}
}

// TestBashCompletionCompletes sources the bash script in a real bash and
// asks it to complete `helm-inject ap`: the script runs helm-inject's
// __complete (this test binary's helm-inject, built for it) and offers
// apply.
func TestBashCompletionCompletes(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal("bash is needed to check the bash completion script")
	}
	// The script calls `helm-inject __complete ...`: this test binary,
	// linked under that name, runs the command tree (see TestMain).
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "helm-inject")
	if err := os.Symlink(self, bin); err != nil {
		t.Fatal(err)
	}
	script, _, code := runCLI(t, "completion", "bash")
	if code != 0 {
		t.Fatal("completion bash failed")
	}
	file := filepath.Join(t.TempDir(), "helm-inject.bash")
	if err := os.WriteFile(file, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	// bash-completion (a package on the user's machine, as for helm's
	// script) provides _get_comp_words_by_ref; this is its plain form.
	drive := `_get_comp_words_by_ref() { cur="${COMP_WORDS[COMP_CWORD]}"; prev="${COMP_WORDS[COMP_CWORD-1]}"; words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD; }
source "$1"
COMP_WORDS=(helm-inject ap); COMP_CWORD=1; COMP_LINE="helm-inject ap"; COMP_POINT=${#COMP_LINE}
__start_helm-inject
printf '%s\n' "${COMPREPLY[@]}"`
	cmd := exec.Command(bash, "--norc", "--noprofile", "-c", drive, "bash", file)
	cmd.Env = append(os.Environ(), cliChildEnv+"=helm-inject", "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bash: %v\n%s%s", err, out, stderr.String())
	}
	if got := strings.Fields(string(out)); len(got) != 1 || got[0] != "apply" {
		t.Errorf("bash completes `helm-inject ap` to %q, want [apply]\n%s", got, stderr.String())
	}
}

// TestOutputFormats: diff's --output values are a diff's; the others'
// are a result's.
func TestOutputFormatsByDefault(t *testing.T) {
	if got := strings.Join(outputFormats("diff"), " "); got != "diff simple json" {
		t.Errorf("diff: %s", got)
	}
	if got := strings.Join(outputFormats("table"), " "); got != "table json yaml" {
		t.Errorf("table: %s", got)
	}
}

// TestFlagValueCompletion: --progress, --reconcile and --with complete
// their values on every command that has them (cobra's __complete, as a
// shell calls it).
func TestFlagValueCompletion(t *testing.T) {
	lib, err := filepath.Abs(filepath.Join("..", "..", "fixtures", "injectors", "library"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"__complete", "apply", "r", ".", "--progress", ""}, "plain"},
		{[]string{"__complete", "apply", "r", ".", "--reconcile", ""}, "never"},
		{[]string{"__complete", "template", "r", ".", "--injector-library", lib, "--with", ""}, "sidecar"},
	} {
		out, errOut, code := runCLI(t, tt.args...)
		if code != 0 || !strings.Contains(out, tt.want) {
			t.Errorf("%v: exit %d, %q %s; want %s offered", tt.args, code, out, errOut, tt.want)
		}
	}
}

// TestWithCompletionDescribesVersions: --with offers NAME with its newest
// version and NAME@VERSION for each version, newest first, each with the
// first line of its description; a definition without one gets the
// version alone, and what is typed so far filters the list.
func TestWithCompletionDescribesVersions(t *testing.T) {
	lib := t.TempDir()
	testfs.Write(t, lib, map[string]string{
		"tls/1.0.0.yaml":  "name: tls\nversion: 1.0.0\ndescription: |\n  Terminates TLS.\n  Second line.\ntemplate: |\n  containers:\n    - name: tls\n      image: tls:1\n",
		"tls/1.2.0.yaml":  "name: tls\nversion: 1.2.0\ndescription: |\n  Terminates TLS, with ALPN.\n  More.\ntemplate: |\n  containers:\n    - name: tls\n      image: tls:2\n",
		"bare/0.1.0.yaml": "name: bare\nversion: 0.1.0\ntemplate: |\n  containers:\n    - name: bare\n      image: bare:1\n",
		// A description whose first line is empty shows no text: only its
		// first line is ever shown.
		"edge/0.1.0.yaml": "name: edge\nversion: 0.1.0\ndescription: \"\\nDetails below.\"\ntemplate: |\n  containers:\n    - name: edge\n      image: edge:1\n",
	})
	for typed, want := range map[string]string{
		"": "bare\t0.1.0 (newest)\nbare@0.1.0\n" +
			"edge\t0.1.0 (newest)\nedge@0.1.0\n" +
			"tls\t1.2.0 (newest): Terminates TLS, with ALPN.\ntls@1.2.0\tTerminates TLS, with ALPN.\ntls@1.0.0\tTerminates TLS.\n",
		"tls@": "tls@1.2.0\tTerminates TLS, with ALPN.\ntls@1.0.0\tTerminates TLS.\n",
	} {
		out, errOut, code := runCLI(t, "__complete", "template", "r", ".", "--injector-library", lib, "--with", typed)
		want += ":4\n" // cobra's directive line: no file completion
		if code != 0 || out != want {
			t.Errorf("--with %q: exit %d, %s\ngot:\n%q\nwant:\n%q", typed, code, errOut, out, want)
		}
	}
}
