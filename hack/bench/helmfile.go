package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/helm-inject/helm-inject/internal/benchchart"
)

// The helmfile comparison (-helmfile): R releases of one chart of
// -hf-workloads workloads, each with the fixture injector, three ways:
//
//   - plain: helmfile without injection. sync runs the real helm; apply
//     needs a diff plugin, so helmfile runs helm-inject's shim as its helm
//     (HELM_INJECT_AS_HELM), which answers `diff upgrade` itself and hands
//     everything else to the real helm.
//   - post: the same with the injector as each release's postRenderer,
//     helmfile's own way to inject (which skips hooks).
//   - inject: `helm-inject helmfile` with `injector:`.
//
// Each is measured for sync (values changed every round, so every release
// is upgraded), apply with nothing changed, and apply with every release
// changed; each of the nine keeps its own releases in its own namespaces.
// sync is measured once more with the helm 4 CLI as helmfile's helm (plain,
// postRenderer as a helm 4 plugin, and helm-inject's injector:).

// hfMethod is one measured helmfile command.
type hfMethod struct {
	key, label string
	// base is the method this one is compared with.
	base string
	// argv is the command for round r (count: the injector's count file).
	argv func(releases, r int, count string) []string
	// env is added to the bench's environment.
	env []string
}

// hfState writes a helmfile.yaml.gotmpl of n releases of chart, each in
// namespace ns, with what extra gives each release; the count file comes
// from $BENCH_COUNT.
func hfState(dir, chart, ns string, n int, extra string) (string, error) {
	var b strings.Builder
	b.WriteString("releases:\n")
	for i := range n {
		fmt.Fprintf(&b, "- name: rel-%02d\n  namespace: %s\n  chart: %s\n%s", i, ns, chart, extra)
	}
	path := filepath.Join(dir, ns, "helmfile.yaml.gotmpl")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	return path, os.WriteFile(path, []byte(b.String()), 0o644)
}

func (b *bench) helmfileMethods(chart string, releases int) ([]hfMethod, error) {
	hf := filepath.Join(filepath.Dir(b.helm), "helmfile")
	// A diff plugin whose command is helm-inject's diff, as the wrapper
	// writes one, for the plain and post-renderer applies through the shim.
	plugins := filepath.Join(b.work, "plugins")
	if err := os.MkdirAll(filepath.Join(plugins, "diff"), 0o755); err != nil {
		return nil, err
	}
	plugin := fmt.Sprintf("name: diff\nversion: \"3.15.10\"\nusage: bench\ndescription: bench\ncommand: %q\n", b.helmInject+" diff")
	if err := os.WriteFile(filepath.Join(plugins, "diff", "plugin.yaml"), []byte(plugin), 0o644); err != nil {
		return nil, err
	}
	shim := []string{"HELM_INJECT_AS_HELM=1", "HELM_INJECT_HELM=" + b.helm, "HELM_PLUGINS=" + plugins}
	count := `{{ requiredEnv "BENCH_COUNT" }}`
	forms := []struct {
		key, label, extra string
	}{
		{"plain", "helmfile", ""},
		{"post", "helmfile, postRenderer: injector", fmt.Sprintf("  postRenderer: %s\n  postRendererArgs: [--count-file, '%s']\n", b.injector, count)},
		{"inject", "helm-inject helmfile, injector:", fmt.Sprintf("  injector: \"sidecar-injector f=FILE,count-file=%s\"\n", count)},
	}
	runs := []struct {
		key, label string
		// level is the value set in round r: a new one every round
		// changes every release.
		level func(r int) string
	}{
		{"sync", "sync", func(r int) string { return fmt.Sprintf("r%d", r) }},
		{"apply-same", "apply, nothing changed", func(int) string { return "same" }},
		{"apply-changed", "apply, every release changed", func(r int) string { return fmt.Sprintf("r%d", r) }},
	}
	var ms []hfMethod
	for _, run := range runs {
		for _, f := range forms {
			ns := fmt.Sprintf("hf-%s-%s-%d", run.key, f.key, releases)
			state, err := hfState(filepath.Join(b.work, "states"), chart, ns, releases, f.extra)
			if err != nil {
				return nil, err
			}
			verb := strings.SplitN(run.key, "-", 2)[0]
			m := hfMethod{key: run.key + "-" + f.key, label: f.label + " " + run.label, base: run.key + "-post"}
			if run.key != "sync" && f.key != "inject" {
				m.base = run.key + "-plain"
			}
			level := run.level
			switch {
			case f.key == "inject":
				m.env = []string{"HELMFILE_BINARY=" + hf}
				m.argv = func(_, r int, _ string) []string {
					return []string{b.helmInject, "helmfile", "--file", state, "--helm-binary", b.helm, verb, "--set", "level=" + level(r)}
				}
			case verb == "sync":
				m.argv = func(_, r int, _ string) []string {
					return []string{hf, "--file", state, "--helm-binary", b.helm, verb, "--set", "level=" + level(r)}
				}
			default:
				m.env = shim
				m.argv = func(_, r int, _ string) []string {
					return []string{hf, "--file", state, "--helm-binary", b.helmInject, verb, "--set", "level=" + level(r)}
				}
			}
			ms = append(ms, m)
		}
	}
	// sync again with the helm 4 CLI as helmfile's helm (and as
	// helm-inject's): helm 4 runs a post-renderer only as a plugin, so the
	// postRenderer form names the bench's plugin of the fixture injector.
	for _, f := range []struct {
		key, label, extra string
		env               []string
	}{
		{"plain4", "helmfile (helm 4)", "", nil},
		{"post4", "helmfile (helm 4), postRenderer: injector plugin", fmt.Sprintf("  postRenderer: bench-injector\n  postRendererArgs: [--count-file, '%s']\n", count), []string{"HELM_PLUGINS=" + b.plugins}},
		{"inject4", "helm-inject helmfile (helm 4), injector:", fmt.Sprintf("  injector: \"sidecar-injector f=FILE,count-file=%s\"\n", count), []string{"HELMFILE_BINARY=" + hf}},
	} {
		ns := fmt.Sprintf("hf-sync-%s-%d", f.key, releases)
		state, err := hfState(filepath.Join(b.work, "states"), chart, ns, releases, f.extra)
		if err != nil {
			return nil, err
		}
		runner := []string{hf}
		if f.key == "inject4" {
			runner = []string{b.helmInject, "helmfile"}
		}
		ms = append(ms, hfMethod{key: "sync-" + f.key, label: f.label + " sync", base: "sync-post4", env: f.env,
			argv: func(_, r int, _ string) []string {
				return append(slices.Clip(runner), "--file", state, "--helm-binary", b.helm4, "sync", "--set", fmt.Sprintf("level=r%d", r))
			}})
	}
	// The injector alone, once per release on a release's manifests as
	// helm-inject gives them to it (FILE form): what any way of injecting
	// every release must spend at least.
	ms = append(ms, hfMethod{key: injectorAlone, label: fmt.Sprintf("the injector alone, %d runs (no helmfile, no helm)", releases), base: injectorAlone,
		argv: func(n, _ int, count string) []string {
			loop := fmt.Sprintf("for i in $(seq %d); do %q -f %q --count-file %q >/dev/null || exit 1; done", n, b.injector, b.hfRendered(), count)
			return []string{"sh", "-c", loop}
		}})
	return ms, nil
}

