package chartify

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"

	"github.com/helm-inject/helm-inject/internal/repofs"
	"github.com/helm-inject/helm-inject/internal/testfs"
)

// TestCheckKustomizationLocal: a kustomization that reads only files of
// the repository passes; each way of reaching past it (the network, a Git
// clone, a path outside, a Helm chart pull), at the top or in a base it
// refers to, is refused with the file and the entry named.
func TestCheckKustomizationLocal(t *testing.T) {
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n"
	tests := []struct {
		name, kustomization, wantErr string
	}{
		{"local files and bases", "resources: [cm.yaml, ../base]\ncomponents: [../comp]\nconfigMapGenerator:\n- name: g\n  files: [k=cm.yaml]\npatches:\n- path: cm.yaml\n", ""},
		{"an inline patch", "resources: [cm.yaml]\npatchesStrategicMerge:\n- |\n  apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: cm}\n", ""},
		{"an http resource", "resources: [http://127.0.0.1:9/cm.yaml]\n", `resources entry "http://127.0.0.1:9/cm.yaml" is remote`},
		{"an https base", "bases: [https://git.example/org/repo//base]\n", `bases entry "https://git.example/org/repo//base" is remote`},
		{"a git:: component", "components: [git::https://git.example/org/repo]\n", `components entry "git::https://git.example/org/repo" is remote`},
		{"an SCP-style Git URL", "resources: [git@git.example:org/repo.git]\n", `resources entry "git@git.example:org/repo.git" is remote`},
		{"a GitHub short form", "resources:\n- github.com/org/repo/base?ref=v1\n", `resources entry "github.com/org/repo/base?ref=v1" is remote`},
		{"a remote configuration", "resources: [cm.yaml]\nconfigurations: [https://git.example/c.yaml]\n", `configurations entry "https://git.example/c.yaml" is remote`},
		{"a remote generator file", "configMapGenerator:\n- name: g\n  files: [k=https://git.example/f]\n", `configMapGenerator/secretGenerator entry "https://git.example/f" is remote`},
		{"a remote env file", "secretGenerator:\n- name: g\n  envs: [https://git.example/e]\n", `configMapGenerator/secretGenerator entry "https://git.example/e" is remote`},
		{"a remote patch", "resources: [cm.yaml]\npatches:\n- path: https://git.example/p.yaml\n", `patches entry "https://git.example/p.yaml" is remote`},
		{"an inline transformer naming a URL", "resources: [cm.yaml]\ntransformers:\n- |\n  apiVersion: builtin\n  kind: PatchTransformer\n  metadata: {name: p}\n  path: https://git.example/p.yaml\n", "an inline entry of transformers names a URL"},
		{"a file outside the repository", "resources: [../../outside.yaml]\n", `resources entry "../../outside.yaml" is outside the repository`},
		{"an absolute path", "resources: [/etc/hostname]\n", `resources entry "/etc/hostname": give a path relative`},
		// kustomize cleans s/../outside.yaml as text, to app/outside.yaml,
		// before it asks the file system: the check looks there too.
		{"through a link and ..", "resources: [s/../outside.yaml]\n", ""},
		{"through a link out of the repository", "resources: [up/outside.yaml]\n", `resources entry "up/outside.yaml" is outside the repository`},
		{"a remote resource in a base", "resources: [../remote-base]\n", `remote-base/kustomization.yaml: resources entry "https://git.example/cm.yaml" is remote`},
		{"a Helm chart", "helmCharts:\n- name: web\n  repo: https://charts.example\n", "helmCharts are not allowed here"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			top := t.TempDir()
			repo := filepath.Join(top, "repo")
			testfs.Write(t, top, map[string]string{
				"outside.yaml":                        cm,
				"repo/app/kustomization.yaml":         tt.kustomization,
				"repo/app/cm.yaml":                    cm,
				"repo/app/outside.yaml":               cm, // what s/../outside.yaml is, cleaned lexically
				"repo/base/kustomization.yaml":        "resources: [cm.yaml]\n",
				"repo/base/cm.yaml":                   cm,
				"repo/comp/kustomization.yaml":        "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n",
				"repo/remote-base/kustomization.yaml": "resources: [https://git.example/cm.yaml]\n",
			})
			for link, target := range map[string]string{"s": "..", "up": "../.."} {
				if err := os.Symlink(target, filepath.Join(repo, "app", link)); err != nil {
					t.Fatal(err)
				}
			}
			r, err := repofs.Open(repo)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			err = CheckKustomizationLocal(r, "app")
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "kustomization ") || strings.Contains(err.Error(), top) {
				t.Fatalf("error %v, want one naming the kustomization (a repository path) and %q", err, tt.wantErr)
			}
		})
	}
}

