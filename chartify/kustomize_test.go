package chartify

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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
		{"through a link and ..", "resources: [s/../outside.yaml]\n", `resources entry "s/../outside.yaml" is outside the repository`},
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
			if err := os.Symlink("..", filepath.Join(repo, "app", "s")); err != nil {
				t.Fatal(err)
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
