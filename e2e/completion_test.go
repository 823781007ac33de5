package e2e

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/helm-inject/helm-inject/internal/testenv"
)

// completions parses cobra's completion protocol (one "value\tdescription"
// a line, then ":directive") into the values and the directive line.
func completions(t *testing.T, r result) ([]string, string) {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("completion failed:\n%s", r)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	directive := lines[len(lines)-1]
	var values []string
	for _, l := range lines[:len(lines)-1] {
		v, _, _ := strings.Cut(l, "\t")
		values = append(values, v)
	}
	return values, directive
}

// TestCompletion drives helm-inject's completion command (what the scripts
// of `helm-inject completion SHELL` call) against the control plane and an
// injector library.
func TestCompletion(t *testing.T) {
	ns := namespace(t)
	mustHelmInject(t, "apply", "comp-web", apiChart, "-n", ns, "--injector", "sidecar-injector f=FILE")
	mustHelmInject(t, "apply", "comp-api", apiChart, "-n", ns, "--injector", "sidecar-injector f=FILE")
	lib := library(t, "1.0.0", "1.1.0")
	kubeconfig := os.Getenv("KUBECONFIG")

	tests := []struct {
		name string
		args []string
		want []string
		// directive is cobra's: 4 no file completion, 0 the shell's
		// default (files).
		directive string
	}{
		{"release names of the namespace", []string{"status", "-n", ns, ""}, []string{"comp-api", "comp-web"}, ":4"},
		{"release names by prefix", []string{"apply", "-n", ns, "comp-w"}, []string{"comp-web"}, ":4"},
		{"diff upgrade's release", []string{"diff", "upgrade", "-n", ns, "comp-a"}, []string{"comp-api"}, ":4"},
		{"no release of another namespace", []string{"status", "-n", "default", "comp-"}, nil, ":4"},
		{"apply's chart is a path", []string{"apply", "comp-web", ""}, nil, ":0"},
		{"--with from the library", []string{"apply", "x", ".", "--injector-library", lib, "--with", ""},
			[]string{"log-shipper", "log-shipper@1.1.0", "log-shipper@1.0.0"}, ":4"},
		{"--with by prefix", []string{"template", "x", ".", "--injector-library", lib, "--with", "log-shipper@1.0"},
			[]string{"log-shipper@1.0.0"}, ":4"},
		{"--reconcile", []string{"apply", "x", ".", "--reconcile", ""}, []string{"always", "never", "with-chart"}, ":4"},
		{"--output of apply", []string{"apply", "x", ".", "-o", ""}, []string{"table", "json", "yaml"}, ":4"},
		{"--output of diff", []string{"diff", "upgrade", "x", ".", "--output", ""}, []string{"diff", "simple", "json"}, ":4"},
		{"--kube-context from the kubeconfig", []string{"list", "--kubeconfig", kubeconfig, "--kube-context", ""}, contextNames(t, kubeconfig), ":4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, directive := completions(t, helmInject(t, append([]string{"__complete"}, tt.args...)...))
			if !slices.Equal(got, tt.want) || directive != tt.directive {
				t.Errorf("__complete %s: %q %s, want %q %s", strings.Join(tt.args, " "), got, directive, tt.want, tt.directive)
			}
		})
	}

	t.Run("--namespace from the cluster", func(t *testing.T) {
		got, _ := completions(t, helmInject(t, "__complete", "status", "x", "--namespace", ""))
		if !slices.Contains(got, ns) || !slices.Contains(got, "kube-system") {
			t.Errorf("namespaces %q lack %s or kube-system", got, ns)
		}
	})
	t.Run("an unreachable cluster gives no suggestions and an error directive", func(t *testing.T) {
		got, directive := completions(t, helmInject(t, "__complete", "status", "--kube-apiserver", "https://127.0.0.1:1", ""))
		if len(got) != 0 || directive != ":5" {
			t.Errorf("got %q %s, want nothing and :5 (error, no files)", got, directive)
		}
	})
}

func contextNames(t *testing.T, kubeconfig string) []string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	names := slices.Sorted(maps.Keys(cfg.Contexts))
	if len(names) == 0 {
		t.Fatalf("%s has no contexts", kubeconfig)
	}
	return names
}

// TestHelmPluginCompletion: `helm inject <TAB>` through Helm's plugin
// completion (the plugin's plugin.complete), with the real helm 3 and
// helm 4 CLIs.
func TestHelmPluginCompletion(t *testing.T) {
	ns := namespace(t)
	mustHelmInject(t, "apply", "comp-plugin", apiChart, "-n", ns, "--injector", "sidecar-injector f=FILE")
	helm4, err := testenv.Tool(cluster.ToolsBin, "helm4")
	if err != nil {
		t.Fatal(err)
	}
	src := repoCopy(t)
	for _, h := range []struct {
		bin     string
		install []string
	}{
		{helmBin(t), nil},
		{helm4, []string{"--verify=false"}},
	} {
		t.Run(filepath.Base(h.bin), func(t *testing.T) {
			dataHome := t.TempDir()
			c := command{env: []string{"HELM_DATA_HOME=" + dataHome, "HELM_PLUGINS=" + filepath.Join(dataHome, "plugins")}}
			c.mustRun(t, h.bin, append([]string{"plugin", "install", src}, h.install...)...)
			got, _ := completions(t, c.run(t, h.bin, "__complete", "inject", "status", "-n", ns, "comp-"))
			if !slices.Equal(got, []string{"comp-plugin"}) {
				t.Errorf("helm __complete inject status comp-: %q, want [comp-plugin]", got)
			}
			got, _ = completions(t, c.run(t, h.bin, "__complete", "inject", "apply", "x", ".", "--reconcile", ""))
			if !slices.Equal(got, []string{"always", "never", "with-chart"}) {
				t.Errorf("helm __complete inject apply --reconcile: %q", got)
			}
		})
	}
}
