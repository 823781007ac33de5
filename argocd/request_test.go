package argocd

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/helm-inject/helm-inject/internal/testfs"
)

func TestReadRequest(t *testing.T) {
	base := []string{"ARGOCD_CMP_WORKDIR=/var/cmp", "ARGOCD_APP_NAMESPACE=shop", "KUBE_VERSION=1.31.4", "KUBE_API_VERSIONS=v1,apps/v1/Deployment", "ARGOCD_APP_SOURCE_PATH=apps/web"}
	tests := []struct {
		name    string
		env     []string
		want    Request
		wantErr string
	}{
		{
			name: "an application in Argo CD's namespace",
			env:  []string{"ARGOCD_APP_NAME=web"},
			want: Request{Release: "web"},
		},
		{
			name: "an application in another namespace loses the prefix",
			env:  []string{"ARGOCD_APP_NAME=team-a_web"},
			want: Request{Release: "web"},
		},
		{
			name: "parameters of each kind",
			env: []string{"ARGOCD_APP_NAME=web", `ARGOCD_APP_PARAMETERS=[{"name":"chart","string":"chart"},{"name":"values-files","array":["a.yaml","b.yaml"]},{"name":"set","map":{"image.tag":"v2"}},{"name":"skip-inject-hooks","string":"true"},{"name":"with","array":["log-shipper@^1"]}]`,
				// PARAM_* carry the same; they are not read.
				"PARAM_SET_IMAGE_TAG=ignored"},
			want: Request{Release: "web", Params: Params{Chart: "chart", ValuesFiles: []string{"a.yaml", "b.yaml"}, Set: map[string]string{"image.tag": "v2"}, SkipInjectHooks: true, With: []string{"log-shipper@^1"}}},
		},
		{
			name: "env entries, one list item a line; a parameter wins",
			env: []string{"ARGOCD_APP_NAME=web", "ARGOCD_ENV_VALUES_FILES=a.yaml\n\nb.yaml\n", "ARGOCD_ENV_CHART=from-env", "ARGOCD_ENV_SKIP_TESTS=true",
				`ARGOCD_APP_PARAMETERS=[{"name":"chart","string":"from-param"}]`},
			want: Request{Release: "web", Params: Params{Chart: "from-param", ValuesFiles: []string{"a.yaml", "b.yaml"}, SkipTests: true}},
		},
		{
			// Argo CD's New App panel asks for parameters before the
			// application has a name.
			name: "no application name yet",
			env:  []string{`ARGOCD_APP_PARAMETERS=[{"name":"chart","string":"c"}]`},
			want: Request{Params: Params{Chart: "c"}},
		},
		{
			name: "release-name names the release, as Argo CD's helm.releaseName",
			env:  []string{"ARGOCD_APP_NAME=team-a_web", `ARGOCD_APP_PARAMETERS=[{"name":"release-name","string":"shop"}]`},
			want: Request{Release: "shop", Params: Params{ReleaseName: "shop"}},
		},
		{
			// What Argo CD writes for a parameter set to nothing: an
			// empty list or map, an empty string, a name alone; an
			// unticked box is "".
			name: "explicitly empty parameters",
			env:  []string{"ARGOCD_APP_NAME=web", `ARGOCD_APP_PARAMETERS=[{"name":"values-files","array":[]},{"name":"set","map":{}},{"name":"chart"},{"name":"skip-crds","string":""},{"name":"values","string":""},{"name":"release-name"}]`},
			want: Request{Release: "web", Params: Params{ValuesFiles: []string{}, Set: map[string]string{}}},
		},
		{
			name: "Argo CD's Helm options",
			env:  []string{"ARGOCD_APP_NAME=web", `ARGOCD_APP_PARAMETERS=[{"name":"skip-crds","string":"true"},{"name":"skip-schema-validation","string":"true"},{"name":"ignore-missing-value-files","string":"true"},{"name":"set-file","map":{"cfg":"files/cfg.txt"}},{"name":"chart-values","map":{"replicas":"1"}}]`},
			want: Request{Release: "web", Params: Params{SkipCRDs: true, SkipSchema: true, IgnoreMissingValues: true, SetFile: map[string]string{"cfg": "files/cfg.txt"}, ChartValues: map[string]string{"replicas": "1"}}},
		},
		{name: "unknown parameter", env: []string{"ARGOCD_APP_NAME=web", `ARGOCD_APP_PARAMETERS=[{"name":"valueFiles","array":["a"]}]`}, wantErr: `application web: unknown plugin parameter "valueFiles"`},
		{name: "wrong kind", env: []string{"ARGOCD_APP_NAME=web", `ARGOCD_APP_PARAMETERS=[{"name":"with","string":"x"}]`}, wantErr: `plugin parameter "with" is an array`},
		{name: "not a boolean", env: []string{"ARGOCD_APP_NAME=web", `ARGOCD_APP_PARAMETERS=[{"name":"skip-tests","string":"yes please"}]`}, wantErr: `"skip-tests": want true or false`},
		{name: "broken JSON", env: []string{"ARGOCD_APP_NAME=web", `ARGOCD_APP_PARAMETERS=[{`}, wantErr: "application web: reading ARGOCD_APP_PARAMETERS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadRequest(append(append([]string{}, base...), tt.env...))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := tt.want
			want.Namespace, want.KubeVersion, want.SourcePath = "shop", "1.31.4", "apps/web"
			want.APIVersions = []string{"v1", "apps/v1/Deployment"}
			want.CMPWorkDir = "/var/cmp/_cmp_server"
			if diff := cmp.Diff(want, *got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

// TestCMPWorkDir: where Argo CD's cmp-server unpacks requests
// (common.GetCMPWorkDir: $ARGOCD_CMP_WORKDIR, else os.TempDir()).
func TestCMPWorkDir(t *testing.T) {
	for env, want := range map[string]string{
		"ARGOCD_CMP_WORKDIR=/w TMPDIR=/t": "/w/_cmp_server",
		"TMPDIR=/t":                       "/t/_cmp_server",
		"":                                "/tmp/_cmp_server",
	} {
		r, err := ReadRequest(append(strings.Fields(env), "ARGOCD_APP_NAME=web"))
		if err != nil {
			t.Fatal(err)
		}
		if r.CMPWorkDir != want {
			t.Errorf("%q: %s, want %s", env, r.CMPWorkDir, want)
		}
	}
}

func TestTemplateArgs(t *testing.T) {
	top := t.TempDir()
	repo := filepath.Join(top, "repo")
	app := filepath.Join(repo, "apps", "web")
	testfs.Write(t, top, map[string]string{
		"repo/envs/prod.yaml":                 "",
		"repo/apps/web/helm-inject-pins.yaml": "injectors: {}\n",
		"repo/apps/web/files/cfg.txt":         "",
		// Decoys: what "s/../../outside/..." names once cleaned lexically.
		"repo/apps/outside/secret.yaml":      "",
		"repo/apps/outside/lib/x/1.0.0.yaml": "",
		"repo/apps/outside/chart/Chart.yaml": "",
		// A folder named like a values entry with a second path in it.
		"repo/apps/web/v.yaml,/" + top + "/outside/secret.yaml": "",
		"outside/secret.yaml":      "",
		"outside/lib/x/1.0.0.yaml": "",
		"outside/chart/Chart.yaml": "",
	})
	outside := filepath.Join(top, "outside", "secret.yaml")
	if err := os.Symlink(outside, filepath.Join(app, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	// A link whose target is inside the repository (Argo CD lets it
	// through), with ".." after it.
	if err := os.Symlink("..", filepath.Join(app, "s")); err != nil {
		t.Fatal(err)
	}
	allow := Policy{AllowedCommands: []string{"linkerd"}, Library: "/plugin/injectors"}
	req := func(p Params) *Request {
		return &Request{Release: "web", Namespace: "shop", SourcePath: "apps/web", KubeVersion: "1.31.4", APIVersions: []string{"apps/v1"}, Params: p}
	}
	tests := []struct {
		name    string
		params  Params
		policy  Policy
		want    []string
		wantErr string
	}{
		{
			name:   "everything",
			params: Params{ValuesFiles: []string{"../../envs/prod.yaml"}, Set: map[string]string{"b": "1,2", "a": "x"}, Injector: []string{"linkerd inject,--manual,FILE"}, With: []string{"log-shipper@^1"}, WithSet: map[string]string{"log-shipper.destination": "logs:24224"}, SkipInjectTests: true},
			policy: allow,
			want: []string{"template", "--include-crds", "--namespace", "shop", "--kube-version", "1.31.4", "--api-versions", "apps/v1",
				"--values", filepath.Join(repo, "envs", "prod.yaml"), "--values", "/tmp/inline.yaml", "--set", "a=x", "--set", `b=1\,2`,
				"--injector", "linkerd inject,--manual,FILE",
				"--injector-library", "/plugin/injectors", "--with", "log-shipper@^1", "--with-set", "log-shipper.destination=logs:24224", "--injector-pins", filepath.Join(app, "helm-inject-pins.yaml"),
				"--skip-inject-tests", "--", "web", app},
		},
		{
			name:   "paths are passed resolved",
			params: Params{Chart: "s/web", ValuesFiles: []string{"s/../envs/prod.yaml"}, With: []string{"x"}, InjectorLibrary: "s/outside/lib"},
			policy: allow,
			want: []string{"template", "--include-crds", "--namespace", "shop", "--kube-version", "1.31.4", "--api-versions", "apps/v1",
				"--values", filepath.Join(repo, "envs", "prod.yaml"), "--values", "/tmp/inline.yaml",
				"--injector-library", filepath.Join(repo, "apps", "outside", "lib"), "--with", "x", "--injector-pins", filepath.Join(app, "helm-inject-pins.yaml"),
				"--", "web", app},
		},
		{
			// No built-ins: no library is needed, and none is passed.
			name:   "an external injector alone",
			params: Params{Inject: []string{"linkerd inject --manual FILE"}},
			policy: Policy{AllowedCommands: []string{"linkerd"}},
			want: []string{"template", "--include-crds", "--namespace", "shop", "--kube-version", "1.31.4", "--api-versions", "apps/v1",
				"--values", "/tmp/inline.yaml", "--inject", "linkerd inject --manual FILE", "--", "web", app},
		},
		{name: "a program not allowed", params: Params{Inject: []string{"linkerd2 inject FILE"}}, policy: allow, wantErr: `application web: injector "linkerd2 inject FILE" runs "linkerd2", which this plugin does not allow (allowed: linkerd; the operator lists programs in HELM_INJECT_ALLOWED_COMMANDS`},
		{name: "no program allowed", params: Params{Inject: []string{"linkerd inject FILE"}}, wantErr: "(allowed: none;"},
		{name: "a path out of the repository", params: Params{ValuesFiles: []string{"../../../x.yaml"}}, wantErr: "values file \"../../../x.yaml\""},
		{name: "a link out of the repository", params: Params{ValuesFiles: []string{"link.yaml"}}, wantErr: `values file "link.yaml" is outside the repository`},
		{name: "a comma smuggles a second values file", params: Params{ValuesFiles: []string{"v.yaml," + outside}}, wantErr: `values file "v.yaml,` + outside + `": a path may not hold a comma`},
		{name: "a values file through a link and ..", params: Params{ValuesFiles: []string{"s/../../outside/secret.yaml"}}, wantErr: `values file "s/../../outside/secret.yaml" is outside the repository`},
		{name: "a chart through a link and ..", params: Params{Chart: "s/../../outside/chart"}, wantErr: `chart "s/../../outside/chart" is outside the repository`},
		{name: "a library through a link and ..", params: Params{With: []string{"x"}, InjectorLibrary: "s/../../outside/lib"}, policy: allow, wantErr: `injector library "s/../../outside/lib" is outside the repository`},
		{name: "a library out of the repository", params: Params{With: []string{"x"}, InjectorLibrary: "../../../outside/lib"}, policy: allow, wantErr: `injector library "../../../outside/lib" is outside the repository`},
		{name: "a remote chart", params: Params{Chart: "oci://registry.example/charts/web"}, wantErr: "chart \"oci://registry.example/charts/web\": give a path relative"},
		{name: "built-ins without a library", params: Params{With: []string{"log-shipper"}}, wantErr: "built-in injectors log-shipper need a library"},
		{
			name:   "Argo CD's Helm options",
			params: Params{SkipCRDs: true, SkipSchema: true, SkipTests: true, SetFile: map[string]string{"b.cfg": "files/cfg.txt", "a": "s/web/files/cfg.txt"}, SetString: map[string]string{"n": "007"}},
			want: []string{"template", "--namespace", "shop", "--kube-version", "1.31.4", "--api-versions", "apps/v1",
				"--values", "/tmp/inline.yaml", "--set-string", "n=007",
				"--set-file", "a=" + filepath.Join(app, "files", "cfg.txt"), "--set-file", "b.cfg=" + filepath.Join(app, "files", "cfg.txt"),
				"--skip-tests", "--skip-schema-validation", "--", "web", app},
		},
		{
			// As Argo CD's util/helm: a list in braces is kept, an
			// escaped comma stays escaped once, a bare one is escaped.
			name:   "set values escaped as Argo CD's Helm source type",
			params: Params{Set: map[string]string{"list": "{a,b}", "esc": `a\,b`, "bare": "a,b,c", "brace": "{a,b", "plain": "x"}, SetString: map[string]string{"s": "1,2"}},
			want: []string{"template", "--include-crds", "--namespace", "shop", "--kube-version", "1.31.4", "--api-versions", "apps/v1",
				"--values", "/tmp/inline.yaml",
				"--set", `bare=a\,b\,c`, "--set", `brace={a\,b`, "--set", `esc=a\,b`, "--set", "list={a,b}", "--set", "plain=x", "--set-string", `s=1\,2`,
				"--", "web", app},
		},
		{
			name:   "a missing values file left out under ignore-missing-value-files",
			params: Params{ValuesFiles: []string{"nope.yaml", "../../envs/prod.yaml"}, IgnoreMissingValues: true},
			want: []string{"template", "--include-crds", "--namespace", "shop", "--kube-version", "1.31.4", "--api-versions", "apps/v1",
				"--values", filepath.Join(repo, "envs", "prod.yaml"), "--values", "/tmp/inline.yaml", "--", "web", app},
		},
		{name: "ignore-missing-value-files still refuses a path outside", params: Params{ValuesFiles: []string{"s/../../elsewhere/none.yaml"}, IgnoreMissingValues: true}, wantErr: `values file "s/../../elsewhere/none.yaml" is outside the repository`},
		{name: "a set-file outside the repository", params: Params{SetFile: map[string]string{"cfg": "link.yaml"}}, wantErr: `set-file cfg "link.yaml" is outside the repository`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := req(tt.params).TemplateArgs(app, tt.policy, map[bool]string{true: "/tmp/inline.yaml"}[tt.want != nil])
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}

	// A file that does not exist: outside when the part of its path that
	// exists leads out of the repository, else missing; neither message
	// shows the server's folders.
	for path, want := range map[string]string{
		"s/../../elsewhere/none.yaml": `values file "s/../../elsewhere/none.yaml" is outside the repository`,
		"s/../../../x.yaml":           `values file "s/../../../x.yaml" is outside the repository`,
		"nope.yaml":                   `values file "nope.yaml" does not exist in the repository: no such file or directory`,
		"s/web/nope.yaml":             `values file "s/web/nope.yaml" does not exist in the repository: no such file or directory`,
	} {
		_, err := req(Params{ValuesFiles: []string{path}}).TemplateArgs(app, Policy{}, "")
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), top) {
			t.Errorf("values file %q: %v, want %q without %s", path, err, want, top)
		}
	}

	// A built-in injector needs the app's pins.
	if err := os.Remove(filepath.Join(app, "helm-inject-pins.yaml")); err != nil {
		t.Fatal(err)
	}
	_, err := req(Params{With: []string{"log-shipper@^1"}}).TemplateArgs(app, allow, "")
	if err == nil || !strings.Contains(err.Error(), `have no helm-inject-pins.yaml in apps/web: run "helm-inject argocd pin --injector-library LIB --with log-shipper@^1 apps/web"`) {
		t.Errorf("no pins: %v", err)
	}
}

func TestReadPolicy(t *testing.T) {
	env := map[string]string{EnvAllowedCommands: " linkerd, istioctl ,,", EnvLibrary: "/lib"}
	got, err := ReadPolicy(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Policy{AllowedCommands: []string{"linkerd", "istioctl"}, Library: "/lib"}, got); diff != "" {
		t.Error(diff)
	}
}

// TestParameterKinds: every announced parameter sets a field of its kind,
// so the announcement, the docs and what generate reads agree.
func TestParameterKinds(t *testing.T) {
	var p Params
	for _, d := range parameters {
		var ok bool
		switch p.field(d.name).(type) {
		case *string:
			ok = d.kind == kindString
		case *bool:
			ok = d.kind == kindBool
		case *[]string:
			ok = d.kind == kindArray
		case *map[string]string:
			ok = d.kind == kindMap
		}
		if !ok {
			t.Errorf("parameter %s: announced as kind %d, sets %T", d.name, d.kind, p.field(d.name))
		}
	}
}

// TestAnnounce: the dynamic parameters command announces the values of
// the chart the "chart" parameter names (relative to the application's
// folder) as "chart-values", each as helm --set reads it back, answers
// for an application without a name, and refuses a chart outside the
// repository.
func TestAnnounce(t *testing.T) {
	repo := t.TempDir()
	testfs.Write(t, repo, map[string]string{
		"apps/web/values.yaml":  "",
		"charts/web/Chart.yaml": "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"charts/web/values.yaml": `image: registry.example/web:1
cache:
  enabled: true
replicas: 3
big: 10000000
ratio: 0.25
negative: -2
none: null
emptyMap: {}
emptyList: []
list: [a, {b: 1}]
"a.b": dotted
"x[0]": bracketed
"k=v,w": sep
'back\slash': bs
`,
		"charts/web/templates/x": "",
		"apps/other/placeholder": "",
	})
	req := &Request{SourcePath: "apps/web", Params: Params{Chart: "../../charts/web"}}
	ann, err := req.Announce(filepath.Join(repo, "apps", "web"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"image": "registry.example/web:1", "cache.enabled": "true", "replicas": "3", "big": "10000000", "ratio": "0.25", "negative": "-2",
		"none": "null", "emptyMap": "{}", "emptyList": "[]", "list[0]": "a", "list[1].b": "1",
		`a\.b`: "dotted", `x\[0\]`: "bracketed", `k\=v\,w`: "sep", `back\\slash`: "bs",
	}
	if len(ann) != 1 || ann[0].Name != ParamChartValues || ann[0].CollectionType != "map" {
		t.Fatalf("announced %+v, want chart-values alone", ann)
	}
	if diff := cmp.Diff(want, ann[0].Map); diff != "" {
		t.Errorf("chart-values (-want +got)\n%s", diff)
	}
	req.Release = "web"
	req.Params.Chart = "../../../outside"
	if _, err := req.Announce(filepath.Join(repo, "apps", "web")); err == nil || !strings.Contains(err.Error(), `application web: chart "../../../outside"`) {
		t.Errorf("a chart outside the repository: %v", err)
	}
}

// TestEscaped: Argo CD's variable name of a parameter: upper case, and
// anything but A-Z, 0-9 and _ as _ (each edge of the ranges included).
func TestEscaped(t *testing.T) {
	for in, want := range map[string]string{
		"values-files":   "VALUES_FILES",
		"azAZ09_":        "AZAZ09_",
		"`{@[/:":         "______",
		"mesh.proxy-cpu": "MESH_PROXY_CPU",
		"é":              "_",
	} {
		if got := escaped(in); got != want {
			t.Errorf("escaped(%q) = %q, want %q", in, got, want)
		}
	}
	if got := EnvName(Announcement{Name: "with-set", CollectionType: "map"}); got != "" {
		t.Errorf("a map parameter has the env name %q, want none", got)
	}
	if got := EnvName(Announcement{Name: "values-files", CollectionType: "array"}); got != EnvPrefix+"VALUES_FILES" {
		t.Errorf("EnvName(values-files) = %q", got)
	}
}

// TestTemplateArgsNeedARelease: generate needs the application's name or a
// release-name.
func TestTemplateArgsNeedARelease(t *testing.T) {
	app := t.TempDir()
	_, err := (&Request{}).TemplateArgs(app, Policy{}, "")
	if err == nil || !strings.Contains(err.Error(), `ARGOCD_APP_NAME is not set and no "release-name" parameter is given`) {
		t.Errorf("no release: %v", err)
	}
}

// TestPinsMustBeUsed: an application that gives "with" names every
// injector its pins file pins, or is refused, naming the one left out;
// one that gives no "with" at all (an Application without a plugin
// section) gets what the file pins, at its constraint.
func TestPinsMustBeUsed(t *testing.T) {
	repo := t.TempDir()
	testfs.Write(t, repo, map[string]string{
		"web/helm-inject-pins.yaml": "injectors:\n  log-shipper:\n    constraint: ^1\n    version: 1.1.0\n    digest: sha256:00\n  mesh:\n    version: 2.0.0\n    digest: sha256:01\n",
		"web/Chart.yaml":            "",
	})
	app := filepath.Join(repo, "web")
	pol := Policy{Library: "/lib"}
	for _, tt := range []struct {
		name    string
		with    []string
		want    []string
		wantErr string
	}{
		{name: "explicitly none", with: []string{}, wantErr: `helm-inject-pins.yaml pins the built-in injector log-shipper, which the "with" parameter does not name: add log-shipper@^1 to "with"`},
		{name: "one left out", with: []string{"log-shipper@^1"}, wantErr: `pins the built-in injector mesh, which the "with" parameter does not name: add mesh@2.0.0 to "with"`},
		{name: "all named", with: []string{"mesh", "log-shipper@^1"}, want: []string{"--with", "mesh", "--with", "log-shipper@^1"}},
		{name: "not given", with: nil, want: []string{"--with", "log-shipper@^1", "--with", "mesh@2.0.0"}},
	} {
		r := &Request{Release: "web", SourcePath: "web", Params: Params{With: tt.with}}
		got, err := r.TemplateArgs(app, pol, "")
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
		want := append(append([]string{"template", "--include-crds", "--injector-library", "/lib"}, tt.want...), "--injector-pins", filepath.Join(app, "helm-inject-pins.yaml"), "--", "web", app)
		if diff := cmp.Diff(want, got); diff != "" {
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
		"req-1/values.yaml":       "",
		"req-1/web/Chart.yaml":    "",
		"req-2/secret.yaml":       "",
		"req-1/web/nested/x.yaml": "",
	})
	app := filepath.Join(work, "req-1", "web")
	r := &Request{Release: "web", SourcePath: "apps/team/web", CMPWorkDir: work, Params: Params{ValuesFiles: []string{"../values.yaml"}}}
	got, err := r.TemplateArgs(app, Policy{}, "")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(got, filepath.Join(work, "req-1", "values.yaml")) {
		t.Errorf("args %v: want the values file beside the app folder", got)
	}
	r.Params.ValuesFiles = []string{"../../req-2/secret.yaml"}
	if _, err := r.TemplateArgs(app, Policy{}, ""); err == nil || !strings.Contains(err.Error(), `values file "../../req-2/secret.yaml" is outside the repository`) {
		t.Errorf("another request's file: %v", err)
	}
	// Run by hand, outside the work folder, the source path is the
	// folder's suffix.
	r.CMPWorkDir = filepath.Join(t.TempDir(), "_cmp_server")
	r.Params.ValuesFiles = nil
	if _, err := r.TemplateArgs(app, Policy{}, ""); err == nil || !strings.Contains(err.Error(), "does not end with its source path apps/team/web") {
		t.Errorf("outside the cmp-server: %v", err)
	}
}

// TestDiscover: the plugin's discovery says yes to a pins file and to a
// plugin section whose parameters are all helm-inject's (or none), no to
// an application without either and to another plugin's section.
func TestDiscover(t *testing.T) {
	dir := t.TempDir()
	pinned := filepath.Join(dir, "pinned")
	testfs.Write(t, dir, map[string]string{"pinned/helm-inject-pins.yaml": "injectors: {}\n", "plain/Chart.yaml": "", "linked/x": ""})
	if err := os.Symlink(filepath.Join(pinned, "helm-inject-pins.yaml"), filepath.Join(dir, "linked", "helm-inject-pins.yaml")); err != nil {
		t.Fatal(err)
	}
	app := []string{"ARGOCD_APP_NAME=web", "ARGOCD_APP_SOURCE_PATH=apps/web"}
	for _, tt := range []struct {
		name string
		dir  string
		env  []string
		want bool
	}{
		{"a pins file, no plugin section", "pinned", app, true},
		{"no pins file, no plugin section (Argo CD's own Helm)", "plain", app, false},
		{"a plugin section without parameters", "plain", append(app, "ARGOCD_APP_PARAMETERS=null"), true},
		{"a plugin section with empty parameters", "plain", append(app, "ARGOCD_APP_PARAMETERS=[]"), true},
		{"helm-inject's parameters", "plain", append(app, `ARGOCD_APP_PARAMETERS=[{"name":"inject","array":["x FILE"]},{"name":"set","map":{}}]`), true},
		{"another plugin's parameter", "plain", append(app, `ARGOCD_APP_PARAMETERS=[{"name":"inject","array":["x FILE"]},{"name":"kustomize-overlay","string":"x"}]`), false},
		{"another plugin's section, with a pins file", "pinned", append(app, `ARGOCD_APP_PARAMETERS=[{"name":"overlay","string":"x"}]`), true},
		{"not JSON", "plain", append(app, "ARGOCD_APP_PARAMETERS=[{"), false},
		{"a pins file that is a link", "linked", app, true},
	} {
		if got := Discover(filepath.Join(dir, tt.dir), tt.env); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}