// TestKustomizeFetchesNothing: a kustomization of a repository that names
// a URL where the check before the build used not to look (a generator,
// transformer or validator configuration file, a folder reached through
// "link/..", a component) is refused, by the check naming the file and
// the entry, and by the build alone with no check before it: the server
// the URL names sees no request, from kustomize's HTTP client or from a
// Git clone. The check looks where kustomize reads: "link/../sub" is the
// folder sub beside link, whatever link leads to.
func TestKustomizeFetchesNothing(t *testing.T) {
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n"
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		fmt.Fprint(w, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fetched\n")
	}))
	defer srv.Close()
	url := srv.URL
	// app/link leads to other/, so the kernel resolves app/link/../sub
	// to sub/ at the top; kustomize cleans the path as text first and
	// reads app/sub/.
	links := map[string]string{"app/link": "../other"}
	tests := []struct {
		name  string
		files map[string]string
		// check and build are what the check's and the build's errors
		// say, each alone; none: it passes.
		check, build []string
		// made is a template the build makes when it succeeds.
		made string
	}{
		{
			name: "a generator file with an http files entry",
			files: map[string]string{
				"app/kustomization.yaml": "generators: [gen.yaml]\n",
				"app/gen.yaml":           "apiVersion: builtin\nkind: ConfigMapGenerator\nmetadata:\n  name: g\nfiles: [k={{URL}}/x]\n",
			},
			check: []string{"kustomization app/kustomization.yaml: generators file app/gen.yaml: ConfigMapGenerator files entry \"{{URL}}/x\" is remote"},
			build: []string{"kustomize build app", "{{URL}}/x", "nothing is fetched here"},
		},
		{
			name: "a transformer file with a patch path URL",
			files: map[string]string{
				"app/kustomization.yaml": "resources: [cm.yaml]\ntransformers: [patch.yaml]\n",
				"app/cm.yaml":            cm,
				"app/patch.yaml":         "apiVersion: builtin\nkind: PatchTransformer\nmetadata:\n  name: p\npath: {{URL}}/p.yaml\ntarget: {kind: ConfigMap}\n",
			},
			check: []string{"kustomization app/kustomization.yaml: transformers file app/patch.yaml: PatchTransformer path entry \"{{URL}}/p.yaml\" is remote"},
			build: []string{"kustomize build app", "{{URL}}/p.yaml", "nothing is fetched here"},
		},
		{
			name: "a validator file with a JSON patch path URL",
			files: map[string]string{
				"app/kustomization.yaml": "resources: [cm.yaml]\nvalidators: [v.yaml]\n",
				"app/cm.yaml":            cm,
				"app/v.yaml":             "apiVersion: builtin\nkind: PatchJson6902Transformer\nmetadata:\n  name: v\npath: {{URL}}/ops.yaml\ntarget: {kind: ConfigMap, name: cm}\n",
			},
			check: []string{"kustomization app/kustomization.yaml: validators file app/v.yaml: PatchJson6902Transformer path entry \"{{URL}}/ops.yaml\" is remote"},
			build: []string{"kustomize build app", "{{URL}}/ops.yaml", "nothing is fetched here"},
		},
		{
			name: "a replacement transformer file with a replacements path URL",
			files: map[string]string{
				"app/kustomization.yaml": "resources: [cm.yaml]\ntransformers: [r.yaml]\n",
				"app/cm.yaml":            cm,
				"app/r.yaml":             "apiVersion: builtin\nkind: ReplacementTransformer\nmetadata:\n  name: r\nreplacements:\n- path: {{URL}}/r.yaml\n",
			},
			check: []string{"kustomization app/kustomization.yaml: transformers file app/r.yaml: ReplacementTransformer replacements entry \"{{URL}}/r.yaml\" is remote"},
			build: []string{"kustomize build app", "{{URL}}/r.yaml", "nothing is fetched here"},
		},
		{
			name: "an inline generator with an http env entry",
			files: map[string]string{
				"app/kustomization.yaml": "generators:\n- |\n  apiVersion: builtin\n  kind: SecretGenerator\n  metadata: {name: s}\n  envs: [{{URL}}/e.env]\n",
			},
			check: []string{"kustomization app/kustomization.yaml: an inline entry of generators names a URL"},
			build: []string{"kustomize build app", "{{URL}}/e.env", "nothing is fetched here"},
		},
		{
			name: "link/../sub with an http resource in the folder kustomize reads",
			files: map[string]string{
				"app/kustomization.yaml":     "resources: [link/../sub]\n",
				"app/sub/kustomization.yaml": "resources: [{{URL}}/cm.yaml]\n",
				"other/cm.yaml":              cm,
				"sub/kustomization.yaml":     "resources: [cm.yaml]\n",
				"sub/cm.yaml":                cm,
			},
			check: []string{"kustomization app/sub/kustomization.yaml: resources entry \"{{URL}}/cm.yaml\" is remote"},
			build: []string{"kustomize build app", "{{URL}}/cm.yaml", "nothing is fetched here"},
		},
		{
			name: "a base through a link whose ../sub is beside the link",
			files: map[string]string{
				"app/kustomization.yaml":     "resources: [link]\n",
				"other/kustomization.yaml":   "resources: [../sub]\n",
				"app/sub/kustomization.yaml": "resources: [{{URL}}/cm.yaml]\n",
				"sub/kustomization.yaml":     "resources: [cm.yaml]\n",
				"sub/cm.yaml":                cm,
			},
			check: []string{"kustomization app/sub/kustomization.yaml: resources entry \"{{URL}}/cm.yaml\" is remote"},
			build: []string{"kustomize build app", "{{URL}}/cm.yaml", "nothing is fetched here"},
		},
		{
			name: "link/../sub whose folder kustomize reads is local",
			files: map[string]string{
				"app/kustomization.yaml":     "resources: [link/../sub]\n",
				"app/sub/kustomization.yaml": "resources: [cm.yaml]\n",
				"app/sub/cm.yaml":            cm,
				"other/cm.yaml":              cm,
				"sub/kustomization.yaml":     "resources: [{{URL}}/cm.yaml]\n",
			},
			made: "templates/000-configmap-cm.yaml",
		},
		{
			name: "link/../sub with a Git component in the folder kustomize reads",
			files: map[string]string{
				"app/kustomization.yaml":     "resources: [link/../sub]\n",
				"app/sub/kustomization.yaml": "resources: [cm.yaml]\ncomponents: [git::{{URL}}/repo.git]\n",
				"app/sub/cm.yaml":            cm,
				"other/cm.yaml":              cm,
				"sub/kustomization.yaml":     "resources: [cm.yaml]\n",
				"sub/cm.yaml":                cm,
			},
			check: []string{"kustomization app/sub/kustomization.yaml: components entry \"git::{{URL}}/repo.git\" is remote"},
			build: []string{"kustomize build app", "/app/sub", "no 'git' program"},
		},
		{
			name: "a component whose generator file names a URL",
			files: map[string]string{
				"app/kustomization.yaml":  "resources: [cm.yaml]\ncomponents: [../comp]\n",
				"app/cm.yaml":             cm,
				"comp/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\ngenerators: [gen.yaml]\n",
				"comp/gen.yaml":           "apiVersion: builtin\nkind: SecretGenerator\nmetadata:\n  name: s\nenvs: [{{URL}}/e.env]\n",
			},
			check: []string{"kustomization comp/kustomization.yaml: generators file comp/gen.yaml: SecretGenerator envs entry \"{{URL}}/e.env\" is remote"},
			build: []string{"kustomize build app", "{{URL}}/e.env", "nothing is fetched here"},
		},
		{
			name: "helmCharts in the folder kustomize reads through link/..",
			files: map[string]string{
				"app/kustomization.yaml":     "resources: [link/../sub]\n",
				"app/sub/kustomization.yaml": "helmCharts:\n- name: web\n  repo: {{URL}}\n  version: 1.0.0\n",
				"other/cm.yaml":              cm,
				"sub/kustomization.yaml":     "resources: [cm.yaml]\n",
				"sub/cm.yaml":                cm,
			},
			check: []string{"kustomization app/sub/kustomization.yaml: helmCharts are not allowed here"},
			build: []string{"kustomize build app", "--enable-helm"},
		},
		{
			name: "a Helm chart generator file",
			files: map[string]string{
				"app/kustomization.yaml": "generators: [helm.yaml]\n",
				"app/helm.yaml":          "apiVersion: builtin\nkind: HelmChartInflationGenerator\nmetadata:\n  name: web\nname: web\nrepo: {{URL}}\nversion: 1.0.0\nadditionalValuesFiles: [{{URL}}/values.yaml]\n",
			},
			check: []string{"kustomization app/kustomization.yaml: generators file app/helm.yaml: HelmChartInflationGenerator is not allowed here"},
			build: []string{"kustomize build app", "--enable-helm"},
		},
		{
			name: "an external plugin transformer file",
			files: map[string]string{
				"app/kustomization.yaml": "resources: [cm.yaml]\ntransformers: [plugin.yaml]\n",
				"app/cm.yaml":            cm,
				"app/plugin.yaml":        "apiVersion: example.com/v1\nkind: Fetcher\nmetadata:\n  name: f\n  annotations:\n    config.kubernetes.io/function: |\n      exec: {path: /bin/sh}\n",
			},
			check: []string{"kustomization app/kustomization.yaml: transformers file app/plugin.yaml: example.com/v1 Fetcher is not one of kustomize's built-in generators and transformers"},
			build: []string{"kustomize build app", "external plugins disabled"},
		},
		{
			// The check reads the configuration files a kustomization
			// names, not those a folder's build makes: the build alone
			// refuses this one.
			name: "a folder of generator configurations",
			files: map[string]string{
				"app/kustomization.yaml":      "generators: [gens]\n",
				"app/gens/kustomization.yaml": "resources: [gen.yaml]\n",
				"app/gens/gen.yaml":           "apiVersion: builtin\nkind: ConfigMapGenerator\nmetadata:\n  name: g\nfiles: [k={{URL}}/x]\n",
			},
			build: []string{"kustomize build app", "{{URL}}/x", "nothing is fetched here"},
		},
		{
			name: "a generator file naming files of the repository",
			files: map[string]string{
				"app/kustomization.yaml": "generators: [gen.yaml]\n",
				"app/gen.yaml":           "apiVersion: builtin\nkind: ConfigMapGenerator\nmetadata:\n  name: g\nfiles: [k=data.txt]\n",
				"app/data.txt":           "v\n",
			},
			made: "templates/000-configmap-g-",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requests.Store(0)
			top := t.TempDir()
			files := map[string]string{}
			for name, content := range tt.files {
				files[name] = strings.ReplaceAll(content, "{{URL}}", url)
			}
			testfs.Write(t, top, files)
			for link, target := range links {
				if err := os.Symlink(target, filepath.Join(top, filepath.FromSlash(link))); err != nil {
					t.Fatal(err)
				}
			}
			r, err := repofs.Open(top)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			says := func(what string, err error, want []string) {
				t.Helper()
				if len(want) == 0 {
					if err != nil {
						t.Errorf("%s: %v", what, err)
					}
					return
				}
				if err == nil {
					t.Errorf("%s passed, want an error saying %q", what, want)
					return
				}
				for _, w := range want {
					if w = strings.ReplaceAll(w, "{{URL}}", url); !strings.Contains(err.Error(), w) {
						t.Errorf("%s: %v\nwant it to say %q", what, err, w)
					}
				}
				if strings.Contains(err.Error(), top) {
					t.Errorf("%s: %v names the server's folder %s", what, err, top)
				}
			}
			says("the check", CheckKustomizationLocal(r, "app"), tt.check)
			ch, _, err := LoadFromRepo(r, "app", nil)
			says("the build alone", err, tt.build)
			if err == nil && tt.made != "" && !slices.ContainsFunc(ch.Templates, func(f *common.File) bool { return strings.HasPrefix(f.Name, tt.made) }) {
				t.Errorf("the build made %v, want %s", ch.Templates, tt.made)
			}
			if n := requests.Load(); n != 0 {
				t.Errorf("the server saw %d requests", n)
			}
		})
	}
}

// TestKustomizeBuildPutsBackTheProcess: a repository's build shuts
// kustomize's fetchers only while it runs: afterwards PATH (where the
// injectors' programs are found) and http.DefaultTransport are what they
// were, whether the build failed or not.
func TestKustomizeBuildPutsBackTheProcess(t *testing.T) {
	top := t.TempDir()
	testfs.Write(t, top, map[string]string{
		"ok/kustomization.yaml":     "resources: [cm.yaml]\n",
		"ok/cm.yaml":                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n",
		"remote/kustomization.yaml": "resources: [http://127.0.0.1:9/cm.yaml]\n",
	})
	r, err := repofs.Open(top)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	path, transport := os.Getenv("PATH"), http.DefaultTransport
	for dir, fails := range map[string]bool{"ok": false, "remote": true} {
		if _, _, err := LoadFromRepo(r, dir, nil); (err != nil) != fails {
			t.Errorf("%s: %v", dir, err)
		}
		if got := os.Getenv("PATH"); got != path {
			t.Errorf("%s: PATH is %q after the build, want %q", dir, got, path)
		}
		if http.DefaultTransport != transport {
			t.Errorf("%s: http.DefaultTransport is %T after the build, want it put back", dir, http.DefaultTransport)
		}
	}
}
