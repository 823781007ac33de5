package helmfile

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/helm-inject/helm-inject/release"
)

// fakeRealHelm writes a shell script standing in for the real helm: it
// prints its arguments (one per line), the pass-through depth it was given
// and its standard input, writes "on stderr" to stderr, and exits with
// $FAKE_HELM_EXIT (0 by default). `version` prints $FAKE_HELM_VERSION.
func fakeRealHelm(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "helm")
	script := `#!/bin/sh
if [ "$1" = version ]; then echo "${FAKE_HELM_VERSION}"; exit 0; fi
for a in "$@"; do echo "arg: $a"; done
echo "depth: ${HELM_INJECT_PASS_THROUGH_DEPTH}"
cat
echo "on stderr" >&2
exit ${FAKE_HELM_EXIT:-0}
`
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestShimRoutes: which calls the shim answers with helm-inject's own
// command line (and with which arguments), and which it hands to the real
// helm unchanged, with the real helm's output and exit code.
func TestShimRoutes(t *testing.T) {
	t.Setenv(EnvRealHelm, fakeRealHelm(t))
	t.Setenv(envPassThroughDepth, "")
	t.Setenv(release.EnvPlanCache, "")
	pr := []string{"--post-renderer", "helm-inject", "--post-renderer-args=--injector", "--post-renderer-args=x f=FILE"}
	tests := []struct {
		name string
		args []string
		// ran is the command line helm-inject ran in-process; nil when
		// the call went to the real helm.
		ran []string
	}{
		{"injected upgrade", slices.Concat([]string{"upgrade", "--install", "api", "c"}, pr), []string{"upgrade", "--install", "api", "c", "--injector", "x f=FILE"}},
		{"injected template", slices.Concat([]string{"template", "api", "c"}, pr), []string{"template", "api", "c", "--injector", "x f=FILE"}},
		{"every diff, injected or not", []string{"diff", "upgrade", "api", "c"}, []string{"diff", "upgrade", "api", "c"}},
		{"an upgrade with another post-renderer", []string{"upgrade", "api", "c", "--post-renderer", "./pr.sh"}, nil},
		{"a plain upgrade", []string{"upgrade", "--install", "api", "c"}, nil},
		{"another verb with the post-renderer", slices.Concat([]string{"install", "api", "c"}, pr), nil},
		{"status", []string{"status", "api"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ran []string
			run := func(_ context.Context, args []string, _ io.Reader, _, _ io.Writer) int {
				ran = args
				return 7
			}
			var stdout, stderr bytes.Buffer
			code := Shim(t.Context(), tt.args, strings.NewReader("from stdin\n"), &stdout, &stderr, run)
			if tt.ran != nil {
				if diff := cmp.Diff(tt.ran, ran); diff != "" || code != 7 {
					t.Errorf("exit %d; helm-inject's command line (-want +got):\n%s", code, diff)
				}
				return
			}
			if ran != nil {
				t.Fatalf("helm-inject ran %q; the call is the real helm's", ran)
			}
			var want strings.Builder
			for _, a := range tt.args {
				want.WriteString("arg: " + a + "\n")
			}
			want.WriteString("depth: 1\nfrom stdin\n")
			if code != 0 || stdout.String() != want.String() || stderr.String() != "on stderr\n" {
				t.Errorf("exit %d, stdout:\n%s\nstderr: %q; want the real helm's answer:\n%s", code, stdout.String(), stderr.String(), want.String())
			}
		})
	}
}

// TestShimPassesTheExitCode: the real helm's exit code is the shim's.
func TestShimPassesTheExitCode(t *testing.T) {
	t.Setenv(EnvRealHelm, fakeRealHelm(t))
	t.Setenv(envPassThroughDepth, "")
	t.Setenv("FAKE_HELM_EXIT", "3")
	if code := Shim(t.Context(), []string{"status", "api"}, nil, io.Discard, io.Discard, nil); code != 3 {
		t.Errorf("exit %d, want the real helm's 3", code)
	}
}

