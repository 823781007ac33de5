package helmfile

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/helm-inject/helm-inject/internal/testfs"
	"gopkg.in/yaml.v3"
)

func TestParseCall(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		verb     string
		injected bool
		inject   []string
		rest     []string
	}{
		{"upgrade from helmfile",
			[]string{"--kube-context", "dev", "upgrade", "--install", "api", "./chart", "--post-renderer", "/usr/bin/helm-inject", "--post-renderer-args=--injector", "--post-renderer-args=x f=FILE", "--history-max", "10"},
			"upgrade", true, []string{"--injector", "x f=FILE"},
			[]string{"--kube-context", "dev", "upgrade", "--install", "api", "./chart", "--history-max", "10"}},
		{"diff upgrade",
			[]string{"diff", "upgrade", "--allow-unreleased", "api", "c", "--post-renderer=helm-inject", "--post-renderer-args", "--with", "--post-renderer-args", "a@1"},
			"diff", true, []string{"--with", "a@1"},
			[]string{"diff", "upgrade", "--allow-unreleased", "api", "c"}},
		{"another post-renderer is left to helm",
			[]string{"upgrade", "--install", "api", "c", "--post-renderer", "./kustomize.sh", "--post-renderer-args=x"},
			"upgrade", false, nil,
			[]string{"upgrade", "--install", "api", "c", "--post-renderer", "./kustomize.sh", "--post-renderer-args=x"}},
		{"another post-renderer's flags reach helm-inject's diff",
			[]string{"diff", "upgrade", "api", "c", "--post-renderer=./pr.sh", "--post-renderer-args", "-v", "--detailed-exitcode"},
			"diff", false, nil,
			[]string{"diff", "upgrade", "api", "c", "--detailed-exitcode", "--post-renderer=./pr.sh", "--post-renderer-args", "-v"}},
		{"plain call", []string{"version", "--short"}, "version", false, nil, []string{"version", "--short"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ParseCall(tt.args)
			if c.Verb != tt.verb || c.Injected != tt.injected {
				t.Errorf("verb %q injected %v, want %q %v", c.Verb, c.Injected, tt.verb, tt.injected)
			}
			if diff := cmp.Diff(tt.inject, c.InjectArgs); diff != "" {
				t.Errorf("inject args (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.rest, c.Rest); diff != "" {
				t.Errorf("rest (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTranslate(t *testing.T) {
	in := `repositories:
- name: stable
  url: https://charts.example
releases:
- name: myapp
  chart: repo/anychart
  injector: "istioctl kube-inject f=FILE,injectConfigFile=inject-config.yaml"
  values:
  - values.yaml
- name: api
  chart: ./api
  injectors:
  - linkerd inject,--manual,FILE
  - inject: my-injector --label 'a b' FILE
  - with: log-shipper@^1
    params:
      destination: logs:24224
    reconcile: never
  namespace: prod
- name: templated
  injector: {{ .Values.injector | quote }}
- name: plain
  chart: ./plain
`
	out, changed, err := Translate("helmfile.yaml.gotmpl", in, "/state")
	if err != nil || !changed {
		t.Fatalf("Translate: changed=%v err=%v", changed, err)
	}
	// Without the template line, the result is YAML that says exactly this.
	var got struct {
		Releases []struct {
			Name             string
			PostRenderer     string   `yaml:"postRenderer"`
			PostRendererArgs []string `yaml:"postRendererArgs"`
			Values           []string
			Namespace        string
		}
	}
	plain := strings.Replace(out, "{{ .Values.injector | quote }}", `"spec from values"`, 1)
	if err := yaml.Unmarshal([]byte(plain), &got); err != nil {
		t.Fatalf("translated state is not YAML: %v\n%s", err, out)
	}
	want := [][]string{
		{"--injector-dir", "/state", "--injector", "istioctl kube-inject f=FILE,injectConfigFile=inject-config.yaml"},
		{"--injector-dir", "/state", "--injector", "linkerd inject,--manual,FILE", "--inject", "my-injector --label 'a b' FILE",
			"--with", "log-shipper@^1", "--with-set", "log-shipper.destination=logs:24224", "--reconcile", "never"},
		{"--injector-dir", "/state", "--injector", "spec from values"},
		nil,
	}
	for i, r := range got.Releases {
		if diff := cmp.Diff(want[i], r.PostRendererArgs); diff != "" {
			t.Errorf("release %s args (-want +got):\n%s", r.Name, diff)
		}
		if (want[i] != nil) != (r.PostRenderer == Marker) {
			t.Errorf("release %s postRenderer = %q", r.Name, r.PostRenderer)
		}
	}
	if got.Releases[0].Values[0] != "values.yaml" || got.Releases[1].Namespace != "prod" {
		t.Errorf("other fields were not kept: %+v", got.Releases)
	}
	if !strings.Contains(out, "  - \"--injector\"\n    - {{ .Values.injector | quote }}") {
		t.Errorf("the template action was not copied as written:\n%s", out)
	}

	if _, changed, _ := Translate("h.yaml.gotmpl", "releases:\n- name: a\n  chart: b\n", "/"); changed {
		t.Errorf("a state file without injector fields was changed")
	}
	for _, bad := range []struct{ in, want string }{
		{"releases:\n- name: a\n  injector:\n", "h.yaml.gotmpl:3: injector: needs a value"},
		{"releases:\n- name: a\n  injectors:\n  - {{ .Values.x }}\n", "h.yaml.gotmpl:3: injectors: may not contain template actions"},
		{"releases:\n- name: a\n  postRenderer: ./pr.sh\n  injector: x FILE\n", "h.yaml.gotmpl:3: a release with injector fields may not set postRenderer"},
		// A nested list between the two fields does not hide the injector.
		{"releases:\n- name: a\n  injector: x FILE\n  values:\n  - v.yaml\n  postRenderer: ./pr.sh\n", "h.yaml.gotmpl:6: a release with injector fields may not set postRenderer"},
		{"releases:\n- name: a\n  injector: x FILE\n- name: b\n  postRenderer: ./pr.sh\n- name: c\n  postRendererArgs: [x]\n  values:\n  - v.yaml\n  injector: y FILE\n", "h.yaml.gotmpl:7: a release with injector fields may not set postRendererArgs"},
		{"releases:\n- name: a\n  injectors:\n  - params: {a: b}\n", "injectors item 1 needs one of inject, injector or with"},
	} {
		if _, _, err := Translate("h.yaml.gotmpl", bad.in, "/"); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Translate(%q) error = %v, want %q", bad.in, err, bad.want)
		}
	}
}

func TestSplitCommand(t *testing.T) {
	tests := []struct {
		args    []string
		globals []string
		command string
	}{
		{[]string{"-e", "staging", "-l", "name=api", "apply", "--skip-deps"}, []string{"-e", "staging", "-l", "name=api"}, "apply"},
		{[]string{"--file=x.yaml", "--quiet", "sync"}, []string{"--file=x.yaml", "--quiet"}, "sync"},
		{[]string{"--state-values-set", "a=b", "diff"}, []string{"--state-values-set", "a=b"}, "diff"},
		{[]string{"-k", "/bin/kustomize", "--repo-retries", "3", "sync"}, []string{"-k", "/bin/kustomize", "--repo-retries", "3"}, "sync"},
		{[]string{"--help"}, []string{"--help"}, ""},
	}
	for _, tt := range tests {
		g, c := splitCommand(tt.args)
		if c != tt.command || !cmp.Equal(g, tt.globals) {
			t.Errorf("splitCommand(%q) = %q, %q; want %q, %q", tt.args, g, c, tt.globals, tt.command)
		}
	}
}
func TestTakeFlag(t *testing.T) {
	tests := []struct {
		args  []string
		rest  []string
		value string
	}{
		{[]string{"--helm-binary", "/h", "sync"}, []string{"sync"}, "/h"},
		{[]string{"-b", "/h", "-e", "x", "sync"}, []string{"-e", "x", "sync"}, "/h"},
		{[]string{"--helm-binary=/h", "sync"}, []string{"sync"}, "/h"},
		{[]string{"-b", "/a", "--helm-binary=/b", "apply"}, []string{"apply"}, "/b"},
		// A flag with no value left is helmfile's to refuse.
		{[]string{"sync", "-b"}, []string{"sync", "-b"}, ""},
		// Another flag with the same prefix is not this one.
		{[]string{"--helm-binary-x=1", "sync"}, []string{"--helm-binary-x=1", "sync"}, ""},
	}
	for _, tt := range tests {
		rest, value := takeFlag(tt.args, "--helm-binary", "-b")
		if value != tt.value || !cmp.Equal(rest, tt.rest) {
			t.Errorf("takeFlag(%q) = %q, %q; want %q, %q", tt.args, rest, value, tt.rest, tt.value)
		}
	}
}

func TestTranslateHelmDefaults(t *testing.T) {
	in := "helmDefaults:\n  wait: true\n  injectors:\n  - inject: tagger FILE\nreleases:\n- name: a\n  chart: ./a\n"
	out, changed, err := Translate("h.yaml", in, "/s")
	if err != nil || !changed {
		t.Fatal(changed, err)
	}
	var st struct {
		HelmDefaults struct {
			Wait             bool
			PostRenderer     string   `yaml:"postRenderer"`
			PostRendererArgs []string `yaml:"postRendererArgs"`
		} `yaml:"helmDefaults"`
	}
	if err := yaml.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !st.HelmDefaults.Wait || st.HelmDefaults.PostRenderer != Marker || len(st.HelmDefaults.PostRendererArgs) != 4 || st.HelmDefaults.PostRendererArgs[3] != "tagger FILE" {
		t.Errorf("helmDefaults = %+v\n%s", st.HelmDefaults, out)
	}
}

// TestTranslateDir: a helmfile.d folder with injector fields becomes a
// hidden sibling folder with the translated state files and links to the
// rest; a folder without them is used as it is.
func TestTranslateDir(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "helmfile.d")
	files := map[string]string{
		"10-apps.yaml":         "releases:\n- name: a\n  chart: ../charts/a\n  injector: my-injector FILE\n",
		"20-plain.yaml.gotmpl": "releases:\n- name: b\n  chart: ../charts/b\n  values:\n  - values/b.yaml\n",
		"values/b.yaml":        "x: 1\n",
		"README.md":            "not a state file\n",
	}
	testfs.Write(t, dir, files)
	tr := &translation{}
	got, err := tr.dir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(got) != root || !strings.HasPrefix(filepath.Base(got), ".helm-inject-") {
		t.Fatalf("translated folder %s is not a hidden sibling of %s", got, dir)
	}
	apps, err := os.ReadFile(filepath.Join(got, "10-apps.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(apps), "postRenderer: "+Marker) || strings.Contains(string(apps), "injector:") {
		t.Errorf("10-apps.yaml was not translated:\n%s", apps)
	}
	for name, body := range files {
		if name == "10-apps.yaml" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(got, filepath.FromSlash(name)))
		if err != nil || string(data) != body {
			t.Errorf("%s in the translated folder: %q, %v; want the original", name, data, err)
		}
	}
	tr.cleanup()
	if _, err := os.Stat(got); !os.IsNotExist(err) {
		t.Errorf("cleanup left %s: %v", got, err)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "10-apps.yaml")); string(data) != files["10-apps.yaml"] {
		t.Errorf("the original state file changed")
	}

	// Nothing to translate: helmfile reads the folder itself.
	if err := os.WriteFile(filepath.Join(dir, "10-apps.yaml"), []byte("releases: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := (&translation{}).dir(dir); err != nil || got != dir {
		t.Errorf("translateDir of a folder without injectors = %s, %v; want %s", got, err, dir)
	}
	// A bad injectors: block names the file.
	if err := os.WriteFile(filepath.Join(dir, "30-bad.yaml"), []byte("releases:\n- name: c\n  injector:\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := (&translation{}).dir(dir); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "30-bad.yaml")+":3") {
		t.Errorf("error = %v, want one naming 30-bad.yaml:3", err)
	}
}

// TestTranslateReferences: local state files pulled in with bases: and
// helmfiles: are translated too, and the references point at the copies;
// globs, remote URLs, values files and files without injectors are left.
func TestTranslateReferences(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"helmfile.yaml": `bases:
- common.yaml
- "env/*.yaml"
- git::https://example.com/org/repo.git@base.yaml?ref=v1
- team/defaults.yaml
helmfiles:
- apps/helmfile.yaml   # the apps
- path: 'more/helmfile.yaml'
  values:
  - common.yaml
releases:
- name: top
  chart: ./charts/top
`,
		"common.yaml":        "releases:\n- name: c\n  chart: ./charts/c\n  injector: my-injector FILE\n",
		"apps/helmfile.yaml": "bases:\n- ../common.yaml\n- helmfile.yaml\nreleases:\n- name: a\n  chart: ../charts/a\n  injectors:\n  - inject: my-injector FILE\n",
		"more/helmfile.yaml": "releases:\n- name: m\n  chart: ../charts/m\n",
		// A second item of a different length: each item is found at the
		// first item's indentation.
		"team/defaults.yaml": "helmDefaults:\n  injector: team-injector FILE\n",
	}
	testfs.Write(t, dir, files)
	tr := &translation{}
	top, err := tr.file(filepath.Join(dir, "helmfile.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	read := func(p string) string {
		t.Helper()
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	text := read(top)
	common, _ := filepath.Glob(filepath.Join(dir, ".helm-inject-*-common.yaml"))
	apps, _ := filepath.Glob(filepath.Join(dir, "apps", ".helm-inject-*-helmfile.yaml"))
	defaults, _ := filepath.Glob(filepath.Join(dir, "team", ".helm-inject-*-defaults.yaml"))
	if len(common) != 1 || len(apps) != 1 || len(defaults) != 1 {
		t.Fatalf("translated copies: common %v, apps %v, team/defaults %v; want one each", common, apps, defaults)
	}
	for _, want := range []string{
		"- " + filepath.Base(common[0]) + "\n",
		"- \"env/*.yaml\"\n",
		"- git::https://example.com/org/repo.git@base.yaml?ref=v1\n",
		"- team/" + filepath.Base(defaults[0]) + "\n",
		"- apps/" + filepath.Base(apps[0]) + "   # the apps\n",
		"- path: 'more/helmfile.yaml'\n  values:\n  - common.yaml\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("translated helmfile.yaml lacks %q:\n%s", want, text)
		}
	}
	if c := read(common[0]); !strings.Contains(c, "postRenderer: "+Marker) {
		t.Errorf("common.yaml was not translated:\n%s", c)
	}
	// The nested file's own base is its translated sibling; the reference
	// to itself is left alone.
	// (A translated .yaml file is written by yaml.v3, which indents lists.)
	if a := read(apps[0]); !regexp.MustCompile(`- \.\./`+regexp.QuoteMeta(filepath.Base(common[0]))+`\n\s*- helmfile.yaml\n`).MatchString(a) || !strings.Contains(a, "postRenderer: "+Marker) {
		t.Errorf("apps/helmfile.yaml translated as:\n%s", a)
	}
	tr.cleanup()
	if left, _ := filepath.Glob(filepath.Join(dir, "*", ".helm-inject-*")); len(left) != 0 {
		t.Errorf("cleanup left %v", left)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".helm-inject-*")); len(left) != 0 {
		t.Errorf("cleanup left %v", left)
	}
}

// TestTranslateYAMLShapes: in a plain .yaml state file only a release's
// own fields (and helmDefaults') are injector fields, whatever the shape.
func TestTranslateYAMLShapes(t *testing.T) {
	type release struct {
		Name             string
		PostRenderer     string           `yaml:"postRenderer"`
		PostRendererArgs []string         `yaml:"postRendererArgs"`
		Values           []any            `yaml:"values"`
		Injector         any              `yaml:"injector"`
		Set              []map[string]any `yaml:"set"`
	}
	args := func(extra ...string) []string { return append([]string{"--injector-dir", "/s"}, extra...) }
	tests := []struct {
		name, in string
		want     map[string][]string // release name -> postRendererArgs (nil: untouched)
		keep     []string            // text the output must still hold
	}{
		{"a chart value named injector, block and nested",
			"releases:\n- name: vault\n  chart: hashicorp/vault\n  values:\n  - injector:\n      enabled: true\n    server:\n      injector: {image: x}\n",
			map[string][]string{"vault": nil}, []string{"enabled: true"}},
		{"a chart value named injector, flow style",
			"releases:\n- {name: vault, chart: c, values: [{injector: {enabled: false}}]}\n",
			map[string][]string{"vault": nil}, nil},
		{"a flow-style release with an injector",
			"releases:\n- {name: a, chart: c, injector: \"x FILE\"}\n",
			map[string][]string{"a": args("--injector", "x FILE")}, nil},
		{"an existing postRenderer runs after injection",
			"releases:\n- name: a\n  chart: c\n  postRenderer: ./kustomize.sh\n  postRendererArgs: [--env, prod]\n  injector: x FILE\n",
			map[string][]string{"a": args("--injector", "x FILE", "--post-renderer", "./kustomize.sh", "--post-renderer-args", "--env", "--post-renderer-args", "prod")}, nil},
		{"comments and order are kept",
			"# the shop\nreleases:\n- name: a # the api\n  chart: c\n  injector: x FILE # pinned\n  namespace: n\n",
			map[string][]string{"a": args("--injector", "x FILE")}, []string{"# the shop", "# the api", "namespace: n"}},
		{"anchors and aliases",
			"templates:\n  inj: &inj\n    - inject: x FILE\nreleases:\n- name: a\n  chart: c\n  injectors: *inj\n- name: b\n  chart: c\n  injectors: *inj\n",
			map[string][]string{"a": args("--inject", "x FILE"), "b": args("--inject", "x FILE")}, nil},
		{"several documents",
			"bases: [b.yaml]\n---\nreleases:\n- name: a\n  chart: c\n  injector: x FILE\n---\nreleases:\n- name: b\n  chart: c\n",
			map[string][]string{"a": args("--injector", "x FILE"), "b": nil}, []string{"bases:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, _, err := Translate("helmfile.yaml", tt.in, "/s")
			if err != nil {
				t.Fatal(err)
			}
			got := map[string][]string{}
			dec := yaml.NewDecoder(strings.NewReader(out))
			for {
				var doc struct{ Releases []release }
				if err := dec.Decode(&doc); err != nil {
					break
				}
				for _, r := range doc.Releases {
					if r.Injector != nil {
						t.Errorf("release %s still has an injector field:\n%s", r.Name, out)
					}
					if (r.PostRendererArgs != nil) != (r.PostRenderer == Marker) {
						t.Errorf("release %s: postRenderer %q with args %v", r.Name, r.PostRenderer, r.PostRendererArgs)
					}
					got[r.Name] = r.PostRendererArgs
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("postRendererArgs (-want +got):\n%s\n%s", diff, out)
			}
			for _, k := range tt.keep {
				if !strings.Contains(out, k) {
					t.Errorf("output lost %q:\n%s", k, out)
				}
			}
		})
	}
}

// TestTranslateGotmplOnlyReleaseFields: the text path for .gotmpl files
// only takes keys at a release item's own indentation.
func TestTranslateGotmplOnlyReleaseFields(t *testing.T) {
	in := "releases:\n- name: vault\n  chart: c\n  values:\n  - injector:\n      enabled: true\n  - server:\n      injector: x\n- name: a\n  injector: {{ .Values.spec | quote }}\n"
	out, changed, err := Translate("helmfile.yaml.gotmpl", in, "/s")
	if err != nil || !changed {
		t.Fatal(changed, err)
	}
	if !strings.Contains(out, "  - injector:\n      enabled: true\n") || !strings.Contains(out, "      injector: x\n") {
		t.Errorf("chart values were changed:\n%s", out)
	}
	if strings.Count(out, "postRenderer: "+Marker) != 1 || !strings.Contains(out, "- {{ .Values.spec | quote }}") {
		t.Errorf("release a was not translated once:\n%s", out)
	}
}

func TestFindProgram(t *testing.T) {
	bin := t.TempDir()
	onPath := filepath.Join(bin, "helm")
	if err := os.WriteFile(onPath, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	t.Setenv("HELMFILE_HELM_BINARY", "")
	find := func(given string) (string, error) {
		return findProgram(given, "HELMFILE_HELM_BINARY", "helm", "pass --helm-binary")
	}
	if got, err := find("/given/helm"); err != nil || got != "/given/helm" {
		t.Errorf("given: %q, %v", got, err)
	}
	if got, err := find(""); err != nil || got != onPath {
		t.Errorf("on PATH: %q, %v; want %q", got, err, onPath)
	}
	t.Setenv("HELMFILE_HELM_BINARY", "/env/helm")
	if got, err := find(""); err != nil || got != "/env/helm" {
		t.Errorf("from the environment: %q, %v", got, err)
	}
	t.Setenv("HELMFILE_HELM_BINARY", "")
	t.Setenv("PATH", t.TempDir())
	_, err := find("")
	if err == nil || err.Error() != "helm not found on PATH (or pass --helm-binary)" {
		t.Errorf("nowhere: %v", err)
	}
}

func TestPreflightFlags(t *testing.T) {
	got := preflightFlags([]string{"--set", "a=1", "--values=v.yaml", "--wait", "--timeout", "300", "--skip-needs", "--reuse-values=false",
		"--args", "-v", "--concurrency", "2", "--sync-args", "--x", "--post-renderer-args", "--inject",
		// helmfile's global flags after the command: the preflight selects
		// the same releases, environment and cluster.
		"-e", "prod", "--selector", "name=web", "-l=tier=db", "--kube-context", "ctx", "--skip-deps", "-i", "--detailed-exitcode",
		"--state-values-set", "x=1", "--strip-args-values-on-exit-error=false", "--set"})
	want := []string{"--set", "a=1", "--values=v.yaml", "--skip-needs", "--reuse-values=false", "--args", "-v", "--concurrency", "2", "--post-renderer-args", "--inject",
		"-e", "prod", "--selector", "name=web", "-l=tier=db", "--kube-context", "ctx", "--skip-deps",
		"--state-values-set", "x=1", "--strip-args-values-on-exit-error=false"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

// TestTranslateFieldPosition: in a .yaml state file the post-renderer
// fields take the place of the first injector or post-renderer field, so
// a reader finds them where the injector was.
func TestTranslateFieldPosition(t *testing.T) {
	for _, tt := range []struct{ name, in, want string }{
		{"injector first", "releases:\n- injector: x FILE\n  name: a\n  postRendererArgs: [y]\n  chart: c\n",
			"releases:\n  - postRenderer: helm-inject\n    postRendererArgs:\n      - \"--injector-dir\"\n      - \"/d\"\n      - \"--injector\"\n      - \"x FILE\"\n      - \"--post-renderer-args\"\n      - \"y\"\n    name: a\n    chart: c\n"},
		{"injector after name", "releases:\n- name: a\n  injector: x FILE\n  chart: c\n",
			"releases:\n  - name: a\n    postRenderer: helm-inject\n    postRendererArgs:\n      - \"--injector-dir\"\n      - \"/d\"\n      - \"--injector\"\n      - \"x FILE\"\n    chart: c\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, changed, err := Translate("h.yaml", tt.in, "/d")
			if err != nil || !changed {
				t.Fatalf("changed %v, err %v", changed, err)
			}
			if diff := cmp.Diff(tt.want, out); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

// TestTranslateGotmplShapes: .gotmpl state files in the shapes YAML
// allows: helmDefaults as the first line, an injector as a release item's
// first key, injectors as a flow list (on one line or continued), lines
// before the first top-level key (which belong to nothing), blank lines
// after an injectors list (kept), and the errors with their line.
func TestTranslateGotmplShapes(t *testing.T) {
	args := func(a ...string) string {
		return "  postRendererArgs:\n    - \"--injector-dir\"\n    - \"/d\"\n" + strings.Join(a, "")
	}
	for _, tt := range []struct{ name, in, want, err string }{
		{"helmDefaults first", "helmDefaults:\n  injector: x FILE\n",
			"helmDefaults:\n  postRenderer: helm-inject\n" + args(`    - "--injector"`+"\n", "    - x FILE\n"), ""},
		{"injector as the item's first key", "releases:\n- injector: x FILE\n  name: a\n",
			"releases:\n- postRenderer: helm-inject\n" + args(`    - "--injector"`+"\n", "    - x FILE\n") + "  name: a\n", ""},
		{"flow list on one line", "releases:\n- name: a\n  injectors: [{inject: \"x FILE\"}]\n",
			"releases:\n- name: a\n  postRenderer: helm-inject\n" + args(`    - "--inject"`+"\n", `    - "x FILE"`+"\n"), ""},
		{"flow list continued", "releases:\n- name: a\n  injectors: [{inject: some-long-injector FILE},\n      {inject: other FILE}]\n\n- name: b\n",
			"releases:\n- name: a\n  postRenderer: helm-inject\n" + args(`    - "--inject"`+"\n", `    - "some-long-injector FILE"`+"\n", `    - "--inject"`+"\n", `    - "other FILE"`+"\n") + "\n- name: b\n", ""},
		{"an indented list with a blank line", "releases:\n- name: a\n  injectors:\n      - inject: x FILE\n\n      - with: sidecar@1\n        params: {p: v}\n- name: b\n",
			"releases:\n- name: a\n  postRenderer: helm-inject\n" + args(`    - "--inject"`+"\n", `    - "x FILE"`+"\n", `    - "--with"`+"\n", `    - "sidecar@1"`+"\n", `    - "--with-set"`+"\n", `    - "sidecar.p=v"`+"\n") + "- name: b\n", ""},
		{"before the first top-level key", " injector: x FILE\nreleases:\n- name: a\n", " injector: x FILE\nreleases:\n- name: a\n", ""},
		{"not a list", "releases:\n- name: a\n  injectors:\n    inject: x\n", "", "h.yaml.gotmpl:3: injectors: must be a list: not a list"},
		{"an item without a spec", "releases:\n- name: a\n  chart: c\n  injectors:\n  - params: {a: b}\n", "", "h.yaml.gotmpl:4: injectors item 1 needs one of inject, injector or with"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, _, err := Translate("h.yaml.gotmpl", tt.in, "/d")
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, out); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}
