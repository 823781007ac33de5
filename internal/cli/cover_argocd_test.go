package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v4/pkg/cli"

	"github.com/helm-inject/helm-inject/argocd"
	"github.com/helm-inject/helm-inject/inject"
	"github.com/helm-inject/helm-inject/internal/confine"
	"github.com/helm-inject/helm-inject/internal/testfs"
)

// argocdVars are the variables Argo CD's repo-server gives a plugin.
var argocdVars = []string{"ARGOCD_APP_NAME", "ARGOCD_APP_NAMESPACE", "ARGOCD_APP_SOURCE_PATH", "KUBE_VERSION", "KUBE_API_VERSIONS", "ARGOCD_APP_PARAMETERS", "ARGOCD_CMP_WORKDIR"}

// argocdEnv sets the repo-server's variables to env (NAME=VALUE), unsets
// the others for the test, and runs the test in dir.
func argocdEnv(t *testing.T, dir string, env ...string) {
	t.Helper()
	for _, k := range argocdVars {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	t.Chdir(dir)
}

// TestArgocdParametersPrintsChartValues: argocd parameters prints, as the
// JSON Argo CD reads, the chart-values parameter with the chart's own
// values flattened to --set paths, for an application with no name yet
// (the New App panel) and for one whose "chart" parameter names a chart
// in another folder; a chart outside the repository and parameters that
// are not JSON fail, printing nothing.
func TestArgocdParametersPrintsChartValues(t *testing.T) {
	repo := t.TempDir()
	appDir := filepath.Join(repo, "apps", "web")
	copyChart(t, appDir)
	other := filepath.Join(repo, "apps", "other")
	testfs.Write(t, other, map[string]string{"README": "values elsewhere\n"})
	webappValues := map[string]string{
		"image": "registry.example/webapp:2.7.0", "replicas": "1", "greeting": "hello",
		"lookupConfigMap": "webapp-existing", "cache.enabled": "true",
	}
	for _, tt := range []struct {
		name string
		dir  string
		env  []string
	}{
		{"no name yet", appDir, []string{"ARGOCD_APP_SOURCE_PATH=apps/web"}},
		{"named", appDir, []string{"ARGOCD_APP_NAME=argocd_web", "ARGOCD_APP_NAMESPACE=shop", "ARGOCD_APP_SOURCE_PATH=apps/web"}},
		{"chart parameter", other, []string{"ARGOCD_APP_NAME=other", "ARGOCD_APP_SOURCE_PATH=apps/other", `ARGOCD_APP_PARAMETERS=[{"name":"chart","string":"../web"}]`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			argocdEnv(t, tt.dir, tt.env...)
			out, errOut, code := runCLI(t, "argocd", "parameters", "--confine=off", "--max-memory-mib=0")
			var got []argocd.Announcement
			if err := json.Unmarshal([]byte(out), &got); err != nil || code != 0 {
				t.Fatalf("exit %d, %v:\n%s%s", code, err, out, errOut)
			}
			if len(got) != 1 || got[0].Name != argocd.ParamChartValues || got[0].CollectionType != "map" {
				t.Fatalf("want the chart-values map parameter alone:\n%s", out)
			}
			if diff := cmp.Diff(webappValues, got[0].Map); diff != "" {
				t.Errorf("chart-values (-want +got):\n%s", diff)
			}
			if !strings.HasPrefix(out, "[\n  {\n    \"name\": \"chart-values\",\n") {
				t.Errorf("not indented JSON:\n%s", out)
			}
		})
	}
	for _, tt := range []struct {
		name, params, want string
	}{
		{"chart outside the repository", `[{"name":"chart","string":"../../.."}]`, `chart "../../.."`},
		{"parameters not JSON", `{`, "reading ARGOCD_APP_PARAMETERS"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			argocdEnv(t, appDir, "ARGOCD_APP_NAME=web", "ARGOCD_APP_SOURCE_PATH=apps/web", "ARGOCD_APP_PARAMETERS="+tt.params)
			out, errOut, code := runCLI(t, "argocd", "parameters", "--confine=off", "--max-memory-mib=0")
			if code != 1 || out != "" || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want 1, nothing printed and %q", code, out, errOut, tt.want)
			}
		})
	}
	if _, errOut, code := runCLI(t, "argocd", "parameters", "extra"); code != 1 || !strings.Contains(errOut, `unknown command "extra"`) {
		t.Errorf("parameters with an argument: exit %d, %s", code, errOut)
	}
}

