package release

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v4/pkg/cli"

	"github.com/helm-inject/helm-inject/inject"
	"github.com/helm-inject/helm-inject/manifest"
)

// renamer is a post-renderer that adds a suffix to every name it is given
// and records what it was given.
type renamer struct{ seen *[]string }

func (r renamer) Run(in *bytes.Buffer) (*bytes.Buffer, error) {
	*r.seen = append(*r.seen, in.String())
	return bytes.NewBufferString(strings.ReplaceAll(in.String(), "\n  name: ", "\n  name: pr-")), nil
}

// TestPostRendererOnTheRelease: the post-renderer runs once, on the
// manifests (each led by its "# Source:"), not on hooks; the release
// stores its output and the hooks as they were; the SDK's own call is
// answered from the plan, so the program does not run twice.
func TestPostRendererOnTheRelease(t *testing.T) {
	cfg, src := apiRelease(t)
	var seen []string
	a := NewApply(cfg)
	a.Inputs = Inputs{Namespace: "shop", Injectors: &inject.Declared{}}
	a.Render.PostRenderer = renamer{&seen}
	res, err := a.Run(t.Context(), "demo", src, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 {
		t.Fatalf("the post-renderer ran %d times, want once", len(seen))
	}
	if !strings.HasPrefix(seen[0], "---\n# Source: api/templates/") || strings.Contains(seen[0], "helm.sh/hook") {
		t.Errorf("the post-renderer was given:\n%s", seen[0])
	}
	if !strings.Contains(res.Release.Manifest, "name: pr-demo-config") {
		t.Errorf("the stored manifest is not the post-renderer's:\n%s", res.Release.Manifest)
	}
	if len(res.Release.Hooks) == 0 {
		t.Fatal("the api chart's test hook is gone")
	}
	// template prints what apply stores: the post-rendered manifests,
	// once, and the hooks.
	var printed bytes.Buffer
	tr, err := (&Template{Inputs: a.Inputs}).Run(t.Context(), "demo", src, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteManifests(&printed, tr, PrintOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(printed.String(), "name: pr-demo-config") || strings.Contains(printed.String(), "name: demo-config") {
		t.Errorf("template printed:\n%s", printed.String())
	}
	for _, h := range res.Release.Hooks {
		if strings.Contains(h.Manifest, "name: pr-") {
			t.Errorf("hook %s was post-rendered:\n%s", h.Name, h.Manifest)
		}
	}
}

// TestNewPostRenderer: --post-renderer NAME is helm 4's postrenderer/v1
// plugin of that name when one is installed, an executable otherwise (a
// path, or a name on PATH); neither is an error that says both were
// looked for.
func TestNewPostRenderer(t *testing.T) {
	plugins := t.TempDir()
	bin := t.TempDir()
	writeExec := func(path, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A plugin and an executable of the same name: the plugin wins.
	dir := filepath.Join(plugins, "stamp")
	writeExec(filepath.Join(dir, "run.sh"), `cat; echo "# by the plugin $1"`)
	if err := os.WriteFile(filepath.Join(dir, "plugin.yaml"), []byte("apiVersion: v1\nname: stamp\ntype: postrenderer/v1\nruntime: subprocess\nversion: 0.1.0\nruntimeConfig:\n  platformCommand:\n    - command: \"${HELM_PLUGIN_DIR}/run.sh\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeExec(filepath.Join(bin, "stamp"), `cat; echo "# by the executable $1"`)
	writeExec(filepath.Join(bin, "only-exec"), `cat; echo "# by only-exec $1"`)
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	settings := cli.New()
	settings.PluginsDirectory = plugins

	in := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n"
	for _, tt := range []struct{ name, want string }{
		{"stamp", "# by the plugin x"},
		{"only-exec", "# by only-exec x"},
		{filepath.Join(bin, "stamp"), "# by the executable x"},
	} {
		pr, err := NewPostRenderer(t.Context(), settings, tt.name, "x")
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		out, err := pr.Run(bytes.NewBufferString(in))
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if !strings.HasPrefix(out.String(), in) || !strings.Contains(out.String(), tt.want) {
			t.Errorf("%s: output %q, want the input and %q", tt.name, out, tt.want)
		}
	}
	if _, err := NewPostRenderer(t.Context(), settings, "nowhere"); err == nil || !strings.Contains(err.Error(), `no postrenderer/v1 plugin named "nowhere" and no executable there`) {
		t.Errorf("an unknown post-renderer: %v", err)
	}
	// An executable that fails: its stderr is in the error.
	writeExec(filepath.Join(bin, "broken"), `echo "cannot parse" >&2; exit 3`)
	pr, err := NewPostRenderer(t.Context(), settings, "broken")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pr.Run(bytes.NewBufferString(in)); err == nil || !strings.Contains(err.Error(), "exit status 3: cannot parse") {
		t.Errorf("a failing post-renderer: %v", err)
	}
	writeExec(filepath.Join(bin, "silent"), `cat > /dev/null`)
	if pr, err = NewPostRenderer(t.Context(), settings, "silent"); err != nil {
		t.Fatal(err)
	}
	if _, err := pr.Run(bytes.NewBufferString(in)); err == nil || !strings.Contains(err.Error(), "produced no output") {
		t.Errorf("a post-renderer that prints nothing: %v", err)
	}
	// Ctrl-C (a cancelled context) stops a running executable and says so.
	writeExec(filepath.Join(bin, "slow"), `exec sleep 60`)
	ctx, cancel := context.WithCancel(t.Context())
	if pr, err = NewPostRenderer(ctx, settings, "slow"); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(100*time.Millisecond, cancel)
	if _, err := pr.Run(bytes.NewBufferString(in)); err == nil || !strings.Contains(err.Error(), "slow: interrupted: context canceled") {
		t.Errorf("an interrupted post-renderer: %v", err)
	}
}

// funcRenderer is a post-renderer made of a function.
type funcRenderer func(string) string

func (f funcRenderer) Run(in *bytes.Buffer) (*bytes.Buffer, error) {
	return bytes.NewBufferString(f(in.String())), nil
}

// TestPostRenderSources: documents the post-renderer returns with a
// "# Source:" of the chart keep it; one without (kustomize drops comments,
// or a resource it added) goes to templates/generated-by-postrender.yaml;
// hooks are not given to it and stay.
func TestPostRenderSources(t *testing.T) {
	var docs []manifest.Document
	for _, d := range [][2]string{
		{"api/templates/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a"},
		{"api/templates/test.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: t\n  annotations:\n    helm.sh/hook: test"},
	} {
		doc, err := manifest.Parse(d[0], d[1])
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, doc)
	}
	added := "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: added\n"
	out, err := postRender("api", docs, funcRenderer(func(in string) string {
		return in + added + "---\n# Source: other/x.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: foreign\n"
	}))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range out {
		got = append(got, d.ID.Name+" "+d.Source+" "+d.Hook)
	}
	want := []string{
		"a api/templates/cm.yaml ",
		"added api/templates/generated-by-postrender.yaml ",
		"foreign api/templates/generated-by-postrender.yaml ",
		"t api/templates/test.yaml test",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("documents after the post-renderer (-want +got):\n%s", diff)
	}
}

// TestPostRendererStderrHidesSecretValues: a post-renderer that fails and
// quotes its input on stderr (whole, one value, a decoded value, a line
// of one, a stringData value) gets no value of a Secret it was given into
// helm-inject's error; its own message stays.
func TestPostRendererStderrHidesSecretValues(t *testing.T) {
	const plain, line2 = "correct-horse-battery", "second-line-4711"
	encoded := base64.StdEncoding.EncodeToString([]byte(plain + "\n" + line2))
	secret, err := manifest.Parse("api/templates/secret.yaml", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\ndata:\n  password: "+encoded+"\nstringData:\n  token: plain-string-data-0815")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	for name, body := range map[string]string{
		"its input":          `cat >&2; echo "bad input" >&2; exit 1`,
		"one encoded value":  `echo "cannot parse ` + encoded + `: bad input" >&2; exit 1`,
		"a decoded value":    `echo "user ` + plain + ` rejected: bad input" >&2; exit 1`,
		"one decoded line":   `echo "line ` + line2 + ` rejected: bad input" >&2; exit 1`,
		"a stringData value": `echo "token plain-string-data-0815: bad input" >&2; exit 1`,
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(bin, strings.ReplaceAll(name, " ", "-"))
			if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			pr, err := NewPostRenderer(t.Context(), nil, path)
			if err != nil {
				t.Fatal(err)
			}
			_, err = postRender("api", []manifest.Document{secret}, pr)
			if err == nil {
				t.Fatal("a failing post-renderer was accepted")
			}
			for _, v := range []string{plain, line2, encoded, "plain-string-data-0815"} {
				if strings.Contains(err.Error(), v) {
					t.Errorf("the error quotes %q:\n%s", v, err)
				}
			}
			if !strings.Contains(err.Error(), "exit status 1") || (name != "its input" && !strings.Contains(err.Error(), "bad input")) {
				t.Errorf("the error lost the post-renderer's own message:\n%s", err)
			}
		})
	}
}