// hfRendered is the file of one release's rendered manifests that the
// injector-alone runs read; measureHelmfile writes it.
func (b *bench) hfRendered() string { return filepath.Join(b.work, "hf-rendered.yaml") }

// measureHelmfile runs the helmfile comparison for each release count.
func (b *bench) measureHelmfile(counts []int) (results, error) {
	chart := filepath.Join(b.work, "hf-chart", "bench")
	if err := benchchart.Write(chart, b.o.hfWorkloads); err != nil {
		return nil, err
	}
	if out, err := exec.CommandContext(b.ctx, b.helm, "template", "rel-00", chart, "--namespace", "hf-alone").Output(); err != nil {
		return nil, fmt.Errorf("rendering the helmfile chart: %w", err)
	} else if err := os.WriteFile(b.hfRendered(), out, 0o644); err != nil {
		return nil, err
	}
	res := results{}
	for _, n := range counts {
		ms, err := b.helmfileMethods(chart, n)
		if err != nil {
			return nil, err
		}
		for r := 0; r <= b.o.rounds; r++ {
			for i := range ms {
				m := ms[(i+r)%len(ms)]
				// The count file is part of the injector's spec, which a
				// release records: one path per method, emptied before each
				// run, so the spec does not change from round to round.
				count := filepath.Join(b.work, fmt.Sprintf("count-%s-%d", m.key, n))
				if err := os.Remove(count); err != nil && !os.IsNotExist(err) {
					return nil, err
				}
				env := append(slices.Clip(m.env), "BENCH_COUNT="+count)
				if err := b.sampleRun(res, m.key, n, r, m.argv(n, r, count), env, count); err != nil {
					return nil, fmt.Errorf("%s, %d releases: %w", m.label, n, err)
				}
			}
			fmt.Fprintf(os.Stderr, "bench: %d releases round %d/%d done\n", n, r, b.o.rounds)
		}
	}
	return res, nil
}

// injectorAlone is the key of the injector's own runs.
const injectorAlone = "injector-alone"