// TestShimStopsAChainOfShims: a call handed on maxPassThroughDepth times
// in a row is refused (the "real helm" is helm-inject again); one fewer is
// handed on, with the depth counted up.
func TestShimStopsAChainOfShims(t *testing.T) {
	helm := fakeRealHelm(t)
	t.Setenv(EnvRealHelm, helm)
	for _, tt := range []struct {
		depth, want string
		code        int
	}{
		{"", "depth: 1\n", 0},
		{"2", "depth: 3\n", 0},
		{"3", "Error: helm-inject handed this call to " + helm + " 3 times in a row", 1},
		{"4", "Error: helm-inject handed this call to " + helm + " 4 times in a row", 1},
	} {
		t.Setenv(envPassThroughDepth, tt.depth)
		var out bytes.Buffer
		code := Shim(t.Context(), []string{"status"}, nil, &out, &out, nil)
		if code != tt.code || !strings.Contains(out.String(), tt.want) {
			t.Errorf("depth %q: exit %d, output:\n%s\nwant exit %d and %q", tt.depth, code, out.String(), tt.code, tt.want)
		}
	}
}

// TestShimRecordsAHelm3Version: inside a helmfile run, `version` through
// the shim notes a Helm 3 real helm (its list table is the one the shim
// answers with); a Helm 4, or a run without a folder, notes nothing.
func TestShimRecordsAHelm3Version(t *testing.T) {
	t.Setenv(EnvRealHelm, fakeRealHelm(t))
	t.Setenv(envPassThroughDepth, "")
	for _, tt := range []struct {
		version string
		inRun   bool
		want    bool
	}{
		{"v3.21.4+g1234", true, true},
		{"  v3.21.4\n", true, true},
		{"v4.3.2+gabcd", true, false},
		{"3.21.4", true, false},
		{"v3.21.4", false, false},
	} {
		run := t.TempDir()
		t.Setenv(release.EnvPlanCache, "")
		if tt.inRun {
			t.Setenv(release.EnvPlanCache, run)
		}
		t.Setenv("FAKE_HELM_VERSION", tt.version)
		var out bytes.Buffer
		if code := Shim(t.Context(), []string{"version", "--short"}, nil, &out, io.Discard, nil); code != 0 || strings.TrimSpace(out.String()) != strings.TrimSpace(tt.version) {
			t.Fatalf("version %q: exit %d, printed %q", tt.version, code, out.String())
		}
		_, err := os.Stat(filepath.Join(run, realHelmV3Marker))
		if got := err == nil; got != tt.want {
			t.Errorf("version %q (in a run: %v): noted as Helm 3 %v, want %v", tt.version, tt.inRun, got, tt.want)
		}
	}
}

// TestRealHelm: $HELM_INJECT_HELM, else helm on PATH; never helm-inject
// itself (here: the test binary), by name, path or symbolic link.
func TestRealHelm(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	onPath := t.TempDir()
	helm := filepath.Join(onPath, "helm")
	if err := os.WriteFile(helm, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "helm")
	if err := os.Symlink(self, link); err != nil {
		t.Fatal(err)
	}
	selfDir := filepath.Dir(self)
	tests := []struct {
		name, env, path string
		want            string
		wantErr         string
	}{
		{"the variable", "/opt/helm/bin/helm", onPath, "/opt/helm/bin/helm", ""},
		{"helm on PATH", "", onPath, helm, ""},
		{"no helm at all", "", t.TempDir(), "", "no helm binary for the calls helm-inject does not handle: set HELM_INJECT_HELM or put helm on PATH"},
		{"the variable names helm-inject", self, onPath, "", "HELM_INJECT_HELM=" + self + " is helm-inject itself"},
		{"the variable names a link to helm-inject", link, onPath, "", "is helm-inject itself"},
		{"the variable names helm-inject on PATH", filepath.Base(self), selfDir, "", "is helm-inject itself"},
		{"helm on PATH is helm-inject", "", filepath.Dir(link), "", "helm on PATH (" + link + ") is helm-inject itself"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(EnvRealHelm, tt.env)
			t.Setenv("PATH", tt.path)
			got, err := RealHelm()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("RealHelm() = %q, %v; want an error with %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("RealHelm() = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// TestParseCallGlobalFlags: a global flag before the verb takes its value
// with it (the value is not the verb); one at the very end takes nothing.
func TestParseCallGlobalFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		verb string
		rest []string
	}{
		{[]string{"--namespace", "shop", "list"}, "list", []string{"--namespace", "shop", "list"}},
		{[]string{"-n", "shop", "--kube-context", "dev", "status", "api"}, "status", []string{"-n", "shop", "--kube-context", "dev", "status", "api"}},
		{[]string{"--debug", "list"}, "list", []string{"--debug", "list"}},
		{[]string{"--kube-context"}, "", []string{"--kube-context"}},
	} {
		c := ParseCall(tt.args)
		if c.Verb != tt.verb {
			t.Errorf("ParseCall(%q): verb %q, want %q", tt.args, c.Verb, tt.verb)
		}
		if diff := cmp.Diff(tt.rest, c.Rest, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("ParseCall(%q): rest (-want +got)\n%s", tt.args, diff)
		}
	}
}

// versionOnlyAPIServer serves /version only, enough for helm's reachability
// check; with HELM_DRIVER=memory nothing else is asked of it. It returns a
// kubeconfig for it.
func versionOnlyAPIServer(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/version" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"major":"1","minor":"37","gitVersion":"v1.37.0"}`)
	}))
	t.Cleanup(srv.Close)
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: " + srv.URL +
		"\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\nusers:\n- name: u\n  user: {}\n"
	if err := os.WriteFile(kc, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return kc
}