// TestArgocdDiscover: argocd discover prints "helm-inject" (Argo CD's
// match) for a folder with a pins file and for an application whose
// plugin parameters are all helm-inject's (or none), and nothing for an
// application without either, or with a parameter of another plugin.
func TestArgocdDiscover(t *testing.T) {
	plain := t.TempDir()
	pinned := t.TempDir()
	testfs.Write(t, pinned, map[string]string{inject.PinsFileName: "injectors: {}\n"})
	for _, tt := range []struct {
		name   string
		dir    string
		params string // ARGOCD_APP_PARAMETERS, unset when empty
		want   string
	}{
		{"plain folder", plain, "", ""},
		{"pins file", pinned, "", "helm-inject\n"},
		{"pins file, another plugin's parameters", pinned, `[{"name":"kustomize-image","string":"x"}]`, "helm-inject\n"},
		{"helm-inject's parameters", plain, `[{"name":"set","map":{"replicas":"2"}},{"name":"with","array":["log-shipper@^1"]}]`, "helm-inject\n"},
		{"a plugin section without parameters", plain, `[]`, "helm-inject\n"},
		{"another plugin's parameter", plain, `[{"name":"set","map":{"a":"b"}},{"name":"kustomize-image","string":"x"}]`, ""},
		{"parameters not JSON", plain, `{`, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var env []string
			if tt.params != "" {
				env = append(env, "ARGOCD_APP_PARAMETERS="+tt.params)
			}
			argocdEnv(t, tt.dir, env...)
			out, errOut, code := runCLI(t, "argocd", "discover", "--confine=off", "--max-memory-mib=0")
			if code != 0 || out != tt.want {
				t.Errorf("exit %d, stdout %q (%s); want 0 and %q", code, out, errOut, tt.want)
			}
		})
	}
}

// lockedDigest is the digest the library's lock records for NAME VERSION.
func lockedDigest(t *testing.T, library, name, version string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(library, inject.LockFileName))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == name && f[1] == version {
			return f[2]
		}
	}
	t.Fatalf("%s has no %s %s", library, name, version)
	return ""
}

