package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/helm-inject/helm-inject/internal/testfs"
)

// TestArgoCDFetchesNothing: no parameter or file of an Application makes
// generate fetch a URL or read a file outside its repository. Every way
// helm would fetch or read one is tried against a real HTTP server and a
// real file beside the repository: a set-file key that smuggles a second
// entry (helm's --set-file "greeting=URL,x=cfg" would read the URL or
// the file into .Values.greeting, which the chart renders), a values file
// or set-file path given as a URL, a chart given as a URL or an OCI
// reference, a dependency from an HTTP repository, a values.schema.json
// "$ref" to a URL, an injector library given as a URL. Each is refused
// naming the application and the entry, nothing is printed on stdout,
// the server gets no request, and the file's content is never shown.
// The same URL given to template's --values is fetched: the server is
// real.
func TestArgoCDFetchesNothing(t *testing.T) {
	plugin := shippedPlugin(t)
	repo := argoRepo(t)
	const secret = "tenant-b-password-4711"
	outside := filepath.Join(filepath.Dir(repo), "outside")
	testfs.Write(t, outside, map[string]string{"secret.txt": secret + "\n"})
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		switch {
		case strings.HasSuffix(r.URL.Path, ".json"):
			fmt.Fprint(w, `{"type": "integer"}`)
		case strings.HasSuffix(r.URL.Path, ".yaml"):
			fmt.Fprint(w, "greeting: "+secret+"\n")
		default:
			fmt.Fprint(w, secret)
		}
	}))
	defer srv.Close()
	testfs.Write(t, repo, map[string]string{
		"apps/web/files/cfg.txt":         "from the repository\n",
		"apps/deps/Chart.yaml":           "apiVersion: v2\nname: deps\nversion: 0.1.0\ndependencies:\n  - name: lib\n    version: 1.0.0\n    repository: " + srv.URL + "/charts\n",
		"apps/deps/templates/cm.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: deps\n",
		"apps/schema/Chart.yaml":         "apiVersion: v2\nname: schema\nversion: 0.1.0\n",
		"apps/schema/values.yaml":        "replicas: 1\n",
		"apps/schema/values.schema.json": `{"type": "object", "properties": {"replicas": {"$ref": "` + srv.URL + `/count.json"}}}`,
		"apps/schema/templates/cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: schema\n",
	})

	pinApp(t, repo, "shop")

	for name, tc := range map[string]struct {
		app     string
		params  []argoParam
		message string
	}{
		"a set-file key smuggling a URL entry": {
			params:  []argoParam{{Name: "set-file", Map: map[string]string{"greeting=" + srv.URL + "/token,x": "files/cfg.txt"}}},
			message: `set-file key "greeting=` + srv.URL + `/token,x" holds '='`,
		},
		"a set-file key smuggling a file entry": {
			params:  []argoParam{{Name: "set-file", Map: map[string]string{"greeting=" + outside + "/secret.txt,x": "files/cfg.txt"}}},
			message: `set-file key "greeting=` + outside + `/secret.txt,x" holds '='`,
		},
		"a set key smuggling a set-file entry": {
			params:  []argoParam{{Name: "set", Map: map[string]string{"replicas=1,greeting": "2"}}},
			message: `set key "replicas=1,greeting" holds '='`,
		},
		"a set-file URL": {
			params:  []argoParam{{Name: "set-file", Map: map[string]string{"greeting": srv.URL + "/token"}}},
			message: `set-file greeting "` + srv.URL + `/token": give a path relative to the application's folder`,
		},
		"a values file URL": {
			params:  []argoParam{{Name: "values-files", Array: []string{srv.URL + "/values.yaml"}}},
			message: `values file "` + srv.URL + `/values.yaml": give a path relative to the application's folder`,
		},
		"a chart URL": {
			params:  []argoParam{{Name: "chart", String: str(srv.URL + "/web-0.1.0.tgz")}},
			message: `chart "` + srv.URL + `/web-0.1.0.tgz": give a path relative to the application's folder`,
		},
		"an OCI chart": {
			params:  []argoParam{{Name: "chart", String: str("oci://" + strings.TrimPrefix(srv.URL, "http://") + "/charts/web")}},
			message: `give a path relative to the application's folder`,
		},
		"an injector library URL": {
			app:     "shop",
			params:  []argoParam{{Name: "with", Array: []string{"sidecar@^1"}}, {Name: "injector-library", String: str(srv.URL + "/library")}},
			message: `injector library "` + srv.URL + `/library": give a path relative to the application's folder`,
		},
		"a dependency from an HTTP repository": {
			app:     "deps",
			message: `dependency lib (` + srv.URL + `/charts) is not in its charts/ folder, and the plugin reaches no network`,
		},
		"a schema $ref to a URL": {
			app:     "schema",
			message: `values.schema.json refers to ` + srv.URL + `/count.json: the schema is read from the chart only`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			app := tc.app
			if app == "" {
				app = "web"
			}
			r := runPluginCommand(t, plugin.Spec.Generate.Command, filepath.Join(repo, "apps", app), argoEnv(t, app, "apps/"+app, tc.params, nil))
			if r.code == 0 || r.stdout != "" {
				t.Fatalf("want a refusal with nothing on stdout:\n%s", r)
			}
			if !strings.Contains(r.stderr, tc.message) || !strings.Contains(r.stderr, "application "+app) {
				t.Errorf("stderr does not name the application and say %q:\n%s", tc.message, r.stderr)
			}
			if strings.Contains(r.stdout+r.stderr, secret) {
				t.Errorf("the outside file's or the server's content was printed:\n%s", r)
			}
		})
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("the server got %d requests from generate", n)
	}

	// A set-file path is read from the repository.
	ok := runPluginCommand(t, plugin.Spec.Generate.Command, filepath.Join(repo, "apps", "web"), argoEnv(t, "web", "apps/web",
		[]argoParam{{Name: "set-file", Map: map[string]string{"greeting": "files/cfg.txt"}}}, nil))
	if ok.code != 0 || !strings.Contains(ok.stdout, `greeting: "from the repository\n"`) {
		t.Errorf("set-file from the repository:\n%s", ok)
	}

	// The control: template's --values fetches a URL as helm does, so the
	// server above would have seen a request.
	tmpl := command{dir: filepath.Join(repo, "apps", "web")}.run(t, filepath.Join(binDir, "helm-inject"), "template", "web", ".", "--values", srv.URL+"/values.yaml")
	if tmpl.code != 0 || !strings.Contains(tmpl.stdout, secret) || requests.Load() == 0 {
		t.Errorf("template --values URL: %d requests\n%s", requests.Load(), tmpl)
	}
}