// helmfileReport is the helmfile section of docs/performance.md.
func (b *bench) helmfileReport(head string, counts []int, res results) (string, error) {
	var w strings.Builder
	w.WriteString(head)
	fmt.Fprintf(&w, "Each release is a chart of %d workloads (%d resources) with the fixture injector. The plain and postRenderer applies run helm-inject's shim as helmfile's helm: helmfile's apply needs a diff plugin, and the shim answers `diff upgrade` and a `dependency build` with nothing to build itself (everything else, `list` included outside a `helm-inject helmfile` run, goes to the real helm).\n\n", b.o.hfWorkloads, 2*b.o.hfWorkloads)
	ratio := func(key, base string, n int) float64 { return res.wall(key, n).median / res.wall(base, n).median }
	for _, n := range counts {
		ms, err := b.helmfileMethods(filepath.Join(b.work, "hf-chart", "bench"), n)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&w, "### %d releases\n\n", n)
		fmt.Fprintln(&w, "| method | wall, median (min-max) | CPU | injector runs | vs |")
		fmt.Fprintln(&w, "|---|---:|---:|---:|---|")
		for _, m := range ms {
			st := res.wall(m.key, n)
			vs := "–"
			if m.base != m.key {
				vs = fmt.Sprintf("%.2fx %s", ratio(m.key, m.base, n), m.base)
			}
			fmt.Fprintf(&w, "| %s | %.2f s (%.2f-%.2f) | %.2f s | %.0f | %s |\n", m.label, st.median, st.min, st.max,
				res.of(m.key, n, func(s sample) float64 { return s.CPU.Seconds() }),
				res.of(m.key, n, func(s sample) float64 { return float64(s.Runs) }), vs)
		}
		fmt.Fprintln(&w)
		fmt.Fprintf(&w, "| target (%d releases) | measured | met |\n|---|---:|---|\n", n)
		for _, t := range []struct {
			label     string
			key, base string
			max       float64
		}{
			{"helm-inject helmfile sync ≤ 0.9x helmfile sync with the post-renderer (helm 3)", "sync-inject", "sync-post", 0.9},
			{"helm-inject helmfile sync ≤ 0.9x helmfile sync with the post-renderer plugin (helm 4)", "sync-inject4", "sync-post4", 0.9},
			{"helm-inject helmfile apply, nothing changed ≤ 1.15x plain helmfile apply", "apply-same-inject", "apply-same-plain", 1.15},
		} {
			v := ratio(t.key, t.base, n)
			fmt.Fprintf(&w, "| %s | %.2f | %s |\n", t.label, v, yesNo(v <= t.max))
		}
		// No way of injecting every release can beat the plain apply plus
		// the injector's own runs.
		floor := (res.wall("apply-same-plain", n).median + res.wall(injectorAlone, n).median) / res.wall("apply-same-plain", n).median
		fmt.Fprintf(&w, "| (the floor: plain helmfile apply, nothing changed, plus the injector alone, over the plain apply) | %.2f | – |\n", floor)
		for _, key := range []string{"sync-inject", "sync-inject4", "apply-changed-inject"} {
			runs := res.of(key, n, func(s sample) float64 { return float64(s.Runs) })
			fmt.Fprintf(&w, "| every release injected once (%s): %d runs | %.0f | %s |\n", key, n, runs, yesNo(runs == float64(n)))
		}
		fmt.Fprintln(&w)
	}
	return w.String(), nil
}

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

// runHelmfile measures the helmfile comparison and prints it, or with
// -write rewrites its section of docs/performance.md.
func (b *bench) runHelmfile(counts string) error {
	var ns []int
	for _, c := range strings.Split(counts, ",") {
		var n int
		if _, err := fmt.Sscan(strings.TrimSpace(c), &n); err != nil {
			return fmt.Errorf("-helmfile: %w", err)
		}
		ns = append(ns, n)
	}
	res, err := b.measureHelmfile(ns)
	if err != nil {
		return err
	}
	var head strings.Builder
	fmt.Fprintf(&head, "%s", strings.SplitN(b.header(), "\n\n", 2)[0]+"\n\n")
	fmt.Fprintf(&head, "Command: `cd hack/bench && go run . -helmfile %s -hf-workloads %d -rounds %d` (or `make bench-helmfile`).\n\n", counts, b.o.hfWorkloads, b.o.rounds)
	report, err := b.helmfileReport(head.String(), ns, res)
	if err != nil {
		return err
	}
	fmt.Print(report)
	if !b.o.write {
		return nil
	}
	return replaceMarked(filepath.Join(b.o.repo, "docs", "performance.md"), hfBeginMarker, hfEndMarker, report)
}

const (
	hfBeginMarker = "<!-- helmfile bench results: begin (written by hack/bench -helmfile) -->"
	hfEndMarker   = "<!-- helmfile bench results: end -->"
)