// TestArgocdPin: argocd pin writes DIR/helm-inject-pins.yaml with the
// version --with's constraint resolves to, says what it pinned, says
// "unchanged" (and leaves the file alone) when nothing changes, moves a
// pin with --update and says from what to what, and refuses, naming the
// folder or the flag, what it cannot pin.
func TestArgocdPin(t *testing.T) {
	lib := filepath.Join("..", "..", "examples", "injectors")
	dir := t.TempDir()
	pinsFile := filepath.Join(dir, inject.PinsFileName)
	pin := func(args ...string) (string, string, int) {
		t.Helper()
		return runCLI(t, append([]string{"argocd", "pin", "--injector-library", lib}, args...)...)
	}
	pins := func() inject.Pins {
		t.Helper()
		p, err := inject.ReadPins(pinsFile)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}

	out, errOut, code := pin("--with", "log-shipper@~1.0", "--with", "oauth2-proxy", dir)
	want := dir + ": pinned log-shipper@1.0.0\n" + dir + ": pinned oauth2-proxy@1.1.0\n"
	if code != 0 || out != want {
		t.Fatalf("first pin: exit %d, %q (%s); want %q", code, out, errOut, want)
	}
	wantPins := inject.Pins{
		"log-shipper":  {Constraint: "~1.0", Version: "1.0.0", Digest: lockedDigest(t, lib, "log-shipper", "1.0.0")},
		"oauth2-proxy": {Version: "1.1.0", Digest: lockedDigest(t, lib, "oauth2-proxy", "1.1.0")},
	}
	if diff := cmp.Diff(wantPins, pins()); diff != "" {
		t.Errorf("%s (-want +got):\n%s", inject.PinsFileName, diff)
	}
	written, err := os.ReadFile(pinsFile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(written), "# The built-in injector versions of this application") {
		t.Errorf("the pins file lacks its header:\n%s", written)
	}

	// The same pin again: unchanged, the file not rewritten.
	if err := os.Chtimes(pinsFile, time.Unix(1, 0), time.Unix(1, 0)); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := pin("--with", "log-shipper@~1.0", dir); code != 0 || out != dir+": unchanged\n" {
		t.Errorf("the same pin again: exit %d, %q (%s); want %q", code, out, errOut, dir+": unchanged\n")
	}
	if fi, err := os.Stat(pinsFile); err != nil || fi.ModTime().Unix() != 1 {
		t.Errorf("an unchanged pin rewrote the file (%v)", err)
	}

	// --update with a wider constraint moves the pin.
	out, errOut, code = pin("--update", "--with", "log-shipper@^1", dir)
	if code != 0 || out != dir+": log-shipper 1.0.0 -> 1.1.0\n" {
		t.Errorf("--update --with log-shipper@^1: exit %d, %q (%s)", code, out, errOut)
	}
	if got := pins()["log-shipper"]; got.Version != "1.1.0" || got.Constraint != "^1" || got.Digest != lockedDigest(t, lib, "log-shipper", "1.1.0") {
		t.Errorf("after --update: log-shipper pinned as %+v", got)
	}
	if got := pins()["oauth2-proxy"]; got.Version != "1.1.0" {
		t.Errorf("--update --with log-shipper changed oauth2-proxy: %+v", got)
	}

	// --update alone, with every pin at its newest: unchanged.
	if out, errOut, code := pin("--update", dir); code != 0 || out != dir+": unchanged\n" {
		t.Errorf("--update with nothing newer: exit %d, %q (%s)", code, out, errOut)
	}

	// A folder with no pins file yet and --update alone: an empty pins file.
	empty := t.TempDir()
	if _, errOut, code := pin("--update", empty); code != 0 {
		t.Errorf("--update on a folder without pins: exit %d (%s)", code, errOut)
	}
	if b, err := os.ReadFile(filepath.Join(empty, inject.PinsFileName)); err != nil || !strings.HasSuffix(string(b), "injectors: {}\n") {
		t.Errorf("--update on a folder without pins wrote %q (%v)", b, err)
	}

	broken := t.TempDir()
	testfs.Write(t, broken, map[string]string{inject.PinsFileName: "injectors: [\n"})
	before, _ := os.ReadFile(pinsFile)
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"nothing to pin", []string{dir}, "say what to pin: --with NAME@CONSTRAINT, or --update to move every pin of DIR"},
		{"no folder", []string{"--with", "log-shipper"}, "requires at least 1 arg(s), only received 0"},
		{"unknown injector", []string{"--with", "no-such-injector", dir}, dir + `: injector "no-such-injector" is not in the library`},
		{"a constraint that does not parse", []string{"--with", "log-shipper@>>1", dir}, dir + ": injector log-shipper@>>1: version constraint"},
		{"no injector name", []string{"--with", "@1", dir}, `--with "@1": want NAME or NAME@VERSION-CONSTRAINT`},
		{"no version in the constraint", []string{"--with", "log-shipper@^9", dir}, dir + ": "},
		{"an unreadable pins file", []string{"--with", "log-shipper", broken}, broken + ": "},
		{"no library", []string{"--injector-library", filepath.Join(t.TempDir(), "none"), "--with", "log-shipper", dir}, "injector library "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := pin(tt.args...)
			if code != 1 || !strings.HasPrefix(errOut, "Error: "+tt.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want 1 and %q", code, out, errOut, tt.want)
			}
		})
	}
	if after, _ := os.ReadFile(pinsFile); !bytes.Equal(before, after) {
		t.Errorf("a refused pin changed %s:\n%s", pinsFile, after)
	}
}

