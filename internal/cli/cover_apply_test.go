package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/helm-inject/helm-inject/helmfile"
	"github.com/helm-inject/helm-inject/release"
)

// requests is every path the fake cluster was asked for, so far.
func (c *fakeCluster) requests() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.paths...)
}

// TestApplyDryRunInstall: apply --dry-run of a release the namespace does
// not have yet renders it against the cluster (its release records and
// capabilities) and prints what would be installed: the manifest, its
// Secret hidden with --hide-secret, helm's release object with -o json;
// nothing is logged on stderr without --debug, and with --debug every log
// line is led by "[debug]" and carries no timestamp. upgrade without
// --install refuses the missing release, as helm does.
func TestApplyDryRunInstall(t *testing.T) {
	c := newFakeCluster(t)
	c.addRelease(shopRelease("shop", "prod"))
	kubeconfig := c.kubeconfig()
	const secret = "password: czNjcjN0" // the chart's password, base64
	for _, tt := range []struct {
		verb       string
		args       []string
		prefix     string
		has, lacks []string
		debug      bool
	}{
		{"apply", []string{"--dry-run"}, "Release \"fresh\" would be installed (dry run). Manifest:\n---\n# Source: api/templates/all.yaml\n",
			[]string{"name: fresh-config", "kind: Deployment", secret}, nil, false},
		{"apply", []string{"--dry-run", "--hide-secret"}, "Release \"fresh\" would be installed (dry run). Manifest:\n",
			[]string{"# HIDDEN: The Secret output has been suppressed", "name: fresh-config"}, []string{secret}, false},
		{"upgrade", []string{"--dry-run", "--install"}, "Release \"fresh\" would be installed (dry run). Manifest:\n",
			[]string{"name: fresh-config"}, nil, false},
		{"apply", []string{"--dry-run", "--debug"}, "Release \"fresh\" would be installed (dry run). Manifest:\n",
			[]string{"name: fresh-config"}, nil, true},
	} {
		t.Run(tt.verb+" "+strings.Join(tt.args, " "), func(t *testing.T) {
			out, errOut, code := runCLI(t, append([]string{tt.verb, "fresh", apiChart, "-n", "prod", "--kubeconfig", kubeconfig}, tt.args...)...)
			if code != 0 || !strings.HasPrefix(out, tt.prefix) {
				t.Fatalf("exit %d; want 0 and %q first:\n%s%s", code, tt.prefix, out, errOut)
			}
			for _, s := range tt.has {
				if !strings.Contains(out, s) {
					t.Errorf("the output lacks %q:\n%s", s, out)
				}
			}
			for _, s := range tt.lacks {
				if strings.Contains(out, s) {
					t.Errorf("the output has %q:\n%s", s, out)
				}
			}
			if !tt.debug {
				if errOut != "" {
					t.Errorf("stderr without --debug: %q", errOut)
				}
				return
			}
			if !strings.Contains(errOut, `msg="getting release history" name=fresh`) {
				t.Errorf("--debug logged no release lookup:\n%s", errOut)
			}
			for _, l := range strings.Split(strings.TrimSuffix(errOut, "\n"), "\n") {
				if !strings.HasPrefix(l, "[debug] level=") || strings.Contains(l, "time=") {
					t.Errorf("--debug line %q: want \"[debug] level=...\" and no time", l)
				}
			}
		})
	}

	// -o json is the release object helm would install.
	out, errOut, code := runCLI(t, "apply", "fresh", apiChart, "-n", "prod", "--kubeconfig", kubeconfig, "--dry-run", "-o", "json", "--set", "logLevel=debug")
	var rel struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
		Version   int    `json:"version"`
		Info      struct {
			Status string `json:"status"`
		} `json:"info"`
		Manifest string `json:"manifest"`
	}
	if err := json.Unmarshal([]byte(out), &rel); err != nil || code != 0 || rel.Name != "fresh" || rel.Namespace != "prod" || rel.Version != 1 ||
		rel.Info.Status != "pending-install" || !strings.Contains(rel.Manifest, `logLevel: "debug"`) {
		t.Errorf("apply --dry-run -o json: exit %d, %v:\n%s%s", code, err, out, errOut)
	}

	// upgrade without --install refuses a release that does not exist.
	out, errOut, code = runCLI(t, "upgrade", "fresh", apiChart, "-n", "prod", "--kubeconfig", kubeconfig, "--dry-run")
	if code != 1 || out != "" || errOut != "Error: release \"fresh\" has no deployed revision; use apply or upgrade --install\n" {
		t.Errorf("upgrade of a missing release: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestReleaseVerbsRefuseBeforeTheCluster: apply, upgrade, diff and diff
// upgrade refuse inputs they cannot use with an error naming the flag (and
// the release, once it is known), before the cluster is asked anything;
// a missing CHART shows the usage.
func TestReleaseVerbsRefuseBeforeTheCluster(t *testing.T) {
	c := newFakeCluster(t)
	kubeconfig := c.kubeconfig()
	missing := filepath.Join(t.TempDir(), "no-such-chart")
	for _, tt := range []struct {
		name  string
		chart string
		args  []string
		want  string // stderr, after "Error: "
	}{
		{"progress", apiChart, []string{"--progress", "loud"}, `unknown --progress "loud" (want auto, plain or none)`},
		{"values modes", apiChart, []string{"--reset-values", "--reuse-values"}, "--reset-values, --reuse-values and --reset-then-reuse-values exclude each other"},
		{"reconcile", apiChart, []string{"--reconcile", "sometimes"}, `unknown reconcile strategy "sometimes" (want always, never or with-chart)`},
		{"with-set without with", apiChart, []string{"--with-set", "log-shipper.destination=x"}, `release "web": --with-set log-shipper...: no --with log-shipper`},
		{"injector-version without its injector", apiChart, []string{"--injector-version", "istioctl=istioctl version"}, `release "web": --injector-version istioctl=...: no --injector or --inject runs istioctl`},
		{"missing chart", missing, nil, `release "web": chart ` + missing + `: no such chart directory or archive`},
		{"post-renderer-args alone", apiChart, []string{"--post-renderer-args", "x"}, `release "web": --post-renderer-args needs --post-renderer`},
		{"post-renderer missing", apiChart, []string{"--post-renderer", filepath.Join(t.TempDir(), "no-such-renderer")}, `release "web": --post-renderer `},
		{"server-side value", apiChart, []string{"--server-side=maybe"}, `invalid argument "maybe" for "--server-side" flag: invalid server-side "maybe": want true, false or auto`},
	} {
		for _, verb := range [][]string{{"apply"}, {"upgrade"}, {"diff"}, {"diff", "upgrade"}} {
			t.Run(strings.Join(verb, " ")+" "+tt.name, func(t *testing.T) {
				out, errOut, code := runCLI(t, append(append(verb, "web", tt.chart, "--kubeconfig", kubeconfig), tt.args...)...)
				if code != 1 || out != "" || !strings.HasPrefix(errOut, "Error: "+tt.want) {
					t.Errorf("exit %d, stdout %q, stderr %q; want 1 and %q", code, out, errOut, tt.want)
				}
			})
		}
	}
	// apply's own --wait takes helm 4's strategies only.
	for _, verb := range []string{"apply", "upgrade"} {
		_, errOut, code := runCLI(t, verb, "web", apiChart, "--kubeconfig", kubeconfig, "--wait=forever")
		if want := `Error: invalid argument "forever" for "--wait" flag: invalid wait strategy "forever": want watcher, legacy or hookOnly`; code != 1 || !strings.HasPrefix(errOut, want) {
			t.Errorf("%s --wait=forever: exit %d, %q; want %q", verb, code, errOut, want)
		}
	}
	// A missing CHART: the usage, said in words.
	for _, verb := range [][]string{{"apply"}, {"upgrade"}, {"diff"}, {"diff", "upgrade"}} {
		_, errOut, code := runCLI(t, append(verb, "web", "--kubeconfig", kubeconfig)...)
		path := "helm-inject " + strings.Join(verb, " ")
		want := "Error: \"" + path + "\" needs a release NAME and a CHART (got 1 arguments)\n\nUsage:  " + path + " NAME CHART [flags]\n"
		if code != 1 || errOut != want {
			t.Errorf("%v with no CHART: exit %d, %q; want %q", verb, code, errOut, want)
		}
	}
	if got := c.requests(); len(got) != 0 {
		t.Errorf("refused commands asked the cluster for %v", got)
	}
	// A kubeconfig that does not exist is named once the inputs are read.
	for _, verb := range [][]string{{"apply"}, {"diff", "upgrade"}} {
		_, errOut, code := runCLI(t, append(verb, "web", apiChart, "--kubeconfig", "/nonexistent/kubeconfig")...)
		if code != 1 || errOut != "Error: release \"web\": no kubeconfig: --kubeconfig names /nonexistent/kubeconfig, which does not exist\n" {
			t.Errorf("%v with a missing kubeconfig: exit %d, %q", verb, code, errOut)
		}
	}
}

// TestHelmfilePlanCacheChecked: run as helmfile's helm (the variables
// helm-inject helmfile sets), apply and diff refuse a plan-cache key that
// is not one helm-inject made, naming the variable and the release,
// before rendering.
func TestHelmfilePlanCacheChecked(t *testing.T) {
	c := newFakeCluster(t)
	kubeconfig := c.kubeconfig()
	t.Setenv(helmfile.EnvAsHelm, "1")
	t.Setenv(release.EnvPlanCache, t.TempDir())
	t.Setenv(release.EnvPlanKey, "not-hex")
	for _, verb := range [][]string{{"apply"}, {"upgrade"}, {"diff", "upgrade"}} {
		out, errOut, code := runCLI(t, append(verb, "web", apiChart, "--kubeconfig", kubeconfig)...)
		want := "Error: release \"web\": " + release.EnvPlanKey + ": not a key of a helm-inject helmfile run\n"
		if code != 1 || out != "" || errOut != want {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %q", verb, code, out, errOut, want)
		}
	}
	if got := c.requests(); len(got) != 0 {
		t.Errorf("a refused plan cache asked the cluster for %v", got)
	}
}

// failingWriter fails every write.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// TestDebugLogRedactsCredentials: --debug's log writes each record led by
// "[debug]" with the credentials of URLs masked, reports the whole record
// written, and passes a write error on.
func TestDebugLogRedactsCredentials(t *testing.T) {
	var b bytes.Buffer
	rec := []byte("level=DEBUG msg=\"pulling chart\" url=https://bob:hunter2@charts.example/api-0.9.0.tgz\n")
	n, err := redactedLines{&b}.Write(rec)
	if err != nil || n != len(rec) {
		t.Errorf("Write returned %d, %v; want %d, nil", n, err, len(rec))
	}
	if want := "[debug] level=DEBUG msg=\"pulling chart\" url=https://xxxxx@charts.example/api-0.9.0.tgz\n"; b.String() != want {
		t.Errorf("logged %q, want %q", b.String(), want)
	}
	if n, err := (redactedLines{failingWriter{}}).Write(rec); err == nil || n != 0 {
		t.Errorf("a failing writer: %d, %v; want 0 and its error", n, err)
	}
}
