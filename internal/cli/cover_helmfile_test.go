package cli

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/helm-inject/helm-inject/helmfile"
)

// fakeHelmfile puts a helmfile that prints its arguments on stdout and
// "helmfile stderr" on stderr, and exits with $FAKE_HELMFILE_EXIT, in
// HELMFILE_BINARY, and a helm that does nothing in HELMFILE_HELM_BINARY.
func fakeHelmfile(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	hf := filepath.Join(dir, "helmfile")
	helm := filepath.Join(dir, "helm")
	if err := os.WriteFile(hf, []byte("#!/bin/sh\necho \"helmfile args: $*\"\necho 'helmfile stderr' >&2\nexit ${FAKE_HELMFILE_EXIT:-0}\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(helm, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HELMFILE_BINARY", hf)
	t.Setenv("HELMFILE_HELM_BINARY", helm)
	t.Setenv(helmfile.EnvAsHelm, "")
	t.Setenv("FAKE_HELMFILE_EXIT", "0")
}

// TestHelmfileRunsHelmfile: helm-inject helmfile hands every argument to
// helmfile untouched, cobra parsing none of them (helmfile's -e, -l and a
// command's own --help included), with helm-inject itself as helmfile's
// --helm-binary; helmfile's output reaches the user, and its exit code is
// helm-inject's, with nothing added on stderr.
func TestHelmfileRunsHelmfile(t *testing.T) {
	fakeHelmfile(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		exit string
		code int
	}{
		{[]string{"-e", "staging", "-l", "name=api", "list"}, "0", 0},
		{[]string{"list", "--help"}, "0", 0},
		{[]string{"--kube-context", "prod", "status"}, "3", 3},
		{[]string{"lint"}, "1", 1},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Setenv("FAKE_HELMFILE_EXIT", tt.exit)
			out, errOut, code := runCLI(t, append([]string{"helmfile"}, tt.args...)...)
			want := "helmfile args: --helm-binary " + self + " " + strings.Join(tt.args, " ") + "\n"
			if code != tt.code || out != want || errOut != "helmfile stderr\n" {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d, %q and helmfile's stderr alone", code, out, errOut, tt.code, want)
			}
		})
	}
}

// TestHelmfileHelp: "helmfile --help" and "-h" alone are helm-inject's
// help for its helmfile command, helmfile not run.
func TestHelmfileHelp(t *testing.T) {
	fakeHelmfile(t)
	for _, flag := range []string{"--help", "-h"} {
		out, errOut, code := runCLI(t, "helmfile", flag)
		if code != 0 || !strings.Contains(out, "Run the real helmfile with helm-inject as its helm") ||
			!strings.Contains(out, "helm-inject helmfile [helmfile flags and command]") || strings.Contains(out+errOut, "helmfile args:") {
			t.Errorf("helmfile %s: exit %d:\n%s%s", flag, code, out, errOut)
		}
	}
}

// TestHelmfileNotFound: without a helmfile (none on PATH, no
// HELMFILE_BINARY) helm-inject helmfile exits 1 with one error line that
// says how to give one.
func TestHelmfileNotFound(t *testing.T) {
	t.Setenv("HELMFILE_BINARY", "")
	t.Setenv("PATH", t.TempDir())
	out, errOut, code := runCLI(t, "helmfile", "sync")
	if code != 1 || out != "" || errOut != "Error: helmfile not found on PATH (or set HELMFILE_BINARY)\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestExitErrorCarriesTheCode: the error a command returns for an exit
// code (helmfile's, diff's --detailed-exitcode) reads "exit status N" to
// a caller of the command tree, and carries N.
func TestExitErrorCarriesTheCode(t *testing.T) {
	fakeHelmfile(t)
	t.Setenv("FAKE_HELMFILE_EXIT", "4")
	var out, errb bytes.Buffer
	root := newRootCommand(strings.NewReader(""), &out, &errb)
	root.SetArgs([]string{"helmfile", "list"})
	err := root.ExecuteContext(t.Context())
	var ee exitError
	if !errors.As(err, &ee) || ee.code != 4 || err.Error() != "exit status 4" {
		t.Errorf("helmfile exiting 4: error %v; want exit status 4", err)
	}
}
