package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/helm-inject/helm-inject/internal/testfs"
)

// propertyChart renders what makes diff and apply disagree when they do
// not share one decision: the revision in NOTES.txt and in an annotation
// (only when asked), IsUpgrade, a lookup of a ConfigMap the test edits, a
// random value (only when asked), and a value nothing renders.
var propertyChart = map[string]string{
	"Chart.yaml":          "apiVersion: v2\nname: prop\nversion: 0.1.0\n",
	"values.yaml":         "revisionAnnotation: false\nrandom: false\nunused: 0\nlevel: info\n",
	"templates/NOTES.txt": "Revision {{ .Release.Revision }} of {{ .Release.Name }}.\n",
	"templates/app.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
  annotations:
    upgrade: {{ .Release.IsUpgrade | quote }}
{{- if .Values.revisionAnnotation }}
    revision: {{ .Release.Revision | quote }}
{{- end }}
{{- if .Values.random }}
    random: {{ randAlphaNum 8 | quote }}
{{- end }}
spec:
  selector: {matchLabels: {app: prop}}
  template:
    metadata: {labels: {app: prop}}
    spec:
      containers:
      - name: app
        image: registry.example/app:1
        env:
        - name: LEVEL
          value: {{ .Values.level | quote }}
        - name: EXTERNAL
          value: {{ (lookup "v1" "ConfigMap" .Release.Namespace "external").data | toJson | quote }}
`,
	"templates/tests/check.yaml": `apiVersion: v1
kind: Pod
metadata:
  name: {{ .Release.Name }}-check
  annotations: {"helm.sh/hook": test}
spec:
  restartPolicy: Never
  containers:
  - name: check
    image: registry.example/check:{{ .Values.level }}
`,
}

// stripSources writes a post-renderer that drops the "# Source:"
// comments, as kustomize does (its output goes into the temporary chart as
// generated files), and the same as a helm 4 postrenderer/v1 plugin named
// strip-sources in the plugin folder plugins (for HELM_PLUGINS).
func stripSources(t *testing.T) (executable, plugins string) {
	t.Helper()
	executable = filepath.Join(t.TempDir(), "strip-sources")
	if err := os.WriteFile(executable, []byte("#!/bin/sh\nexec grep -v '^# Source:'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	plugins = t.TempDir()
	testfs.Write(t, filepath.Join(plugins, "strip-sources"), map[string]string{
		"plugin.yaml": "apiVersion: v1\nname: strip-sources\ntype: postrenderer/v1\nruntime: subprocess\nversion: 0.1.0\n" +
			"runtimeConfig:\n  platformCommand:\n    - command: " + executable + "\n",
	})
	return executable, plugins
}

// TestDiffAgreesWithApply is the property users rely on: diff
// --detailed-exitcode exits 0 exactly when apply with the same inputs makes
// no new revision, and 2 exactly when it makes one. It walks every chart
// in fixtures/ and the property chart through random steps (value changes
// that render or not, labels, the looked-up object edited, nothing at all)
// and checks the property after each.
func TestDiffAgreesWithApply(t *testing.T) {
	root := repoRoot(t)
	prop := t.TempDir()
	testfs.Write(t, prop, propertyChart)
	stripper, plugins := stripSources(t)
	charts := []struct {
		name, path string
		extra      []string
		// applyOnly are apply's flags that diff does not take.
		applyOnly []string
		env       []string
	}{
		{"webapp", filepath.Join(root, webappChart), nil, nil, nil},
		{"api", filepath.Join(root, apiChart), nil, nil, nil},
		{"plain", filepath.Join(root, "fixtures", "manifests", "plain"), nil, nil, nil},
		{"kustomize", filepath.Join(root, "fixtures", "kustomize", "overlay"), nil, nil, nil},
		{"prop", prop, nil, nil, nil},
		{"prop-revision", prop, []string{"--set", "revisionAnnotation=true"}, nil, nil},
		{"prop-random", prop, []string{"--set", "random=true"}, nil, nil},
		{"webapp-post-renderer", filepath.Join(root, webappChart), []string{"--post-renderer", stripper}, nil, nil},
		{"webapp-post-renderer-plugin", filepath.Join(root, webappChart), []string{"--post-renderer", "strip-sources"}, nil, []string{"HELM_PLUGINS=" + plugins}},
		{"api-wait-watcher", filepath.Join(root, apiChart), nil, []string{"--wait=watcher", "--timeout", "2m"}, nil},
	}
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	for _, c := range charts {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ns := namespace(t)
			setExternal := func(v string) {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "external", Namespace: ns}, Data: map[string]string{"v": v}}
				cs := clientset(t).CoreV1().ConfigMaps(ns)
				if _, err := cs.Update(t.Context(), cm, metav1.UpdateOptions{}); err != nil {
					if _, err := cs.Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
						t.Fatal(err)
					}
				}
			}
			setExternal("1")
			base := append([]string{c.name, c.path, "-n", ns, "--inject", "sidecar-injector FILE"}, c.extra...)
			steps := []string{"install", "same"}
			for range 6 {
				steps = append(steps, []string{"same", "unused", "level", "labels", "external", "reuse"}[rng.IntN(6)])
			}
			var args []string
			for i, step := range steps {
				switch step {
				case "unused":
					args = []string{"--set", fmt.Sprintf("unused=%d", rng.IntN(3))}
				case "level":
					args = []string{"--set", "level=" + []string{"info", "debug"}[rng.IntN(2)]}
				case "labels":
					args = []string{"--labels", "team=" + []string{"a", "b"}[rng.IntN(2)]}
				case "external":
					setExternal(fmt.Sprint(rng.IntN(3)))
				case "reuse":
					args = []string{"--reuse-values"}
				}
				in := append(slices.Clone(base), args...)
				hi := filepath.Join(binDir, "helm-inject")
				diff := command{env: c.env}.run(t, hi, append([]string{"diff", "upgrade", "--allow-unreleased", "--detailed-exitcode"}, in...)...)
				if diff.code != 0 && diff.code != 2 {
					t.Fatalf("step %d (%s): diff failed:\n%s", i, step, diff)
				}
				before := revisionCount(t, c.name, ns)
				command{env: c.env}.mustRun(t, hi, append(append([]string{"apply"}, in...), c.applyOnly...)...)
				made := revisionCount(t, c.name, ns) > before
				if made != (diff.code == 2) {
					t.Errorf("step %d (%s %v): diff exited %d but apply made a revision: %v\ndiff said:\n%s", i, step, args, diff.code, made, diff.stdout)
				}
			}
			if slices.Contains(c.extra, "--post-renderer") {
				// What the post-renderer made is what the release holds.
				if m := mustHelm(t, "get", "manifest", c.name, "-n", ns).stdout; !strings.Contains(m, "# Source: webapp/templates/generated-by-postrender.yaml") || strings.Contains(m, "# Source: webapp/templates/deployment.yaml") {
					t.Errorf("the release does not hold the post-renderer's output:\n%s", m)
				}
			}
		})
	}
}

// TestHelmfileCompatFlags drives the real helmfile through the release
// options and command flags that make it pass helm and helm-diff flags
// helm-inject once refused: takeOwnership (which also makes helmfile read
// the diff plugin's version), enableDNS, suppressOutputLineRegex, and
// diff's --no-hooks, --include-tests, --suppress, --strip-trailing-cr, and
// template's --validate.
func TestHelmfileCompatFlags(t *testing.T) {
	ns := namespace(t)
	api := filepath.Join(repoRoot(t), apiChart)
	// A ConfigMap the release will own, created by someone else first: only
	// --take-ownership lets helm adopt it.
	_, err := clientset(t).CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "owned-config", Namespace: ns}, Data: map[string]string{"pre": "existing"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	state := func(level string) string {
		return fmt.Sprintf(`helmDefaults:
  enableDNS: true
releases:
- name: owned
  namespace: %s
  chart: %s
  takeOwnership: true
  suppressOutputLineRegex: ["^\\s+image: registry.example/proxy"]
  injector: "sidecar-injector f=FILE,image=registry.example/proxy:1"
  set:
  - name: logLevel
    value: %s
`, ns, api, level)
	}
	dir := writeState(t, "helmfile.yaml", state("info"))
	if r := helmfileRun(t, dir, "sync"); r.code != 0 {
		t.Fatalf("helmfile sync with takeOwnership:\n%s", r)
	}
	cm, err := clientset(t).CoreV1().ConfigMaps(ns).Get(t.Context(), "owned-config", metav1.GetOptions{})
	if err != nil || cm.Annotations["meta.helm.sh/release-name"] != "owned" {
		t.Fatalf("the existing ConfigMap was not taken over: %v %v", err, cm.Annotations)
	}

	// No change: every diff flag helmfile passes is accepted, exit 0.
	r := helmfileRun(t, dir, "diff", "--detailed-exitcode", "--no-hooks", "--include-tests", "--suppress", "Secret", "--strip-trailing-cr")
	if r.code != 0 {
		t.Errorf("helmfile diff with no change:\n%s", r)
	}
	// A value change shows in the Deployment; --suppress ConfigMap hides
	// the ConfigMap's change but it still counts (exit 2).
	if err := os.WriteFile(filepath.Join(dir, "helmfile.yaml"), []byte(state("debug")), 0o644); err != nil {
		t.Fatal(err)
	}
	r = helmfileRun(t, dir, "diff", "--detailed-exitcode", "--suppress", "ConfigMap", "--include-tests")
	if r.code != 2 || !strings.Contains(r.stdout, `value: "debug"`) || strings.Contains(r.stdout, "owned-config, ConfigMap") {
		t.Errorf("helmfile diff --suppress ConfigMap after a value change, want exit 2, the Deployment and no ConfigMap:\n%s", r)
	}
	if r := helmfileRun(t, dir, "template", "--validate", "--skip-tests"); r.code != 0 || !strings.Contains(r.stdout, "name: sidecar") {
		t.Errorf("helmfile template --validate:\n%s", r)
	}
	if r := helmfileRun(t, dir, "apply", "--suppress-secrets"); r.code != 0 {
		t.Fatalf("helmfile apply:\n%s", r)
	}
	if n := len(revisions(t, "owned", ns)); n != 2 {
		t.Errorf("owned has %d revisions after sync and one changed apply, want 2", n)
	}
	if r := helmfileRun(t, dir, "diff", "--detailed-exitcode"); r.code != 0 {
		t.Errorf("helmfile diff after apply:\n%s", r)
	}
}

// TestHelmfileFlagsKnown holds docs/compatibility.md (generated from the
// flag lists of internal/cli's TestFlagParity) to helmfile's own source:
// every "--flag" literal of its pkg/state is one the doc lists as passed
// by helmfile, or one it names as passed only to other helm commands.
func TestHelmfileFlagsKnown(t *testing.T) {
	out := command{}.mustRun(t, "go", "mod", "download", "-json", "github.com/helmfile/helmfile@"+toolVersion(t, "HELMFILE_VERSION")).stdout
	m := regexp.MustCompile(`"Dir": "([^"]+)"`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no module folder in:\n%s", out)
	}
	var src string
	for _, f := range []string{"pkg/state/state.go", "pkg/state/helmx.go"} {
		data, err := os.ReadFile(filepath.Join(m[1], f))
		if err != nil {
			t.Fatal(err)
		}
		src += string(data)
	}
	doc, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "compatibility.md"))
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, row := range regexp.MustCompile("(?m)^\\| `--([a-z0-9-]+)` \\| [^|]*helmfile").FindAllStringSubmatch(string(doc), -1) {
		known[row[1]] = true
	}
	other := regexp.MustCompile("(?m)^Passed by helmfile only to other helm commands \\(list, test, pull, uninstall\\): (.*)$").FindStringSubmatch(string(doc))
	if other == nil || len(known) < 40 {
		t.Fatalf("docs/compatibility.md: %d helmfile flags and no list of other commands' flags", len(known))
	}
	for _, f := range regexp.MustCompile("`--([a-z0-9-]+)`").FindAllStringSubmatch(other[1], -1) {
		known[f[1]] = true
	}
	for _, lit := range regexp.MustCompile(`"--([a-z][a-z0-9-]*)`).FindAllStringSubmatch(src, -1) {
		if !known[lit[1]] {
			t.Errorf("helmfile's source passes --%s, which docs/compatibility.md does not list", lit[1])
		}
	}
}

