package argocd

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v4/pkg/strvals"

	"github.com/helm-inject/helm-inject/inject"
	"github.com/helm-inject/helm-inject/internal/budget"
	"github.com/helm-inject/helm-inject/internal/reporoot"
	"github.com/helm-inject/helm-inject/internal/testfs"
)

const testChart = "apiVersion: v2\nname: web\nversion: 0.1.0\n"

// prepareRepo writes a repository with the application apps/web (a
// chart), files inside and outside it, and the links the tests go
// through; it returns the folder above the repository, the repository
// and the application's folder.
func prepareRepo(t *testing.T, files map[string]string) (top, repo, app string) {
	t.Helper()
	top = t.TempDir()
	repo = filepath.Join(top, "repo")
	app = filepath.Join(repo, "apps", "web")
	base := map[string]string{
		"repo/apps/web/Chart.yaml":       testChart,
		"repo/apps/web/values.yaml":      "replicas: 1\n",
		"repo/apps/web/templates/x.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
		"repo/apps/web/files/cfg.txt":    "from the repository\n",
		// The links below are not the chart's.
		"repo/apps/web/.helmignore": "link.yaml\ns\n",
		"repo/envs/prod.yaml":       "replicas: 3\nimage: {tag: prod}\n",
		// Decoys: what "s/../../outside/..." names once cleaned lexically.
		"repo/apps/outside/secret.yaml": "decoy: true\n",
		"outside/secret.yaml":           "secret: sidecar\n",
		"outside/chart/Chart.yaml":      testChart,
		"outside/lib/x/1.0.0.yaml":      "",
	}
	for k, v := range files {
		base[k] = v
	}
	testfs.Write(t, top, base)
	if err := os.Symlink(filepath.Join(top, "outside", "secret.yaml"), filepath.Join(app, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	// A link whose target is inside the repository (Argo CD lets it
	// through), with ".." after it: the kernel's "s/.." is "apps/..".
	if err := os.Symlink("..", filepath.Join(app, "s")); err != nil {
		t.Fatal(err)
	}
	return top, repo, app
}

func webRequest(p Params) *Request {
	return &Request{Release: "web", Namespace: "shop", SourcePath: "apps/web", KubeVersion: "1.31.4", APIVersions: []string{"apps/v1"}, Params: p}
}

// TestPrepareValues: the values an application's parameters give, merged
// as helm template merges its flags (values files in order, the inline
// values, then set, set-string and set-file), each typed as helm types
// it, with Argo CD's escaping of set values.
func TestPrepareValues(t *testing.T) {
	_, _, app := prepareRepo(t, nil)
	tests := []struct {
		name   string
		params Params
		want   map[string]any
	}{
		{name: "none", want: map[string]any{}},
		{
			name:   "files in order, then inline values, then set",
			params: Params{ValuesFiles: []string{"values.yaml", "../../envs/prod.yaml"}, Values: "image:\n  pull: Always\nreplicas: 4\n", Set: map[string]string{"replicas": "5", "image.tag": "x"}},
			want:   map[string]any{"replicas": int64(5), "image": map[string]any{"tag": "x", "pull": "Always"}},
		},
		{
			name:   "a values file through a link inside the repository",
			params: Params{ValuesFiles: []string{"s/../envs/prod.yaml"}},
			want:   map[string]any{"replicas": float64(3), "image": map[string]any{"tag": "prod"}},
		},
		{
			// As Argo CD's util/helm: a list in braces is kept, an
			// escaped comma stays escaped once, a bare one is escaped.
			name:   "set values escaped as Argo CD's Helm source type",
			params: Params{Set: map[string]string{"list": "{a,b}", "esc": `a\,b`, "bare": "a,b,c", "plain": "7", "zero": "007"}},
			want:   map[string]any{"list": []any{"a", "b"}, "esc": "a,b", "bare": "a,b,c", "plain": int64(7), "zero": "007"},
		},
		{
			name:   "set-string keeps text",
			params: Params{SetString: map[string]string{"n": "007", "i": "12", "b": "true", "s": "1,2", `a\.b`: "dotted"}},
			want:   map[string]any{"n": "007", "i": "12", "b": "true", "s": "1,2", "a.b": "dotted"},
		},
		{
			name:   "set-file reads the file's content, not a second entry",
			params: Params{SetFile: map[string]string{"cfg": "files/cfg.txt", "list[0].c": "s/web/files/cfg.txt"}},
			want:   map[string]any{"cfg": "from the repository\n", "list": []any{map[string]any{"c": "from the repository\n"}}},
		},
		{
			name:   "set after set-string after files",
			params: Params{ValuesFiles: []string{"values.yaml"}, Set: map[string]string{"replicas": "2"}, SetString: map[string]string{"replicas": "3"}, SetFile: map[string]string{"replicas": "files/cfg.txt"}},
			want:   map[string]any{"replicas": "from the repository\n"},
		},
		{
			name:   "a missing values file left out under ignore-missing-value-files",
			params: Params{ValuesFiles: []string{"nope.yaml", "values.yaml"}, IgnoreMissingValues: true},
			want:   map[string]any{"replicas": float64(1)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, err := webRequest(tt.params).Prepare(app, Policy{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, in.Values); diff != "" {
				t.Errorf("values (-want +got)\n%s", diff)
			}
		})
	}
}

// TestPrepareRefusesSmuggledEntries: a key that would end one entry of
// Helm's strvals syntax and start another (the "=" or "," of
// "file=/etc/passwd,a") is refused, naming the parameter and the key, for
// every map parameter; an escaped one is part of the key.
func TestPrepareRefusesSmuggledEntries(t *testing.T) {
	_, _, app := prepareRepo(t, nil)
	for _, tt := range []struct {
		name    string
		params  Params
		wantErr string
	}{
		{"a set-file key with a file pair", Params{SetFile: map[string]string{"file=/etc/passwd,a": "files/cfg.txt"}}, `set-file key "file=/etc/passwd,a" holds '='`},
		{"a set-file key with a URL pair", Params{SetFile: map[string]string{"url=http://127.0.0.1:9/token,b": "files/cfg.txt"}}, `set-file key "url=http://127.0.0.1:9/token,b" holds '='`},
		{"a set-file key with a comma", Params{SetFile: map[string]string{"a,b": "files/cfg.txt"}}, `set-file key "a,b" holds ','`},
		{"a set key", Params{Set: map[string]string{"a=1,b": "2"}}, `set key "a=1,b" holds '='`},
		{"a set-string key", Params{SetString: map[string]string{"a,b": "2"}}, `set-string key "a,b" holds ','`},
		{"a with-set key", Params{With: []string{"sidecar"}, WithSet: map[string]string{"sidecar.a=1,b": "2"}}, `with-set key "sidecar.a=1,b" holds '='`},
		{"a list and a second entry", Params{Set: map[string]string{"a": "{x},b=1"}}, `set "a": a value that starts with "{" is a list, {a,b}, and nothing after it`},
		{"a with-set list and a second entry", Params{With: []string{"sidecar"}, WithSet: map[string]string{"sidecar.a": "{x},b=1"}}, `with-set "sidecar.a": a value that starts with "{" is a list`},
		{"a trailing backslash", Params{Set: map[string]string{`a\`: "1"}}, `set key "a\\" ends in a backslash`},
		{"an empty key", Params{Set: map[string]string{"": "1"}}, `set: an empty key`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := webRequest(tt.params).Prepare(app, Policy{})
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), "application web: ") {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
		})
	}
	in, err := webRequest(Params{Set: map[string]string{`a\=b\,c`: "1"}}).Prepare(app, Policy{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"a=b,c": int64(1)}, in.Values); diff != "" {
		t.Errorf("escaped key (-want +got)\n%s", diff)
	}
}

// TestPrepareStaysInTheRepository: every file an application names is
// read through the repository's root: a path that leaves it by "..", by
// a link, by a link and ".." (the kernel's order, not the lexical
// decoy), or absolutely, is refused, naming the parameter and the path
// as written and never the server's folders; so is a link inside the
// chart that leads out. Links that stay inside work.
func TestPrepareStaysInTheRepository(t *testing.T) {
	top, repo, app := prepareRepo(t, map[string]string{
		"repo/apps/linked/Chart.yaml":         testChart,
		"repo/apps/linked/templates/cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: linked\n",
		"repo/apps/leaky/Chart.yaml":          testChart,
		"repo/apps/leakydir/Chart.yaml":       testChart,
		"repo/shared/_helpers.tpl":            "{{- define \"x\" }}shared{{ end }}\n",
		"repo/apps/web/helm-inject-pins.yaml": "injectors: {}\n",
	})
	for link, target := range map[string]string{
		"apps/linked/templates/_helpers.tpl": "../../../shared/_helpers.tpl",
		"apps/leaky/templates/secret.yaml":   filepath.Join(top, "outside", "secret.yaml"),
		"apps/leakydir/templates":            "../../../outside",
	} {
		p := filepath.Join(repo, filepath.FromSlash(link))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	allow := Policy{Library: "/nonexistent"}
	for _, tt := range []struct {
		name    string
		params  Params
		wantErr string
	}{
		{"a values file out by ..", Params{ValuesFiles: []string{"../../../outside/secret.yaml"}}, `values file "../../../outside/secret.yaml" is outside the repository`},
		{"a values file through a link out", Params{ValuesFiles: []string{"link.yaml"}}, `values file "link.yaml" is outside the repository`},
		{"a values file through a link and ..", Params{ValuesFiles: []string{"s/../../outside/secret.yaml"}}, `values file "s/../../outside/secret.yaml" is outside the repository`},
		{"a missing values file beyond a link and ..", Params{ValuesFiles: []string{"s/../../elsewhere/none.yaml"}, IgnoreMissingValues: true}, `values file "s/../../elsewhere/none.yaml" is outside the repository`},
		{"an absolute values file", Params{ValuesFiles: []string{filepath.Join(top, "outside", "secret.yaml")}}, `give a path relative to the application's folder`},
		{"a values URL", Params{ValuesFiles: []string{"http://127.0.0.1:9/v.yaml"}}, `values file "http://127.0.0.1:9/v.yaml": give a path relative`},
		{"a missing values file", Params{ValuesFiles: []string{"s/web/nope.yaml"}}, `values file "s/web/nope.yaml" does not exist in the repository`},
		{"a set-file through a link", Params{SetFile: map[string]string{"cfg": "link.yaml"}}, `set-file cfg "link.yaml" is outside the repository`},
		{"a set-file URL", Params{SetFile: map[string]string{"cfg": "http://127.0.0.1:9/token"}}, `set-file cfg "http://127.0.0.1:9/token": give a path relative`},
		{"a chart through a link and ..", Params{Chart: "s/../../outside/chart"}, `chart "s/../../outside/chart" is outside the repository`},
		{"a remote chart", Params{Chart: "oci://registry.example/charts/web"}, `chart "oci://registry.example/charts/web": give a path relative`},
		{"a link in the chart to a file outside", Params{Chart: "../leaky"}, `chart apps/leaky: templates/secret.yaml: outside the repository`},
		{"a linked folder in the chart outside", Params{Chart: "../leakydir"}, `chart apps/leakydir: templates: outside the repository`},
		{"a library through a link and ..", Params{With: []string{"x"}, InjectorLibrary: "s/../../outside/lib"}, `injector library "s/../../outside/lib" is outside the repository`},
		{"a library out by ..", Params{With: []string{"x"}, InjectorLibrary: "../../../outside/lib"}, `injector library "../../../outside/lib" is outside the repository`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := webRequest(tt.params).Prepare(app, allow)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
			// The message may quote what the application wrote, and
			// nothing else of the server.
			if msg := strings.ReplaceAll(err.Error(), filepath.Join(top, "outside", "secret.yaml"), "PATH"); strings.Contains(msg, top) || strings.Contains(msg, "secret: sidecar") {
				t.Errorf("the message shows the server's folders or the outside file: %v", err)
			}
		})
	}
	in, err := webRequest(Params{Chart: "../linked"}).Prepare(app, Policy{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range in.Source.Chart.Templates {
		names = append(names, f.Name)
	}
	if want := []string{"templates/_helpers.tpl", "templates/cm.yaml"}; !slices.Equal(names, want) {
		t.Errorf("a chart with a link inside the repository loads %v, want %v", names, want)
	}
	if in.Source.Ref != "apps/linked" {
		t.Errorf("the chart is named %q, want its repository path apps/linked", in.Source.Ref)
	}
}

// TestPrepareTemplate: what the application's parameters and Argo CD's
// environment set on the template action besides the values: release,
// namespace, capabilities, CRDs and tests, schema validation that loads
// nothing, the injectors' hooks settings.
func TestPrepareTemplate(t *testing.T) {
	_, _, app := prepareRepo(t, nil)
	in, err := webRequest(Params{SkipCRDs: true, SkipTests: true, SkipSchema: true, SkipInjectHooks: true, SkipInjectTests: true}).Prepare(app, Policy{})
	if err != nil {
		t.Fatal(err)
	}
	tp := in.Template
	got := []any{in.Release, tp.Namespace, tp.KubeVersion, tp.Render.APIVersions, tp.Render.SchemaLoadsNothing, tp.SkipSchemaValidation,
		in.Print.IncludeCRDs, in.Print.SkipTests, tp.Injectors.SkipHooks, tp.Injectors.SkipTests, tp.Injectors.Timeout, tp.Pins == nil}
	want := []any{"web", "shop", "1.31.4", []string{"apps/v1"}, true, true, false, true, true, true, inject.DefaultTimeout, true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	in, err = webRequest(Params{}).Prepare(app, Policy{})
	if err != nil {
		t.Fatal(err)
	}
	if !in.Print.IncludeCRDs || in.Print.SkipTests || in.Template.SkipSchemaValidation || !in.Template.Render.SchemaLoadsNothing || in.Template.Injectors.SkipHooks {
		t.Errorf("defaults: print %+v, template skip schema %v, loads nothing %v, skip hooks %v",
			in.Print, in.Template.SkipSchemaValidation, in.Template.Render.SchemaLoadsNothing, in.Template.Injectors.SkipHooks)
	}
	if _, err := (&Request{}).Prepare(app, Policy{}); err == nil || !strings.Contains(err.Error(), `ARGOCD_APP_NAME is not set and no "release-name" parameter is given`) {
		t.Errorf("no release: %v", err)
	}
}

// specNames are the names of a declaration's injectors, in order.
func specNames(d *inject.Declared) []string {
	var out []string
	for _, s := range d.Specs {
		out = append(out, s.Name())
	}
	return out
}

// TestPrepareInjectors: the application's injectors in order (its helm-x
// specs, its command lines, the operator's named ones, the built-in
// ones), each external program allowed by the operator, built-in ones
// from the application's library (read through the repository) or the
// operator's, at the pinned version.
func TestPrepareInjectors(t *testing.T) {
	root, err := reporoot.Find()
	if err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(root, "fixtures", "injectors", "library")
	_, repo, app := prepareRepo(t, nil)
	// The application's own copy of the library.
	if err := os.CopyFS(filepath.Join(repo, "libs", "injectors"), os.DirFS(lib)); err != nil {
		t.Fatal(err)
	}
	pins := "injectors:\n  sidecar:\n    constraint: ^1\n    version: 1.0.0\n    digest: sha256:cd2cb8bb0a47d9dd00b2417610e53aba49163b1fccaee685eeee1ae73d7943c6\n"
	testfs.Write(t, app, map[string]string{inject.PinsFileName: pins})
	pol := Policy{AllowedCommands: []string{"linkerd", "my-injector"}, Library: lib, Injectors: map[string]*OperatorInjector{"fixed": {Name: "fixed", Command: []string{"log-shipper", "FILE"}}}}
	for _, tt := range []struct {
		name    string
		params  Params
		policy  Policy
		want    []string
		wantErr string
	}{
		{name: "every kind, in order", params: Params{With: []string{"sidecar@^1"}, OperatorInjector: []string{"fixed"}, Inject: []string{"my-injector --label 'a b' FILE"}, Injector: []string{"linkerd inject,--manual,FILE"}},
			policy: pol, want: []string{"linkerd inject,--manual,FILE", "my-injector --label 'a b' FILE", "log-shipper FILE", "sidecar@^1"}},
		{name: "no with: what the pins file pins", policy: pol, want: []string{"sidecar@^1"}},
		{name: "the application's library", params: Params{With: []string{"sidecar"}, InjectorLibrary: "../../libs/injectors"}, policy: Policy{}, want: []string{"sidecar"}},
		{name: "a program not allowed", params: Params{Inject: []string{"linkerd2 inject FILE"}}, policy: pol, wantErr: `injector "linkerd2 inject FILE" runs "linkerd2", which this plugin does not allow (allowed: linkerd, my-injector; the operator lists programs in --allowed-commands in the plugin's plugin.yaml`},
		{name: "no program allowed", params: Params{Inject: []string{"linkerd inject FILE"}}, wantErr: "(allowed: none;"},
		{name: "built-ins without a library", params: Params{With: []string{"sidecar"}}, wantErr: "built-in injectors sidecar need a library"},
		{name: "with-set of an injector not named", params: Params{With: []string{"sidecar"}, WithSet: map[string]string{"other.a": "1"}}, policy: pol, wantErr: `with-set other.*: "with" does not name other`},
		{name: "an injector given twice", params: Params{With: []string{"sidecar", "sidecar@1.0.0"}}, policy: pol, wantErr: "injector sidecar is given twice"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in, err := webRequest(tt.params).Prepare(app, tt.policy)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, specNames(in.Template.Injectors)); diff != "" {
				t.Errorf("injectors (-want +got)\n%s", diff)
			}
			if in.Template.Pins["sidecar"].Version != "1.0.0" {
				t.Errorf("pins %v, want the file's", in.Template.Pins)
			}
		})
	}
	in, err := webRequest(Params{With: []string{"sidecar"}, WithSet: map[string]string{"sidecar.image": "x,y", "sidecar.port": "9"}}).Prepare(app, pol)
	if err != nil {
		t.Fatal(err)
	}
	ref := in.Template.Injectors.Specs[0].(*inject.TemplateRef)
	if diff := cmp.Diff(map[string]any{"image": "x,y", "port": int64(9)}, ref.Params); diff != "" {
		t.Errorf("with-set parameters (-want +got)\n%s", diff)
	}

	// A built-in injector needs the app's pins.
	if err := os.Remove(filepath.Join(app, inject.PinsFileName)); err != nil {
		t.Fatal(err)
	}
	_, err = webRequest(Params{With: []string{"sidecar@^1"}}).Prepare(app, pol)
	if err == nil || !strings.Contains(err.Error(), `have no helm-inject-pins.yaml in apps/web: run "helm-inject argocd pin --injector-library LIB --with sidecar@^1 apps/web"`) {
		t.Errorf("no pins: %v", err)
	}
}

// TestPinsMustBeUsed: an application that gives "with" names every
// injector its pins file pins, or is refused, naming the one left out;
// one that gives no "with" at all (an Application without a plugin
// section) gets what the file pins, at its constraint.
func TestPinsMustBeUsed(t *testing.T) {
	root, err := reporoot.Find()
	if err != nil {
		t.Fatal(err)
	}
	lib := t.TempDir()
	if err := os.CopyFS(lib, os.DirFS(filepath.Join(root, "fixtures", "injectors", "library"))); err != nil {
		t.Fatal(err)
	}
	// A second injector, "mesh", as a copy of the sidecar's definition.
	def, err := os.ReadFile(filepath.Join(lib, "sidecar", "1.0.0.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	testfs.Write(t, lib, map[string]string{"mesh/2.0.0.yaml": strings.NewReplacer("name: sidecar", "name: mesh", "version: 1.0.0", "version: 2.0.0").Replace(string(def))})
	l, err := inject.LoadLibrary(lib)
	if err != nil {
		t.Fatal(err)
	}
	d := l.Get("mesh", "2.0.0")
	if d == nil {
		t.Fatal("the copied definition did not load as mesh@2.0.0")
	}
	_, _, app := prepareRepo(t, map[string]string{
		"repo/apps/web/helm-inject-pins.yaml": "injectors:\n  sidecar:\n    constraint: ^1\n    version: 1.0.0\n    digest: sha256:cd2cb8bb0a47d9dd00b2417610e53aba49163b1fccaee685eeee1ae73d7943c6\n  mesh:\n    version: 2.0.0\n    digest: " + d.Digest + "\n",
	})
	pol := Policy{Library: lib}
	for _, tt := range []struct {
		name    string
		with    []string
		want    []string
		wantErr string
	}{
		{name: "explicitly none", with: []string{}, wantErr: `helm-inject-pins.yaml pins the built-in injector mesh, which the "with" parameter does not name: add mesh@2.0.0 to "with"`},
		{name: "one left out", with: []string{"sidecar@^1"}, wantErr: `pins the built-in injector mesh, which the "with" parameter does not name: add mesh@2.0.0 to "with"`},
		{name: "all named", with: []string{"mesh", "sidecar@^1"}, want: []string{"mesh", "sidecar@^1"}},
		{name: "not given", with: nil, want: []string{"mesh@2.0.0", "sidecar@^1"}},
	} {
		in, err := webRequest(Params{With: tt.with}).Prepare(app, pol)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: %v, want %q", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if diff := cmp.Diff(tt.want, specNames(in.Template.Injectors)); diff != "" {
			t.Errorf("%s (-want +got)\n%s", tt.name, diff)
		}
	}
}

// TestRepositoryRootUnderTheCMPServer: under the cmp-server's work folder,
// the repository is the folder it unpacked the request into, even when
// the application's folder does not end with its source path (the
// repo-server streams from the application's folder under
// reposerver.plugin.use.manifest.generate.paths). A file beside that
// folder (another request's) is outside.
func TestRepositoryRootUnderTheCMPServer(t *testing.T) {
	work := filepath.Join(t.TempDir(), "_cmp_server")
	testfs.Write(t, work, map[string]string{
		"req-1/values.yaml":    "from: req-1\n",
		"req-1/web/Chart.yaml": testChart,
		"req-2/secret.yaml":    "from: req-2\n",
	})
	app := filepath.Join(work, "req-1", "web")
	r := &Request{Release: "web", SourcePath: "apps/team/web", CMPWorkDir: work, Params: Params{ValuesFiles: []string{"../values.yaml"}}}
	in, err := r.Prepare(app, Policy{})
	if err != nil {
		t.Fatal(err)
	}
	if in.Values["from"] != "req-1" {
		t.Errorf("values %v: want the values file beside the app folder", in.Values)
	}
	r.Params.ValuesFiles = []string{"../../req-2/secret.yaml"}
	if _, err := r.Prepare(app, Policy{}); err == nil || !strings.Contains(err.Error(), `values file "../../req-2/secret.yaml" is outside the repository`) {
		t.Errorf("another request's file: %v", err)
	}
	// Run by hand, outside the work folder, the source path is the
	// folder's suffix.
	r.CMPWorkDir = filepath.Join(t.TempDir(), "_cmp_server")
	r.Params.ValuesFiles = nil
	if _, err := r.Prepare(app, Policy{}); err == nil || !strings.Contains(err.Error(), "does not end with its source path apps/team/web") {
		t.Errorf("outside the cmp-server: %v", err)
	}
}

// TestAddDependencies: a dependency missing from charts/ is loaded from
// its file:// folder inside the repository (relative to the chart), in
// memory: nothing is written into the repository; one vendored is used
// as it is; one outside the repository, from a chart repository, of
// another name or of a version outside the constraint is refused, naming
// it.
func TestAddDependencies(t *testing.T) {
	tests := []struct {
		name    string
		deps    string
		want    []string // the loaded chart's dependencies
		wantErr string
	}{
		{name: "a local dependency", deps: "  - name: lib\n    version: ^1\n    repository: file://../../libs/lib\n", want: []string{"lib", "vendored"}},
		{name: "vendored", deps: "  - name: vendored\n    version: 0.1.0\n    repository: https://charts.example\n", want: []string{"vendored"}},
		{name: "from a chart repository", deps: "  - name: redis\n    version: 18.0.0\n    repository: https://charts.example\n", wantErr: "application web: the chart's dependency redis (https://charts.example) is not in its charts/ folder, and the plugin reaches no network"},
		{name: "outside the repository", deps: "  - name: lib\n    repository: file://../../../outside/lib\n", wantErr: `dependency lib "../../../outside/lib" is outside the repository`},
		{name: "another chart in the folder", deps: "  - name: lib\n    repository: file://../../libs/other\n", wantErr: "dependency lib: the folder holds the chart other"},
		{name: "a version outside the constraint", deps: "  - name: lib\n    version: ^2\n    repository: file://../../libs/lib\n", wantErr: "dependency lib: the folder holds version 1.2.0, which is not ^2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, repo, app := prepareRepo(t, map[string]string{
				"repo/apps/web/Chart.yaml":          "apiVersion: v2\nname: web\nversion: 0.1.0\ndependencies:\n" + tt.deps,
				"repo/libs/lib/Chart.yaml":          "apiVersion: v2\nname: lib\nversion: 1.2.0\n",
				"repo/libs/other/Chart.yaml":        "apiVersion: v2\nname: other\nversion: 1.0.0\n",
				"repo/apps/web/charts/v/Chart.yaml": "apiVersion: v2\nname: vendored\nversion: 0.1.0\n",
				"outside/lib/Chart.yaml":            "apiVersion: v2\nname: lib\nversion: 1.0.0\n",
			})
			in, err := webRequest(Params{}).Prepare(app, Policy{})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range in.Source.Chart.Dependencies() {
				got = append(got, d.Name())
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("dependencies %v, want %v", got, tt.want)
			}
			entries, err := os.ReadDir(filepath.Join(repo, "apps", "web", "charts"))
			if err != nil || len(entries) != 1 {
				t.Errorf("charts/ holds %v (%v): the repository was written to", entries, err)
			}
		})
	}
}

// TestPrepareBudget: one budget of the policy's limits is charged all
// that a render reads and the parameters themselves, and each bomb an
// application can commit or set fails its own Prepare naming the
// application, the bound and what passed it: links that multiply a
// chart's files, nested list indexes in a set, set-string, set-file or
// with-set key, values files or set-file files that together pass the
// bytes. Each loaded before.
func TestPrepareBudget(t *testing.T) {
	big := strings.Repeat("x", 400<<10)
	_, repo, app := prepareRepo(t, map[string]string{
		"repo/envs/big1.yaml":           "a: " + big + "\n",
		"repo/envs/big2.yaml":           "b: " + big + "\n",
		"repo/envs/big3.yaml":           "c: " + big + "\n",
		"repo/envs/big.txt":             big,
		"repo/apps/bomb/Chart.yaml":     testChart,
		"repo/apps/bomb/files/l0/f.txt": "x\n",
	})
	for i := 1; i <= 11; i++ { // 4,095 paths to f.txt
		level := filepath.Join(repo, "apps", "bomb", "files", fmt.Sprintf("l%d", i))
		if err := os.MkdirAll(level, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"a", "b"} {
			if err := os.Symlink(fmt.Sprintf("../l%d", i-1), filepath.Join(level, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Four of Helm's largest list indexes, nested: 262,148 slots.
	const deep = "a[65536][65536][65536][65536]"
	bigFile := "../../envs/big.txt"
	tests := []struct {
		name   string
		params Params
		limits budget.Limits
		bound  budget.Bound
		what   string
	}{
		{name: "links that multiply", params: Params{Chart: "../bomb"}, limits: budget.Limits{Files: 1_000}, bound: budget.Files, what: "apps/bomb/files/l"},
		{name: "nested list indexes in a set key", params: Params{Set: map[string]string{deep: "x"}}, bound: budget.ListSlots, what: `set "` + deep + `"`},
		{name: "nested list indexes in a set-string key", params: Params{SetString: map[string]string{deep: "x"}}, bound: budget.ListSlots, what: `set-string "` + deep + `"`},
		{name: "nested list indexes in a set-file key", params: Params{SetFile: map[string]string{deep: "values.yaml"}}, bound: budget.ListSlots, what: `set-file "` + deep + `"`},
		{name: "nested list indexes in a with-set key", params: Params{With: []string{"x"}, WithSet: map[string]string{"x." + deep: "1"}}, bound: budget.ListSlots, what: `with-set "x.` + deep + `"`},
		{name: "list indexes of several keys together", params: Params{Set: map[string]string{"a[65536]": "x", "b[65536]": "x"}, SetString: map[string]string{"c[65536]": "x"}, SetFile: map[string]string{"d[65536]": "values.yaml"}}, bound: budget.ListSlots, what: `set-file "d[65536]"`},
		{name: "values files together", params: Params{ValuesFiles: []string{"../../envs/big1.yaml", "../../envs/big2.yaml", "../../envs/big3.yaml"}}, limits: budget.Limits{Bytes: 1 << 20}, bound: budget.Bytes, what: "envs/big3.yaml"},
		{name: "set-file files together", params: Params{SetFile: map[string]string{"a": bigFile, "b": bigFile, "c": bigFile}}, limits: budget.Limits{Bytes: 1 << 20}, bound: budget.Bytes, what: "set-file c"},
		{name: "the operator's limits, not the defaults", limits: budget.Limits{Files: 3}, bound: budget.Files},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := webRequest(tc.params).Prepare(app, Policy{Limits: tc.limits})
			var e *budget.ExceededError
			if !errors.As(err, &e) || e.Bound != tc.bound {
				t.Fatalf("err = %v; want the %v bound", err, tc.bound)
			}
			if !strings.HasPrefix(err.Error(), "application web: ") || !strings.Contains(err.Error(), tc.what) || !strings.Contains(err.Error(), "--"+tc.bound.Flag()) {
				t.Errorf("err = %v; want it to name application web, %q and --%s", err, tc.what, tc.bound.Flag())
			}
		})
	}
	// Below the bounds each loads: three list indexes of Helm's largest,
	// a values file of 400 KiB.
	for _, p := range []Params{{Set: map[string]string{"a[65536][65536][65536]": "x"}}, {ValuesFiles: []string{"../../envs/big1.yaml"}}} {
		if _, err := webRequest(p).Prepare(app, Policy{}); err != nil {
			t.Errorf("%+v: %v", p, err)
		}
	}
}

// TestPrepareBudgetCountsEveryParameter: each parameter's text is charged
// (keys and values, lists and maps), so a render given 64 KiB in any one
// of them passes a budget 32 KiB above what its files take.
func TestPrepareBudgetCountsEveryParameter(t *testing.T) {
	_, _, app := prepareRepo(t, nil)
	in, err := webRequest(Params{}).Prepare(app, Policy{})
	if err != nil {
		t.Fatal(err)
	}
	limits := budget.Limits{Bytes: in.Budget.Used().Bytes + 32<<10}
	if _, err := webRequest(Params{}).Prepare(app, Policy{Limits: limits}); err != nil {
		t.Fatalf("without parameters: %v", err)
	}
	big := strings.Repeat("x", 64<<10)
	for name, p := range map[string]Params{
		"release-name":          {ReleaseName: big},
		"chart":                 {Chart: big},
		"values-files":          {ValuesFiles: []string{big}},
		"values":                {Values: big},
		"set key":               {Set: map[string]string{big: "1"}},
		"set value":             {Set: map[string]string{"a": big}},
		"set-string":            {SetString: map[string]string{"a": big}},
		"set-file":              {SetFile: map[string]string{big: "values.yaml"}},
		"injector":              {Injector: []string{big}},
		"inject":                {Inject: []string{big}},
		"operator-injector":     {OperatorInjector: []string{big}},
		"operator-injector-set": {OperatorInjectorSet: map[string]string{"a.b": big}},
		"with":                  {With: []string{big}},
		"with-set":              {WithSet: map[string]string{"a.b": big}},
		"injector-library":      {InjectorLibrary: big},
		"chart-values":          {ChartValues: map[string]string{"a": big}},
	} {
		_, err := webRequest(p).Prepare(app, Policy{Limits: limits})
		var e *budget.ExceededError
		if !errors.As(err, &e) || e.Bound != budget.Bytes || e.What != "the parameters" {
			t.Errorf("%s of 64 KiB: %v; want the parameters past the bytes bound", name, err)
		}
	}
}

// TestPrepareBudgetCarried: the Rendering carries the render's budget,
// of the operator's limits, with what was read charged, for generate's
// output check.
func TestPrepareBudgetCarried(t *testing.T) {
	_, _, app := prepareRepo(t, nil)
	in, err := webRequest(Params{ValuesFiles: []string{"values.yaml"}}).Prepare(app, Policy{Limits: budget.Limits{OutputBytes: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	if in.Budget == nil {
		t.Fatal("no budget")
	}
	// Chart.yaml, values.yaml (twice: the chart's and the values file),
	// templates/x.yaml and files/cfg.txt, and the folders listed.
	if u := in.Budget.Used(); u.Files < 5 || u.Bytes < int64(len(testChart)) {
		t.Errorf("charged %+v; want the chart's files and folders", u)
	}
	if err := in.Budget.CheckOutput(1000); err != nil {
		t.Errorf("CheckOutput(1000): %v", err)
	}
	if err := in.Budget.CheckOutput(1001); err == nil {
		t.Error("CheckOutput(1001) passed the operator's 1000 bytes")
	}
}

// TestListSlotsMatchesStrvals: listSlots counts, for each key, the list
// slots Helm's strvals makes when it sets it.
func TestListSlotsMatchesStrvals(t *testing.T) {
	var slots func(v any) int64
	slots = func(v any) int64 {
		var n int64
		switch v := v.(type) {
		case map[string]any:
			for _, e := range v {
				n += slots(e)
			}
		case []any:
			n += int64(len(v))
			for _, e := range v {
				n += slots(e)
			}
		}
		return n
	}
	for _, key := range []string{
		"a", "a.b", "a[0]", "a[3]", "a[2].b[3]", "a[1][2][3]", "a[65536]", "a[65536][65536]",
		`a\[5]`, `a\.b[2]`, "a.b[0].c.d[4]", "x[10].y[0][0]",
	} {
		m := map[string]any{}
		if err := strvals.ParseInto(key+"=1", m); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		if got, want := listSlots(key), slots(m); got != want {
			t.Errorf("listSlots(%q) = %d; strvals makes %d", key, got, want)
		}
	}
	// Indexes strvals refuses count as its largest: no overflow.
	for _, key := range []string{"a[99999999999999999999]", "a[-1]", "a[x]", "a[9223372036854775807][9223372036854775807]"} {
		if got := listSlots(key); got <= 0 || got > 2*int64(strvals.MaxIndex+1) {
			t.Errorf("listSlots(%q) = %d", key, got)
		}
	}
}

// TestAnnounceBudget: the chart's values announced to Argo CD's UI are
// read with a budget too (the defaults): a chart whose links multiply
// its files fails naming the bound.
func TestAnnounceBudget(t *testing.T) {
	_, repo, app := prepareRepo(t, map[string]string{"repo/apps/bomb/Chart.yaml": testChart, "repo/apps/bomb/files/l0/f.txt": "x\n"})
	for i := 1; i <= 12; i++ {
		level := filepath.Join(repo, "apps", "bomb", "files", fmt.Sprintf("l%d", i))
		if err := os.MkdirAll(level, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"a", "b"} {
			if err := os.Symlink(fmt.Sprintf("../l%d", i-1), filepath.Join(level, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	_, err := webRequest(Params{Chart: "../bomb"}).Announce(app, budget.Limits{})
	var e *budget.ExceededError
	if !errors.As(err, &e) || e.Bound != budget.Files {
		t.Errorf("Announce: %v; want the files bound", err)
	}
	if _, err := webRequest(Params{}).Announce(app, budget.Limits{}); err != nil {
		t.Errorf("Announce of a normal chart: %v", err)
	}
}
