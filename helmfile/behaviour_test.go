package helmfile

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/helm-inject/helm-inject/internal/testfs"
)

// releaseArgs reads the postRenderer and postRendererArgs of each release
// of a translated .yaml state file.
func releaseArgs(t *testing.T, text string) map[string][]string {
	t.Helper()
	var st struct {
		Releases []struct {
			Name             string   `yaml:"name"`
			PostRenderer     string   `yaml:"postRenderer"`
			PostRendererArgs []string `yaml:"postRendererArgs"`
		} `yaml:"releases"`
	}
	if err := yaml.Unmarshal([]byte(text), &st); err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	out := map[string][]string{}
	for _, r := range st.Releases {
		out[r.Name] = append([]string{r.PostRenderer}, r.PostRendererArgs...)
	}
	return out
}

// TestInjectorDirIsTheStateFilesFolder: --injector-dir is the absolute
// folder of the state file, also when the wrapper is given a relative
// path (-f apps/helmfile.yaml, or helmfile.yaml in the current folder).
// A user would otherwise see a relative injectConfigFile looked up from
// wherever helmfile runs helm, and not found.
func TestInjectorDirIsTheStateFilesFolder(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	state := "releases:\n- name: a\n  chart: ./c\n  injector: x f=FILE,injectConfigFile=inject-config.yaml\n"
	testfs.Write(t, dir, map[string]string{"apps/helmfile.yaml": state, "helmfile.yaml": state})
	for _, tt := range []struct{ given, want string }{
		{"apps/helmfile.yaml", filepath.Join(dir, "apps")},
		{"helmfile.yaml", dir},
		{"./apps/../helmfile.yaml", dir},
	} {
		tr := &translation{}
		got, err := tr.file(tt.given)
		if err != nil {
			t.Fatal(err)
		}
		text, err := os.ReadFile(got)
		tr.cleanup()
		if err != nil {
			t.Fatal(err)
		}
		want := []string{Marker, "--injector-dir", tt.want, "--injector", "x f=FILE,injectConfigFile=inject-config.yaml"}
		if diff := cmp.Diff(map[string][]string{"a": want}, releaseArgs(t, string(text))); diff != "" {
			t.Errorf("-f %s (-want +got)\n%s", tt.given, diff)
		}
	}
}

// TestTranslateDirGotmpl: in a helmfile.d folder, .yaml.gotmpl and .yml
// state files are translated as .yaml ones are. A user would otherwise
// see helmfile reject the injector: field of a templated state file.
func TestTranslateDirGotmpl(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "helmfile.d")
	testfs.Write(t, dir, map[string]string{
		"10-apps.yaml.gotmpl": "releases:\n- name: a\n  chart: ../charts/a\n  injector: {{ .Values.spec | quote }}\n",
		"20-more.yml":         "releases:\n- name: b\n  chart: ../charts/b\n  injector: my-injector FILE\n",
	})
	tr := &translation{}
	defer tr.cleanup()
	got, err := tr.dir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got == dir {
		t.Fatalf("the folder was handed to helmfile untranslated")
	}
	gotmpl, err := os.ReadFile(filepath.Join(got, "10-apps.yaml.gotmpl"))
	if err != nil {
		t.Fatal(err)
	}
	want := "releases:\n- name: a\n  chart: ../charts/a\n  postRenderer: helm-inject\n  postRendererArgs:\n    - \"--injector-dir\"\n    - \"" + dir + "\"\n    - \"--injector\"\n    - {{ .Values.spec | quote }}\n"
	if diff := cmp.Diff(want, string(gotmpl)); diff != "" {
		t.Errorf("10-apps.yaml.gotmpl (-want +got)\n%s", diff)
	}
	yml, err := os.ReadFile(filepath.Join(got, "20-more.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string][]string{"b": {Marker, "--injector-dir", dir, "--injector", "my-injector FILE"}}, releaseArgs(t, string(yml))); diff != "" {
		t.Errorf("20-more.yml (-want +got)\n%s", diff)
	}
}