// revisionCount is the number of revisions of a release, 0 when it does
// not exist.
func revisionCount(t *testing.T, rel, ns string) int {
	t.Helper()
	if r := helm(t, "status", rel, "-n", ns); r.code != 0 {
		return 0
	}
	return len(revisions(t, rel, ns))
}

// toolVersion reads a pinned version from hack/versions.env.
func toolVersion(t *testing.T, key string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "hack", "versions.env"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^` + key + `=(\S+)`).FindStringSubmatch(string(data))
	if m == nil {
		t.Fatalf("hack/versions.env has no %s", key)
	}
	return m[1]
}

// TestHelmFlagsOnApply: helm's --post-renderer runs after injection (on
// manifests, not hooks) and its output is what the release stores and what
// template prints; --labels reach the release; -o json prints the release;
// --hide-notes leaves the notes out of the output but not the release.
func TestHelmFlagsOnApply(t *testing.T) {
	ns := namespace(t)
	dir := t.TempDir()
	chart := t.TempDir()
	testfs.Write(t, chart, propertyChart)
	pr := filepath.Join(dir, "add-label.sh")
	// A post-renderer that renames every document it was given.
	if err := os.WriteFile(pr, []byte("#!/bin/sh\nexec sed 's/^  name: \\(.*\\)$/  name: \\1-post/'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"pr", chart, "-n", ns, "--inject", "sidecar-injector FILE", "--post-renderer", pr}
	printed := mustHelmInject(t, append([]string{"template"}, args...)...).stdout
	r := mustHelmInject(t, append([]string{"apply", "-o", "json", "--hide-notes", "--labels", "team=shop"}, args...)...)
	var rel struct {
		Name     string
		Manifest string
		Info     struct{ Notes string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &rel); err != nil {
		t.Fatalf("apply -o json printed no release: %v\n%s", err, r)
	}
	if rel.Name != "pr" || !strings.Contains(rel.Manifest, "name: pr-post") || rel.Info.Notes != "Revision 1 of pr.\n" {
		t.Errorf("apply -o json: name %q, notes %q, manifest:\n%s", rel.Name, rel.Info.Notes, rel.Manifest)
	}
	// Labels are not part of helm's JSON; helm list selects on them.
	if got := mustHelm(t, "list", "-n", ns, "-q", "-l", "team=shop").stdout; strings.TrimSpace(got) != "pr" {
		t.Errorf("helm list -l team=shop: %q", got)
	}
	stored := mustHelm(t, "get", "manifest", "pr", "-n", ns).stdout
	for _, want := range []string{"name: pr-post", "name: sidecar"} {
		if !strings.Contains(stored, want) {
			t.Errorf("stored manifest lacks %q (post-rendered after injection):\n%s", want, stored)
		}
	}
	if hooks := mustHelm(t, "get", "hooks", "pr", "-n", ns).stdout; strings.Contains(hooks, "-post") || !strings.Contains(hooks, "name: pr-check") {
		t.Errorf("hooks were post-rendered; helm does not:\n%s", hooks)
	}
	if _, err := clientset(t).AppsV1().Deployments(ns).Get(t.Context(), "pr-post", metav1.GetOptions{}); err != nil {
		t.Errorf("the post-rendered Deployment is not in the cluster: %v", err)
	}
	if strings.Count(printed, "-post\n") != strings.Count(stored, "-post\n") || !strings.Contains(printed, "name: pr-post") || !strings.Contains(printed, "name: pr-check\n") {
		t.Errorf("template and the release disagree on what the post-renderer did:\n%s", printed)
	}
	// The chart renders .Release.IsUpgrade, so the first upgrade changes it;
	// after that, the same inputs make no new revision and diff agrees.
	mustHelmInject(t, append([]string{"apply", "--labels", "team=shop"}, args...)...)
	if d := helmInject(t, append([]string{"diff", "--detailed-exitcode", "--labels", "team=shop"}, args...)...); d.code != 0 {
		t.Errorf("diff after apply with a post-renderer:\n%s", d)
	}
	out := mustHelmInject(t, append([]string{"apply", "--labels", "team=shop", "--hide-notes"}, args...)...).stdout
	if !strings.Contains(out, "has no changes") {
		t.Errorf("second apply:\n%s", out)
	}
	out = mustHelmInject(t, append([]string{"apply", "--labels", "team=ops", "--hide-notes"}, args...)...).stdout
	if !strings.Contains(out, "has been upgraded") || strings.Contains(out, "NOTES:") {
		t.Errorf("apply with new labels and --hide-notes:\n%s", out)
	}
	if got := mustHelm(t, "list", "-n", ns, "-q", "-l", "team=ops").stdout; strings.TrimSpace(got) != "pr" {
		t.Errorf("helm list -l team=ops after the upgrade: %q", got)
	}
	// Without --hide-notes the same output has them.
	out = mustHelmInject(t, append([]string{"apply", "--labels", "team=dev"}, args...)...).stdout
	if !strings.Contains(out, "NOTES:\nRevision 4 of pr.") {
		t.Errorf("apply without --hide-notes:\n%s", out)
	}
}

// TestHelmRenderFlags: helm's rendering and printing flags do what helm's
// do, on a chart with a file:// dependency, notes in both charts, a DNS
// lookup, a cluster lookup and a Secret.
func TestHelmRenderFlags(t *testing.T) {
	ns := namespace(t)
	tmp := t.TempDir()
	testfs.Write(t, tmp, map[string]string{
		"main/Chart.yaml":          "apiVersion: v2\nname: main\nversion: 0.1.0\ndependencies:\n- name: sub\n  version: 0.1.0\n  repository: file://../sub\n",
		"main/values.yaml":         "bogus: false\n",
		"main/templates/NOTES.txt": "main notes\n",
		"main/templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-main
data:
  dns: {{ getHostByName "localhost" | quote }}
  looked: {{ dig "data" "v" "none" (lookup "v1" "ConfigMap" .Release.Namespace "live") | quote }}
`,
		"main/templates/secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ .Release.Name }}-s\nstringData:\n  password: hunter2\n",
		"main/templates/bogus.yaml":  "{{- if .Values.bogus }}\napiVersion: example.com/v1\nkind: NoSuchKind\nmetadata:\n  name: x\n{{- end }}\n",
		"sub/Chart.yaml":             "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
		"sub/templates/NOTES.txt":    "sub notes\n",
		"sub/templates/cm.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-sub\n",
	})
	chart := filepath.Join(tmp, "main")
	tmpl := func(extra ...string) result {
		return helmInject(t, append([]string{"template", "fl", chart, "-n", ns, "--inject", "sidecar-injector FILE"}, extra...)...)
	}
	if r := tmpl(); r.code == 0 || !strings.Contains(r.stderr, "--dependency-update") {
		t.Fatalf("a chart with its dependency missing, without --dependency-update:\n%s", r)
	}
	r := tmpl("--dependency-update")
	if r.code != 0 || !strings.Contains(r.stdout, "name: fl-sub") || !strings.Contains(r.stdout, `dns: ""`) || !strings.Contains(r.stdout, `looked: "none"`) {
		t.Fatalf("template --dependency-update (no DNS, no cluster lookup):\n%s", r)
	}
	if r := tmpl("--enable-dns"); r.code != 0 || strings.Contains(r.stdout, `dns: ""`) || !strings.Contains(r.stdout, "dns: ") {
		t.Errorf("template --enable-dns resolves localhost:\n%s", r)
	}
	_, err := clientset(t).CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "live", Namespace: ns}, Data: map[string]string{"v": "here"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r := tmpl("--dry-run=server"); r.code != 0 || !strings.Contains(r.stdout, `looked: "here"`) {
		t.Errorf("template --dry-run=server looks the ConfigMap up in the cluster:\n%s", r)
	}
	if r := tmpl("--dry-run"); r.code != 0 || !strings.Contains(r.stdout, `looked: "none"`) {
		t.Errorf("template --dry-run (client) stays offline:\n%s", r)
	}
	if r := tmpl("--set", "bogus=true"); r.code != 0 {
		t.Errorf("template of an unknown kind without --validate:\n%s", r)
	}
	if r := tmpl("--set", "bogus=true", "--validate"); r.code == 0 || !strings.Contains(r.stderr, "NoSuchKind") {
		t.Errorf("template --validate of an unknown kind:\n%s", r)
	}
	if r := tmpl("--hide-secret"); r.code != 0 || strings.Contains(r.stdout, "hunter2") || !strings.Contains(r.stdout, "# Source: main/templates/secret.yaml\n# HIDDEN: The Secret output has been suppressed\n") {
		t.Errorf("template --hide-secret:\n%s", r)
	}
	if r := tmpl(); !strings.Contains(r.stdout, "hunter2") {
		t.Errorf("template without --hide-secret shows the Secret:\n%s", r)
	}
	out := t.TempDir()
	if r := tmpl("--output-dir", out, "--release-name"); r.code != 0 {
		t.Fatalf("template --output-dir --release-name:\n%s", r)
	}
	if _, err := os.Stat(filepath.Join(out, "fl", "main", "templates", "cm.yaml")); err != nil {
		t.Errorf("--release-name: %v", err)
	}

	apply := func(name string, extra ...string) result {
		return helmInject(t, append([]string{"apply", name, chart, "-n", ns, "--inject", "sidecar-injector FILE"}, extra...)...)
	}
	if r := apply("hs", "--hide-secret"); r.code == 0 || !strings.Contains(r.stderr, "--hide-secret needs --dry-run") || revisionCount(t, "hs", ns) != 0 {
		t.Errorf("apply --hide-secret without --dry-run:\n%s", r)
	}
	if r := apply("hs", "--dry-run", "--hide-secret"); r.code != 0 || strings.Contains(r.stdout, "hunter2") || !strings.Contains(r.stdout, "# HIDDEN: The Secret output has been suppressed") || revisionCount(t, "hs", ns) != 0 {
		t.Errorf("apply --dry-run --hide-secret:\n%s", r)
	}
	if r := apply("notes", "--render-subchart-notes"); r.code != 0 || !strings.Contains(r.stdout, "NOTES:\nmain notes\n\nsub notes") {
		t.Errorf("apply --render-subchart-notes:\n%s", r)
	}
	if r := apply("plain"); r.code != 0 || !strings.Contains(r.stdout, "NOTES:\nmain notes") || strings.Contains(r.stdout, "sub notes") {
		t.Errorf("apply without --render-subchart-notes:\n%s", r)
	}
	if got := mustHelm(t, "get", "notes", "notes", "-n", ns).stdout; !strings.Contains(got, "sub notes") {
		t.Errorf("helm get notes after --render-subchart-notes:\n%s", got)
	}
}