// TestArgocdPinSaysAConstraintChange: a --with whose constraint changes
// while the pinned version still satisfies it (pinned ~1.0 at 1.0.0, then
// --with log-shipper@^1) rewrites helm-inject-pins.yaml with the new
// constraint and says so, as pin says what it changes in each folder
// (it said nothing at all).
func TestArgocdPinSaysAConstraintChange(t *testing.T) {
	lib := filepath.Join("..", "..", "examples", "injectors")
	dir := t.TempDir()
	if _, errOut, code := runCLI(t, "argocd", "pin", "--injector-library", lib, "--with", "log-shipper@~1.0", dir); code != 0 {
		t.Fatalf("first pin: exit %d: %s", code, errOut)
	}
	out, errOut, code := runCLI(t, "argocd", "pin", "--injector-library", lib, "--with", "log-shipper@^1", dir)
	pins, err := inject.ReadPins(filepath.Join(dir, inject.PinsFileName))
	if err != nil || code != 0 || pins["log-shipper"].Constraint != "^1" {
		t.Fatalf("exit %d (%s), %v: %+v", code, errOut, err, pins)
	}
	if want := dir + ": log-shipper@1.0.0 constraint \"~1.0\" -> \"^1\"\n"; out != want {
		t.Errorf("the pin's constraint changed from ~1.0 to ^1 and pin said %q, want %q", out, want)
	}
}

