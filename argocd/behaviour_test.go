package argocd

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/helm-inject/helm-inject/inject"
	"github.com/helm-inject/helm-inject/internal/budget"
	"github.com/helm-inject/helm-inject/internal/reporoot"
	"github.com/helm-inject/helm-inject/internal/testfs"
)

// TestDependencyRelativeToTheChart: a file:// dependency resolves against
// the folder of the chart that declares it, as helm resolves it, not
// against the application's folder. Here the chart is charts/web (named
// by "chart" from apps/web) and its file://../lib is charts/lib; a chart
// of the same name and version sits at apps/lib, where the application's
// folder would lead. A user would otherwise see the wrong library chart's
// objects in the application.
func TestDependencyRelativeToTheChart(t *testing.T) {
	cm := func(name string) string { return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n" }
	_, _, app := prepareRepo(t, map[string]string{
		"repo/charts/web/Chart.yaml":         "apiVersion: v2\nname: web\nversion: 0.1.0\ndependencies:\n  - name: lib\n    version: 1.0.0\n    repository: file://../lib\n",
		"repo/charts/web/templates/web.yaml": cm("web"),
		"repo/charts/lib/Chart.yaml":         "apiVersion: v2\nname: lib\nversion: 1.0.0\n",
		"repo/charts/lib/templates/lib.yaml": cm("from-charts-lib"),
		"repo/apps/lib/Chart.yaml":           "apiVersion: v2\nname: lib\nversion: 1.0.0\n",
		"repo/apps/lib/templates/lib.yaml":   cm("from-apps-lib"),
	})
	in, err := webRequest(Params{Chart: "../../charts/web"}).Prepare(app, Policy{})
	if err != nil {
		t.Fatal(err)
	}
	deps := in.Source.Chart.Dependencies()
	if len(deps) != 1 || len(deps[0].Templates) != 1 {
		t.Fatalf("dependencies %v, want lib alone with one template", deps)
	}
	if got := string(deps[0].Templates[0].Data); !strings.Contains(got, "name: from-charts-lib") {
		t.Errorf("the dependency lib packaged is\n%s\nwant charts/lib's (name: from-charts-lib)", got)
	}
}

// TestValuesPrecedence: when two of an application's sources set the same
// key, the later one in helm's order wins: values files in order, the
// inline values, set, set-string, set-file. A user would otherwise see a
// value the helm command line with the same flags does not give (a number
// where set-string asked for text).
func TestValuesPrecedence(t *testing.T) {
	_, _, app := prepareRepo(t, map[string]string{"repo/apps/web/files/n.txt": "file"})
	for _, tt := range []struct {
		name   string
		params Params
		want   any
	}{
		{"the second values file over the first", Params{ValuesFiles: []string{"values.yaml", "../../envs/prod.yaml"}}, float64(3)},
		{"inline values over a values file", Params{ValuesFiles: []string{"values.yaml"}, Values: "replicas: 7\n"}, float64(7)},
		{"set over inline values", Params{Values: "replicas: 7\n", Set: map[string]string{"replicas": "8"}}, int64(8)},
		{"set-string over set", Params{Set: map[string]string{"replicas": "2"}, SetString: map[string]string{"replicas": "3"}}, "3"},
		{"set-file over set-string", Params{SetString: map[string]string{"replicas": "3"}, SetFile: map[string]string{"replicas": "files/n.txt"}}, "file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in, err := webRequest(tt.params).Prepare(app, Policy{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, in.Values["replicas"]); diff != "" {
				t.Errorf("replicas (-want +got)\n%s", diff)
			}
		})
	}
}

// TestAllowedCommandsAsWritten: HELM_INJECT_ALLOWED_COMMANDS is compared
// with the injector's first word as written: a path whose base name is an
// allowed program is another program (one the Application could ship in
// its repository), and is refused. A user would otherwise see an
// Application run a program the operator never listed.
func TestAllowedCommandsAsWritten(t *testing.T) {
	_, _, app := prepareRepo(t, nil)
	pol := Policy{AllowedCommands: []string{"linkerd", "/usr/local/bin/istioctl"}}
	for _, tt := range []struct {
		name    string
		params  Params
		allowed bool
	}{
		{"the listed name", Params{Inject: []string{"linkerd inject FILE"}}, true},
		{"the listed absolute path", Params{Inject: []string{"/usr/local/bin/istioctl kube-inject -f FILE"}}, true},
		{"a relative path to a program of that name", Params{Inject: []string{"./bin/linkerd inject FILE"}}, false},
		{"an absolute path to a program of that name", Params{Inject: []string{"/tmp/linkerd inject FILE"}}, false},
		{"the listed path's base name", Params{Inject: []string{"istioctl kube-inject -f FILE"}}, false},
		{"a helm-x injector by path", Params{Injector: []string{"bin/linkerd inject,FILE"}}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := webRequest(tt.params).Prepare(app, pol)
			if tt.allowed && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !tt.allowed && (err == nil || !strings.Contains(err.Error(), "which this plugin does not allow")) {
				t.Fatalf("error %v, want the program refused", err)
			}
		})
	}
}