// TestRecreatePods: helm's --recreate-pods restarts a workload's pods after
// an upgrade that did not touch the pod template; without it they stay.
func TestRecreatePods(t *testing.T) {
	ns := namespace(t)
	chart := t.TempDir()
	testfs.Write(t, chart, propertyChart)
	apply := func(extra ...string) {
		mustHelmInject(t, append([]string{"apply", "rp", chart, "-n", ns, "--wait", "--timeout", "2m"}, extra...)...)
	}
	pods := func() map[string]bool {
		list, err := clientset(t).CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "app=prop"})
		if err != nil {
			t.Fatal(err)
		}
		uids := map[string]bool{}
		for _, p := range list.Items {
			if p.DeletionTimestamp == nil {
				uids[string(p.UID)] = true
			}
		}
		return uids
	}
	apply()
	apply() // the chart renders .Release.IsUpgrade: the first upgrade rolls
	before := pods()
	if len(before) == 0 {
		t.Fatal("no running pods")
	}
	apply("--labels", "team=a")
	if got := pods(); !maps.Equal(got, before) {
		t.Errorf("pods changed without --recreate-pods: %v -> %v", before, got)
	}
	apply("--labels", "team=b", "--recreate-pods")
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		for uid := range pods() {
			if before[uid] {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Errorf("the pods of before the upgrade are still there after --recreate-pods: %v, now %v", before, pods())
	}
}
