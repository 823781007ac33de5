package argocd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/helm-inject/helm-inject/internal/testfs"
)

func TestReadRequest(t *testing.T) {
	base := []string{"ARGOCD_APP_NAMESPACE=shop", "KUBE_VERSION=1.31.4", "KUBE_API_VERSIONS=v1,apps/v1/Deployment", "ARGOCD_APP_SOURCE_PATH=apps/web"}
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
		{name: "no application name", env: nil, wantErr: "ARGOCD_APP_NAME is not set"},
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
			if diff := cmp.Diff(want, *got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestTemplateArgs(t *testing.T) {
	top := t.TempDir()
	repo := filepath.Join(top, "repo")
	app := filepath.Join(repo, "apps", "web")
	testfs.Write(t, top, map[string]string{
		"repo/envs/prod.yaml":                 "",
		"repo/apps/web/helm-inject-pins.yaml": "",
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
// folder), as "set" entries, and refuses a chart outside the repository.
func TestAnnounce(t *testing.T) {
	repo := t.TempDir()
	testfs.Write(t, repo, map[string]string{
		"apps/web/values.yaml":   "",
		"charts/web/Chart.yaml":  "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"charts/web/values.yaml": "image: registry.example/web:1\ncache:\n  enabled: true\n",
		"charts/web/templates/x": "",
		"apps/other/placeholder": "",
	})
	req := &Request{Release: "web", SourcePath: "apps/web", Params: Params{Chart: "../../charts/web"}}
	ann, err := req.Announce(filepath.Join(repo, "apps", "web"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"image": "registry.example/web:1", "cache.enabled": "true"}
	if len(ann) != 1 || ann[0].Name != ParamSet || !cmp.Equal(ann[0].Map, want) {
		t.Errorf("announced %+v, want set with %v", ann, want)
	}
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