// TestArgocdProvision: argocd provision DEST fills the sidecar's volume:
// DEST/bin/helm-inject (this executable), every program of --tools in
// DEST/bin but a ConfigMap volume's dot entries, and the checked library
// in DEST/injectors (or an empty one without --library); a library whose
// locked version was removed is refused, and DEST is required.
func TestArgocdProvision(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	selfInfo, err := os.Stat(self)
	if err != nil {
		t.Fatal(err)
	}
	tools := t.TempDir()
	testfs.Write(t, tools, map[string]string{"istioctl": "#!/bin/sh\necho istioctl\n", "..data/skip": "x"})
	lib := filepath.Join("..", "..", "examples", "injectors")

	dest := filepath.Join(t.TempDir(), "plugin")
	if out, errOut, code := runCLI(t, "argocd", "provision", "--library", lib, "--tools", tools, dest); code != 0 || out != "" {
		t.Fatalf("exit %d, %q: %s", code, out, errOut)
	}
	if fi, err := os.Stat(filepath.Join(dest, "bin", "helm-inject")); err != nil || fi.Size() != selfInfo.Size() || fi.Mode().Perm() != 0o755 {
		t.Errorf("DEST/bin/helm-inject is not this executable, executable (%v)", err)
	}
	if b, err := os.ReadFile(filepath.Join(dest, "bin", "istioctl")); err != nil || string(b) != "#!/bin/sh\necho istioctl\n" {
		t.Errorf("DEST/bin/istioctl: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dest, "bin", "..data")); err == nil {
		t.Error("a dot entry of --tools was copied")
	}
	for _, f := range []string{"log-shipper/1.0.0.yaml", "log-shipper/1.1.0.yaml", "cloudsql-proxy/2.0.0.yaml", "oauth2-proxy/1.1.0.yaml", inject.LockFileName} {
		want, _ := os.ReadFile(filepath.Join(lib, f))
		if got, err := os.ReadFile(filepath.Join(dest, "injectors", f)); err != nil || !bytes.Equal(got, want) {
			t.Errorf("DEST/injectors/%s is not the library's (%v)", f, err)
		}
	}

	// Without --library: an empty library, and no tools.
	bare := filepath.Join(t.TempDir(), "plugin")
	if _, errOut, code := runCLI(t, "argocd", "provision", bare); code != 0 {
		t.Fatalf("without --library: exit %d: %s", code, errOut)
	}
	if entries, err := os.ReadDir(filepath.Join(bare, "injectors")); err != nil || len(entries) != 0 {
		t.Errorf("without --library, DEST/injectors: %v, %v; want an empty folder", entries, err)
	}
	if entries, _ := os.ReadDir(filepath.Join(bare, "bin")); len(entries) != 1 {
		t.Errorf("without --tools, DEST/bin holds %d entries; want helm-inject alone", len(entries))
	}

	// A locked version removed from the library: refused.
	gone := filepath.Join(t.TempDir(), "library")
	if err := os.CopyFS(gone, os.DirFS(lib)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(gone, "log-shipper", "1.0.0.yaml")); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runCLI(t, "argocd", "provision", "--library", gone, filepath.Join(t.TempDir(), "plugin"))
	if code != 1 || errOut != "Error: injector library "+gone+": log-shipper@1.0.0 locked in injectors.lock but removed: a released version must stay, applications may pin it\n" {
		t.Errorf("a removed locked version: exit %d, %s", code, errOut)
	}
	if _, errOut, code := runCLI(t, "argocd", "provision"); code != 1 || !strings.Contains(errOut, "accepts 1 arg(s), received 0") {
		t.Errorf("no DEST: exit %d, %s", code, errOut)
	}
}

// TestArgocdGenerateRefusals: argocd generate prints nothing on stdout
// and fails, naming the application (or the operator's variable), for
// parameters that are not JSON, an operator's injectors file that does
// not exist, a values file the
// application does not have, a chart that fails to render, and a chart
// whose only object is a test hook left out by skip-tests (an empty output
// would make Argo CD prune everything).
func TestArgocdGenerateRefusals(t *testing.T) {
	repo := t.TempDir()
	testfs.Write(t, filepath.Join(repo, "apps", "broken"), map[string]string{
		"Chart.yaml":          "apiVersion: v2\nname: broken\nversion: 0.1.0\n",
		"templates/cm.yaml":   "{{ fail \"the chart refuses\" }}\n",
		"templates/NOTES.txt": "",
	})
	testfs.Write(t, filepath.Join(repo, "apps", "empty"), map[string]string{
		"Chart.yaml":          "apiVersion: v2\nname: empty\nversion: 0.1.0\n",
		"templates/test.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: smoke\n  annotations:\n    helm.sh/hook: test\nspec:\n  containers: [{name: s, image: \"s:1\"}]\n",
	})
	copyChart(t, filepath.Join(repo, "apps", "web"))
	noLandlock := confine.Kernel{ABI: func() int { return 0 }}
	for _, tt := range []struct {
		name string
		app  string
		env  []string
		want string
	}{
		{"parameters not JSON", "web", []string{`ARGOCD_APP_PARAMETERS={`}, "application web: reading ARGOCD_APP_PARAMETERS: "},
		{"operator's injectors file missing", "web", []string{"--operator-injectors=" + filepath.Join(repo, "no-such-injectors.yaml")}, "--operator-injectors (" + filepath.Join(repo, "no-such-injectors.yaml") + "): "},
		{"values file missing", "web", []string{`ARGOCD_APP_PARAMETERS=[{"name":"values-files","array":["prod.yaml"]}]`}, `application web: values file "prod.yaml" does not exist in the repository`},
		{"template fails", "broken", nil, `application broken: release "broken": rendering apps/broken: execution error at (broken/templates/cm.yaml:1:3): the chart refuses`},
		{"no objects", "empty", []string{`ARGOCD_APP_PARAMETERS=[{"name":"skip-tests","string":"true"}]`}, "application empty: the chart rendered no objects; refusing to print nothing (Argo CD would prune every resource)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var env, args []string
			for _, e := range tt.env {
				if strings.HasPrefix(e, "--") {
					args = append(args, e)
				} else {
					env = append(env, e)
				}
			}
			argocdEnv(t, filepath.Join(repo, "apps", tt.app), append([]string{"ARGOCD_APP_NAME=" + tt.app, "ARGOCD_APP_NAMESPACE=shop",
				"ARGOCD_APP_SOURCE_PATH=apps/" + tt.app, "KUBE_VERSION=1.31.4"}, env...)...)
			t.Setenv("TMPDIR", t.TempDir())
			var out, errb bytes.Buffer
			root := newRootCommandOn(cli.New(), noLandlock, nil, &out, &errb)
			root.SetArgs(append([]string{"argocd", "generate", "--confine=off", "--max-memory-mib=0"}, args...))
			err := root.ExecuteContext(t.Context())
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) || out.Len() != 0 {
				t.Errorf("error %v, stdout %q; want %q and nothing printed", err, out.String(), tt.want)
			}
		})
	}
}