// TestTranslateHelmfilesPathItem: a nested state file named in the
// helmfiles: form "- path: FILE" (quoted or not, with values below it) is
// translated, and the reference points at the copy. A user would
// otherwise see helmfile reject the nested file's injector: field.
func TestTranslateHelmfilesPathItem(t *testing.T) {
	dir := t.TempDir()
	nested := "releases:\n- name: a\n  chart: ./c\n  injector: my-injector FILE\n"
	testfs.Write(t, dir, map[string]string{
		"helmfile.yaml":      "helmfiles:\n- path: apps/helmfile.yaml\n  values:\n  - v.yaml\n- path: \"web/helmfile.yaml\"\nreleases: []\n",
		"apps/helmfile.yaml": nested,
		"web/helmfile.yaml":  nested,
		"v.yaml":             "x: 1\n",
	})
	tr := &translation{}
	defer tr.cleanup()
	top, err := tr.file(filepath.Join(dir, "helmfile.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	apps, _ := filepath.Glob(filepath.Join(dir, "apps", ".helm-inject-*-helmfile.yaml"))
	web, _ := filepath.Glob(filepath.Join(dir, "web", ".helm-inject-*-helmfile.yaml"))
	if len(apps) != 1 || len(web) != 1 {
		t.Fatalf("translated copies: apps %v, web %v; want one each", apps, web)
	}
	text, err := os.ReadFile(top)
	if err != nil {
		t.Fatal(err)
	}
	want := "helmfiles:\n- path: apps/" + filepath.Base(apps[0]) + "\n  values:\n  - v.yaml\n- path: \"web/" + filepath.Base(web[0]) + "\"\nreleases: []\n"
	if diff := cmp.Diff(want, string(text)); diff != "" {
		t.Errorf("helmfile.yaml (-want +got)\n%s", diff)
	}
}

// TestTranslateLeavesOwnPostRenderer: a release with its own postRenderer
// and no injector field is not an injected release: a file of such
// releases is not changed, and beside an injected release it keeps its
// post-renderer. A user would otherwise see plain releases run through
// helm-inject's pipeline.
func TestTranslateLeavesOwnPostRenderer(t *testing.T) {
	own := "releases:\n- name: a\n  chart: c\n  postRenderer: ./kustomize.sh\n  postRendererArgs: [--env, prod]\n"
	out, changed, err := Translate("helmfile.yaml", own, "/s")
	if err != nil || changed || out != own {
		t.Errorf("Translate = changed %v, err %v:\n%s\nwant the file unchanged", changed, err, out)
	}
	out, changed, err = Translate("helmfile.yaml", own+"- name: b\n  chart: c\n  injector: x FILE\n", "/s")
	if err != nil || !changed {
		t.Fatalf("changed %v, err %v", changed, err)
	}
	want := map[string][]string{
		"a": {"./kustomize.sh", "--env", "prod"},
		"b": {Marker, "--injector-dir", "/s", "--injector", "x FILE"},
	}
	if diff := cmp.Diff(want, releaseArgs(t, out)); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

// TestNeedsPreflight: sync always runs the preflight diff; apply only
// with --skip-diff-on-install (or =true), which leaves new releases out of
// its own diff; other commands never. A user would otherwise see a broken
// injector found only after other releases were upgraded.
func TestNeedsPreflight(t *testing.T) {
	for _, tt := range []struct {
		command string
		args    []string
		want    bool
	}{
		{"sync", nil, true},
		{"sync", []string{"--skip-deps"}, true},
		{"apply", nil, false},
		{"apply", []string{"--skip-diff-on-install"}, true},
		{"apply", []string{"--wait", "--skip-diff-on-install=true"}, true},
		{"apply", []string{"--skip-diff-on-install=false"}, false},
		{"diff", []string{"--skip-diff-on-install"}, false},
		{"template", nil, false},
		{"destroy", nil, false},
	} {
		if got := needsPreflight(tt.command, tt.args); got != tt.want {
			t.Errorf("needsPreflight(%s %q) = %v, want %v", tt.command, tt.args, got, tt.want)
		}
	}
}

// TestDefaultStateFile: without --file the wrapper translates what
// helmfile reads by default: helmfile.yaml, helmfile.yaml.gotmpl,
// helmfile.yml, helmfile.yml.gotmpl, and only when there is none of them
// the helmfile.d folder. A user would otherwise see other releases run
// than helmfile alone runs in that folder.
func TestDefaultStateFile(t *testing.T) {
	for _, tt := range []struct {
		name  string
		files []string
		args  []string
		want  string
	}{
		{"helmfile.yaml before helmfile.d", []string{"helmfile.yaml", "helmfile.d/a.yaml"}, nil, "helmfile.yaml"},
		{"helmfile.yaml before its .gotmpl", []string{"helmfile.yaml.gotmpl", "helmfile.yaml"}, nil, "helmfile.yaml"},
		{"helmfile.yaml.gotmpl before helmfile.d", []string{"helmfile.yaml.gotmpl", "helmfile.d/a.yaml"}, nil, "helmfile.yaml.gotmpl"},
		{"helmfile.yml before helmfile.d", []string{"helmfile.yml", "helmfile.d/a.yaml"}, nil, "helmfile.yml"},
		{"helmfile.yml.gotmpl before helmfile.d", []string{"helmfile.yml.gotmpl", "helmfile.d/a.yaml"}, nil, "helmfile.yml.gotmpl"},
		{"helmfile.d alone", []string{"helmfile.d/a.yaml"}, nil, "helmfile.d"},
		{"nothing", []string{"other.yaml"}, nil, ""},
		{"--file given", []string{"helmfile.yaml", "other.yaml"}, []string{"--file", "other.yaml"}, "other.yaml"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			files := map[string]string{}
			for _, f := range tt.files {
				files[f] = "releases: []\n"
			}
			testfs.Write(t, dir, files)
			t.Chdir(dir)
			rest, got, err := stateFileArg(append(tt.args, "sync"))
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want || !cmp.Equal(rest, []string{"sync"}) {
				t.Errorf("stateFileArg = %q, %q; want %q, [sync]", rest, got, tt.want)
			}
		})
	}
}
