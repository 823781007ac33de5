package inject

import (
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/helm-inject/helm-inject/manifest"
)

// script writes an executable shell script and returns its path.
func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "injector.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	return p
}

func docs(t *testing.T, yamls ...string) []manifest.Document {
	t.Helper()
	var out []manifest.Document
	for i, y := range yamls {
		d, err := manifest.Parse("chart/templates/t"+strconv.Itoa(i)+".yaml", y)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

const (
	deployA = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: a"
	podB    = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: b\n  annotations:\n    helm.sh/hook: test"
	cmC     = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: ns"
)

func mustCommand(t *testing.T, line string) *Command {
	t.Helper()
	c, err := ParseCommand(line)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestPipelineRunsEachInjectorOncePerRelease(t *testing.T) {
	count := filepath.Join(t.TempDir(), "count")
	// The first injector reads FILE, the second stdin; both append a line
	// per run and add an annotation so the order of the chain shows.
	first := script(t, `echo run >> "`+count+`"; sed 's/^  name: \(.*\)/  name: \1\n  labels: {first: "yes"}/' "$1"`)
	second := script(t, `echo run >> "`+count+`"; [ "$HELM_INJECT_RELEASE" = rel ] && [ "$HELM_INJECT_NAMESPACE" = ns ] && [ "$HELM_INJECT_CHART" = chart ] || exit 7; cat`)
	p := &Pipeline{Injectors: []Injector{mustCommand(t, first+" FILE"), mustCommand(t, second)}, IdentifyPrograms: true}
	in := docs(t, deployA, podB, cmC)
	out, steps, err := p.Run(t.Context(), in, Env{Release: "rel", Namespace: "ns", Chart: "chart"})
	if err != nil {
		t.Fatal(err)
	}
	// The second injector (cat) returns what it got: same digest.
	if len(steps) != 2 || steps[0].OutputDigest != steps[1].OutputDigest || !strings.HasPrefix(steps[1].OutputDigest, "sha256:") {
		t.Errorf("steps = %+v, want two with the same output digest", steps)
	}
	// Each step names the executable that ran it.
	if len(steps) == 2 && (steps[0].Program == nil || steps[0].Program.Path != first || steps[1].Program == nil || steps[1].Program.Path != second || steps[0].Program.SHA256 == steps[1].Program.SHA256) {
		t.Errorf("programs %+v and %+v, want %s and %s with their digests", steps[0].Program, steps[1].Program, first, second)
	}
	// Where nothing records them (template), programs are not identified.
	plain := &Pipeline{Injectors: []Injector{mustCommand(t, script(t, "cat"))}}
	if _, steps, err := plain.Run(t.Context(), in, Env{Release: "rel"}); err != nil || len(steps) != 1 || steps[0].Program != nil {
		t.Errorf("without IdentifyPrograms: steps %+v, %v; want no program", steps, err)
	}
	runs, _ := os.ReadFile(count)
	if got := strings.Count(string(runs), "run"); got != 2 {
		t.Errorf("injectors ran %d times for 3 documents, want 2 (once each)", got)
	}
	for i, d := range out {
		if d.Source != in[i].Source || d.ID != in[i].ID {
			t.Errorf("document %d is %s from %s, want %s from %s", i, d.ID, d.Source, in[i].ID, in[i].Source)
		}
		if !strings.Contains(d.Content, `first: "yes"`) {
			t.Errorf("document %d was not injected:\n%s", i, d.Content)
		}
	}
}

func TestPipelineSkipsHooksAndTestsWhenAsked(t *testing.T) {
	inj := mustCommand(t, script(t, `sed 's/^kind: \(.*\)/kind: \1\n# injected/'`))
	jobHook := "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: migrate\n  annotations:\n    helm.sh/hook: pre-install"
	in := docs(t, deployA, podB, jobHook)
	tests := []struct {
		name     string
		pipeline *Pipeline
		// injected per input: the Deployment, the test hook, the Job hook
		injected [3]bool
	}{
		{"neither", &Pipeline{Injectors: []Injector{inj}}, [3]bool{true, true, true}},
		{"--skip-inject-tests", &Pipeline{Injectors: []Injector{inj}, SkipTests: true}, [3]bool{true, false, true}},
		{"--skip-inject-hooks", &Pipeline{Injectors: []Injector{inj}, SkipHooks: true}, [3]bool{true, false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, _, err := tt.pipeline.Run(t.Context(), in, Env{Release: "r"})
			if err != nil {
				t.Fatal(err)
			}
			for i, want := range tt.injected {
				if got := strings.Contains(out[i].Content, "# injected"); got != want {
					t.Errorf("%s: injected = %v, want %v:\n%s", in[i].ID, got, want, out[i].Content)
				}
			}
		})
	}
}

// TestPipelineKeepsCommentOnlyDocuments: a template switched off but for a
// comment renders a document of comments only. Helm keeps it; injectors
// never see it (istioctl and friends drop what is not a resource), and it
// stays in place. Comments an injector writes as documents of their own
// are not resources either.
func TestPipelineKeepsCommentOnlyDocuments(t *testing.T) {
	seen := filepath.Join(t.TempDir(), "seen")
	inj := mustCommand(t, script(t, `tee "`+seen+`" | sed 's/^kind: \(.*\)/kind: \1\n# injected/'; echo '---'; echo '# by the injector'`))
	in := docs(t, "# switched off", deployA, "# also off\n# two lines")
	out, _, err := (&Pipeline{Injectors: []Injector{inj}}).Run(t.Context(), in, Env{Release: "r"})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 3 || out[0].Content != "# switched off" || out[2].Content != "# also off\n# two lines" || !strings.Contains(out[1].Content, "# injected") {
		t.Errorf("documents after injection: %+v", out)
	}
	if b, err := os.ReadFile(seen); err != nil || strings.Contains(string(b), "off") {
		t.Errorf("the injector was given comment-only documents (%v):\n%s", err, b)
	}
}

func TestPipelineErrors(t *testing.T) {
	in := docs(t, deployA, podB, cmC)
	tests := []struct {
		name    string
		command string
		want    string
	}{
		{"exit status with stderr", script(t, "echo 'mesh config missing' >&2; exit 3"), "exited with status 3; its stderr:\nmesh config missing"},
		{"killed by a signal", script(t, "kill -9 $$"), "killed by signal killed"},
		{"invalid YAML", script(t, "printf 'apiVersion: v1\\nkind: [x\\n'"), "output document 1 of 1: invalid YAML"},
		{"prints nothing", script(t, "cat > /dev/null"), "dropped or renamed apps/v1 Deployment a, v1 Pod b, v1 ConfigMap ns/c"},
		{"drops resources", script(t, `head -n 5 "$1"`) + " FILE", "dropped or renamed v1 Pod b, v1 ConfigMap ns/c"},
		{"renames a resource", script(t, "sed 's/name: a$/name: z/'"), "dropped or renamed apps/v1 Deployment a; added apps/v1 Deployment z"},
		{"moves a resource", script(t, "sed 's/namespace: ns/namespace: other/'"), `moved ConfigMap c from namespace "ns" to "other"`},
		{"changes a kind", script(t, "sed 's/kind: ConfigMap/kind: Secret/'"), "changed the kind of c from v1 ConfigMap to v1 Secret"},
		{"merges two documents", script(t, "grep -v -- '---'"), "invalid YAML"},
		{"turns a hook into a manifest", script(t, "grep -v 'helm.sh/hook' | sed 's/  annotations://'"), `changed the helm.sh/hook annotation of v1 Pod b from "test" to ""`},
		{"adds a resource", script(t, "cat; printf -- '---\\napiVersion: v1\\nkind: Secret\\nmetadata:\\n  name: extra\\n'"), "added v1 Secret extra"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Pipeline{Injectors: []Injector{mustCommand(t, tt.command)}}
			_, _, err := p.Run(t.Context(), in, Env{Release: "shop", Namespace: "ns"})
			var ie *Error
			if !errors.As(err, &ie) {
				t.Fatalf("error = %v, want an *inject.Error", err)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, `release "shop": injector "`+tt.command+`": `) || !strings.Contains(msg, tt.want) {
				t.Errorf("error =\n%s\nwant it to name release and injector and contain\n%s", msg, tt.want)
			}
		})
	}
}

// TestInjectorNotOnPath: a program named without a folder and found in no
// folder of $PATH is reported with the folders searched and how to name it.
func TestInjectorNotOnPath(t *testing.T) {
	t.Setenv("PATH", "/nowhere:/also/nowhere")
	p := &Pipeline{Injectors: []Injector{mustCommand(t, "no-such-injector-anywhere FILE")}}
	_, _, err := p.Run(t.Context(), docs(t, deployA), Env{Release: "shop", Namespace: "ns"})
	want := `release "shop": injector "no-such-injector-anywhere FILE": program "no-such-injector-anywhere" is in no folder of $PATH (/nowhere:/also/nowhere); install it there, or write its path in the injector spec (for example /usr/local/bin/no-such-injector-anywhere)`
	if err == nil || err.Error() != want {
		t.Errorf("error =\n%v\nwant\n%s", err, want)
	}
}

func TestPipelineTimeoutKillsTheInjectorAndItsChildren(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	// The child (sleep) would hold the output pipe open after its parent
	// shell died if only the shell were killed.
	inj := mustCommand(t, script(t, `sleep 300 & echo $! > "`+pidFile+`"; wait`))
	p := &Pipeline{Injectors: []Injector{inj}, Timeout: 300 * time.Millisecond}
	_, _, err := p.Run(t.Context(), docs(t, deployA), Env{Release: "shop"})
	if err == nil || !strings.Contains(err.Error(), "did not finish within 300ms (--injector-timeout)") {
		t.Fatalf("error = %v, want a timeout naming --injector-timeout", err)
	}
	b, rerr := os.ReadFile(pidFile)
	if rerr != nil {
		t.Fatal(rerr)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	// Signal 0 checks existence; a killed child is gone (or a zombie reaped
	// by init), never still sleeping in our process group.
	if err := syscall.Kill(pid, 0); err == nil {
		if stat, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); !strings.Contains(string(stat), ") Z ") {
			t.Errorf("the injector's child %d is still running after the timeout", pid)
		}
	}
}

func TestPipelineRemovesItsTemporaryFolder(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	for _, line := range []string{script(t, "cat \"$1\"") + " FILE", script(t, "exit 1") + " FILE"} {
		p := &Pipeline{Injectors: []Injector{mustCommand(t, line)}}
		_, _, _ = p.Run(context.Background(), docs(t, deployA), Env{Release: "r"})
		left, _ := os.ReadDir(tmp)
		if len(left) != 0 {
			t.Errorf("after %q, %s still holds %v", line, tmp, left[0].Name())
		}
	}
}

// TestInvalidOutputExcerptHidesSecretValues: when an injector prints an
// invalid Secret, in block or compact form, the error quotes where it went
// wrong but none of the Secret's values; other documents are quoted as
// they are.
func TestInvalidOutputExcerptHidesSecretValues(t *testing.T) {
	const value = "c3VwZXItc2VjcmV0LXRva2Vu"
	secret := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\ndata:\n  token: " + value
	in := docs(t, secret)
	tests := []struct{ name, printed, shown string }{
		{"block, broken in the data", "kind: Secret\ndata:\n  token: " + value + "\n  extra: [\napiVersion: v1\nmetadata:\n  name: creds", "kind: Secret"},
		{"compact", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"creds"},"data":{"token":"` + value + `"`, "xxxxx"},
		{"stringData without kind", "apiVersion: v1\nstringData:\n  token: " + value + "\n  x: [", "stringData:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out.yaml")
			if err := os.WriteFile(out, []byte(tt.printed), 0o600); err != nil {
				t.Fatal(err)
			}
			p := &Pipeline{Injectors: []Injector{mustCommand(t, "cat "+out)}}
			_, _, err := p.Run(t.Context(), in, Env{Release: "shop", Namespace: "ns"})
			if err == nil {
				t.Fatal("invalid output was accepted")
			}
			if strings.Contains(err.Error(), value) || !strings.Contains(err.Error(), "invalid YAML") || !strings.Contains(err.Error(), tt.shown) {
				t.Errorf("error quotes the Secret's value or misses %q:\n%s", tt.shown, err)
			}
		})
	}
	// A ConfigMap's excerpt keeps its values: they help find the fault.
	out := filepath.Join(t.TempDir(), "out.yaml")
	_ = os.WriteFile(out, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata: {level: debug, x: ["), 0o600)
	p := &Pipeline{Injectors: []Injector{mustCommand(t, "cat "+out)}}
	if _, _, err := p.Run(t.Context(), docs(t, cmC), Env{Release: "shop", Namespace: "ns"}); err == nil || !strings.Contains(err.Error(), "level: debug") {
		t.Errorf("ConfigMap excerpt: %v", err)
	}
}

// TestInjectorStderrHidesSecretValues: an injector that fails and quotes
// its input on stderr (whole, one value of it, or a decoded value) gets
// no value of a Secret it was given into the error; other stderr stays.
func TestInjectorStderrHidesSecretValues(t *testing.T) {
	const plain, line2 = "correct-horse-battery", "second-line-4711"
	encoded := base64.StdEncoding.EncodeToString([]byte(plain + "\n" + line2))
	secret := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\ndata:\n  password: " + encoded + "\nstringData:\n  name: plain-string-data"
	for name, body := range map[string]string{
		"its input":         `cat >&2; echo "bad input" >&2; exit 3`,
		"one encoded value": `echo "cannot parse ` + encoded + `: bad input" >&2; exit 3`,
		"a decoded value":   `echo "user ` + plain + ` rejected: bad input" >&2; exit 3`,
		"one decoded line":  `echo "line ` + line2 + ` rejected: bad input" >&2; exit 3`,
		"a stringData key":  `echo "name plain-string-data: bad input" >&2; exit 3`,
	} {
		t.Run(name, func(t *testing.T) {
			p := &Pipeline{Injectors: []Injector{mustCommand(t, script(t, body))}}
			_, _, err := p.Run(t.Context(), docs(t, secret), Env{Release: "shop", Namespace: "ns"})
			if err == nil {
				t.Fatal("a failing injector was accepted")
			}
			for _, v := range []string{plain, line2, encoded, "plain-string-data"} {
				if strings.Contains(err.Error(), v) {
					t.Errorf("the error quotes %q:\n%s", v, err)
				}
			}
			// Where stderr quotes a Secret, its lines are masked as an
			// excerpt is; elsewhere the injector's own message stays.
			if !strings.Contains(err.Error(), "exited with status 3") || (name != "its input" && !strings.Contains(err.Error(), "bad input")) {
				t.Errorf("the error lost the injector's own message:\n%s", err)
			}
		})
	}
}

// TestSlowInjectorIsNamedRedacted: what the progress line names (a long
// injector run, printed on stderr, so in CI logs) holds no credential of
// the spec.
func TestSlowInjectorIsNamedRedacted(t *testing.T) {
	var named []string
	p := &Pipeline{
		Injectors: []Injector{mustCommand(t, "cat --token S3CR3T-TOKEN")},
		Slow: func(what string) func() {
			named = append(named, what)
			return func() {}
		},
	}
	_, _, _ = p.Run(t.Context(), docs(t, cmC), Env{Release: "shop", Namespace: "ns"})
	if len(named) != 1 || strings.Contains(named[0], "S3CR3T") || !strings.Contains(named[0], "--token xxxxx") {
		t.Errorf("the slow injector is shown as %q", named)
	}
}
