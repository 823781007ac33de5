package argocd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/helm-inject/helm-inject/internal/budget"
	"github.com/helm-inject/helm-inject/internal/confine"
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

// noEnv is an environment without the variables that tighten the
// operator's policy.
func noEnv(string) (string, bool) { return "", false }

// TestOperatorPolicy: the policy is the operator's command line; a
// variable (which a request to Argo CD's cmp-server can set) makes it
// stricter, never laxer.
func TestOperatorPolicy(t *testing.T) {
	op := Operator{Confine: "best-effort", AllowedCommands: []string{" linkerd", "istioctl ", ""}, Library: "/lib", Read: []string{"/etc/istio"}}
	for _, tt := range []struct {
		name    string
		env     map[string]string
		mode    confine.Mode
		allowed []string
		err     string
	}{
		{"no variables", nil, confine.BestEffort, []string{"linkerd", "istioctl"}, ""},
		{"mode off asked", map[string]string{confine.EnvMode: "off"}, confine.BestEffort, []string{"linkerd", "istioctl"}, ""},
		{"mode required asked", map[string]string{confine.EnvMode: "required"}, confine.Required, []string{"linkerd", "istioctl"}, ""},
		{"mode empty", map[string]string{confine.EnvMode: ""}, confine.BestEffort, []string{"linkerd", "istioctl"}, ""},
		{"mode not a mode", map[string]string{confine.EnvMode: "on"}, "", nil, `HELM_INJECT_CONFINE="on": say best-effort, required or off`},
		{"more commands asked", map[string]string{EnvAllowedCommands: "sh,linkerd"}, confine.BestEffort, []string{"linkerd"}, ""},
		{"no commands asked", map[string]string{EnvAllowedCommands: ""}, confine.BestEffort, nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := op.Policy(func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok })
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := Policy{Mode: tt.mode, AllowedCommands: tt.allowed, Library: "/lib", Read: []string{"/etc/istio"}}
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Error(diff)
			}
		})
	}
	if _, err := (Operator{Confine: "strict"}).Policy(noEnv); err == nil || !strings.Contains(err.Error(), `--confine="strict": say best-effort, required or off`) {
		t.Errorf("--confine=strict: %v", err)
	}
	if got, _ := (Operator{Confine: "off"}).Policy(noEnv); got.Mode != confine.Off {
		t.Errorf("--confine=off without variables: %s", got.Mode)
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
	ann, err := req.Announce(filepath.Join(repo, "apps", "web"), budget.Limits{})
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
	if _, err := req.Announce(filepath.Join(repo, "apps", "web"), budget.Limits{}); err == nil || !strings.Contains(err.Error(), `application web: chart "../../../outside"`) {
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