// TestShimAnswersListInARun: inside a helmfile run whose real helm is
// Helm 3, `list`/`ls` in helmfile's form is answered with helm's table
// (here of an empty release store); outside a run, with a Helm 4 real
// helm, with a flag it does not know, --debug or a second argument, the
// real helm answers.
func TestShimAnswersListInARun(t *testing.T) {
	t.Setenv(EnvRealHelm, fakeRealHelm(t))
	t.Setenv(envPassThroughDepth, "")
	t.Setenv("HELM_DRIVER", "memory")
	kc := versionOnlyAPIServer(t)
	withV3 := t.TempDir()
	if err := os.WriteFile(filepath.Join(withV3, realHelmV3Marker), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	helmfileList := []string{"--kubeconfig", kc, "--filter", "^api$", "--namespace", "ns", "--uninstalling", "--deployed", "--failed", "--pending"}
	header := []string{"NAME", "NAMESPACE", "REVISION", "UPDATED", "STATUS", "CHART", "APP", "VERSION"}
	for _, tt := range []struct {
		name     string
		run      string
		args     []string
		answered bool
	}{
		{"list in a run", withV3, slices.Concat([]string{"list"}, helmfileList), true},
		{"ls in a run", withV3, slices.Concat([]string{"ls"}, helmfileList), true},
		{"a filter that is not one name", withV3, []string{"list", "--kubeconfig", kc, "--filter", "api|web", "-n", "ns"}, true},
		{"outside a run", "", slices.Concat([]string{"list"}, helmfileList), false},
		{"real helm not Helm 3", t.TempDir(), slices.Concat([]string{"list"}, helmfileList), false},
		{"another verb", withV3, slices.Concat([]string{"history"}, helmfileList), false},
		{"a flag list does not answer", withV3, slices.Concat([]string{"list", "--output", "json"}, helmfileList), false},
		{"--debug", withV3, slices.Concat([]string{"list", "--debug"}, helmfileList), false},
		{"an argument", withV3, slices.Concat([]string{"list", "extra"}, helmfileList), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(release.EnvPlanCache, tt.run)
			var out bytes.Buffer
			code := Shim(t.Context(), tt.args, nil, &out, io.Discard, nil)
			realHelm := strings.Contains(out.String(), "arg: "+tt.args[0]+"\n")
			if code != 0 || realHelm == tt.answered {
				t.Fatalf("exit %d, answered by the real helm %v, want %v:\n%s", code, realHelm, !tt.answered, out.String())
			}
			if tt.answered {
				if diff := cmp.Diff(header, strings.Fields(out.String())); diff != "" {
					t.Errorf("helm's list table of no releases (-want +got):\n%s", diff)
				}
			}
		})
	}
}