// TestWithSetReachesItsInjector: with-set parameters reach the built-in
// injector "with" names, whether it names it alone or with a constraint
// or version; with-set without "with" is an error. A user would otherwise
// see the sidecar rendered with its defaults (another destination, image
// or port) and no error.
func TestWithSetReachesItsInjector(t *testing.T) {
	root, err := reporoot.Find()
	if err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(root, "fixtures", "injectors", "library")
	pins := "injectors:\n  sidecar:\n    constraint: ^1\n    version: 1.0.0\n    digest: sha256:cd2cb8bb0a47d9dd00b2417610e53aba49163b1fccaee685eeee1ae73d7943c6\n"
	_, _, app := prepareRepo(t, map[string]string{"repo/apps/web/" + inject.PinsFileName: pins})
	set := map[string]string{"sidecar.image": "registry.example/shipper:2", "sidecar.port": "9"}
	for _, with := range [][]string{{"sidecar"}, {"sidecar@^1"}, {"sidecar@1.0.0"}, nil} {
		in, err := webRequest(Params{With: with, WithSet: set}).Prepare(app, Policy{Library: lib})
		if err != nil {
			t.Fatalf("with %q: %v", with, err)
		}
		if len(in.Template.Injectors.Specs) != 1 {
			t.Fatalf("with %q: injectors %v, want the sidecar alone", with, specNames(in.Template.Injectors))
		}
		ref := in.Template.Injectors.Specs[0].(*inject.TemplateRef)
		if diff := cmp.Diff(map[string]any{"image": "registry.example/shipper:2", "port": int64(9)}, ref.Params); diff != "" {
			t.Errorf("with %q: the sidecar's parameters (-want +got)\n%s", with, diff)
		}
	}

	// Without a pins file there is no "with" to take from it.
	_, _, bare := prepareRepo(t, nil)
	_, err = webRequest(Params{WithSet: set}).Prepare(bare, Policy{Library: lib})
	if err == nil || !strings.Contains(err.Error(), `with-set is given without "with"`) {
		t.Errorf("with-set without with: %v, want an error", err)
	}
}

// TestDiscoverEveryParameter: discovery says yes to a plugin section that
// gives any of helm-inject's parameters, chart-values included (Argo CD's
// UI saves the announced map with the Application). A user would
// otherwise see Argo CD report that no cmp-server plugin supports the
// repository for an Application edited in the UI.
func TestDiscoverEveryParameter(t *testing.T) {
	dir := t.TempDir()
	// Every parameter docs/argocd.md lists, written out.
	for _, name := range []string{
		"release-name", "chart", "values-files", "values", "set", "set-string", "set-file",
		"ignore-missing-value-files", "injector", "inject", "operator-injector", "operator-injector-set",
		"with", "with-set", "injector-library", "skip-inject-hooks", "skip-inject-tests", "skip-tests",
		"skip-crds", "skip-schema-validation", "chart-values",
	} {
		env := []string{"ARGOCD_APP_NAME=web", `ARGOCD_APP_PARAMETERS=[{"name":"` + name + `","string":"x"}]`}
		if !Discover(dir, env) {
			t.Errorf("a plugin section giving %s is not discovered", name)
		}
	}
	ui := `ARGOCD_APP_PARAMETERS=[{"name":"set","map":{"replicas":"2"}},{"name":"chart-values","map":{"replicas":"1","image":"web:1"}}]`
	if !Discover(dir, []string{"ARGOCD_APP_NAME=web", ui}) {
		t.Errorf("an Application saved by Argo CD's UI (set and chart-values) is not discovered")
	}
}

// TestEnvEntriesOfMapParameters: a map parameter is given only as a
// parameter; a plugin env entry of the same name (ARGOCD_ENV_SET, which
// an Application may set for its own reasons) is not read, and is no
// error. A user would otherwise see generate fail with "plugin parameter
// "set" is a map".
func TestEnvEntriesOfMapParameters(t *testing.T) {
	got, err := ReadRequest([]string{
		"ARGOCD_APP_NAME=web",
		"ARGOCD_ENV_SET=replicas=2", "ARGOCD_ENV_SET_STRING=a=b", "ARGOCD_ENV_SET_FILE=cfg=files/cfg.txt",
		"ARGOCD_ENV_WITH_SET=x.y=z", "ARGOCD_ENV_OPERATOR_INJECTOR_SET=istio.revision=canary",
		"ARGOCD_ENV_CHART_VALUES=replicas=1",
		// A string and a list entry are read.
		"ARGOCD_ENV_CHART=chart", "ARGOCD_ENV_WITH=sidecar@^1",
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Params{Chart: "chart", With: []string{"sidecar@^1"}}, got.Params); diff != "" {
		t.Errorf("parameters (-want +got)\n%s", diff)
	}
}

// TestAnnouncePackagedChart: the dynamic parameters command announces the
// values of a chart given as a .tgz in the repository. A user would
// otherwise see an error in Argo CD's UI instead of the chart's values.
func TestAnnouncePackagedChart(t *testing.T) {
	repo := t.TempDir()
	testfs.Write(t, repo, map[string]string{"apps/web/placeholder": ""})
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range []struct{ name, body string }{
		{"web/Chart.yaml", "apiVersion: v2\nname: web\nversion: 0.1.0\n"},
		{"web/values.yaml", "replicas: 2\nimage:\n  tag: v1\n"},
		{"web/templates/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n"},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(f.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "apps", "web", "web-0.1.0.tgz"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	ann, err := (&Request{Release: "web", SourcePath: "apps/web", Params: Params{Chart: "web-0.1.0.tgz"}}).Announce(filepath.Join(repo, "apps", "web"), budget.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ann) != 1 || ann[0].Name != ParamChartValues {
		t.Fatalf("announced %+v, want chart-values alone", ann)
	}
	if diff := cmp.Diff(map[string]string{"replicas": "2", "image.tag": "v1"}, ann[0].Map); diff != "" {
		t.Errorf("chart-values (-want +got)\n%s", diff)
	}
}
