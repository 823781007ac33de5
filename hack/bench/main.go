// Command bench compares helm-inject with the tools it replaces, side by
// side in one run on one machine: the helm CLI, helm piped into an
// injector, chartify (what helmfile runs for `injector:` today), Helm's
// --post-renderer, and helm-inject's template and apply with an external
// and a built-in injector. Methods alternate within each round; medians
// and min-max are reported, with CPU time, peak RSS, injector runs, ratios
// and the cost per workload. It rewrites the results section of
// docs/performance.md and docs/performance.svg.
//
//	make bench                      # = cd hack/bench && go run . -sizes 10,100,500,2000 -rounds 5
//	cd hack/bench && go run . -sizes 10,100 -rounds 3 -write=false
//
// It is its own Go module so that chartify, which only the comparison
// needs, stays out of helm-inject's go.mod.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/helmfile/chartify"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/helm-inject/helm-inject/internal/benchchart"
	"github.com/helm-inject/helm-inject/internal/testenv"
)

func main() {
	// Re-executed as one measured process for the chartify method.
	if len(os.Args) > 1 && os.Args[1] == "chartify-run" {
		if err := chartifyRun(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "chartify-run:", err)
			os.Exit(1)
		}
		return
	}
	// Re-executed as the delay proxy, a process of its own (proxy.go).
	if len(os.Args) > 1 && os.Args[1] == delayProxyCommand {
		if err := runDelayProxy(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "delay-proxy:", err)
			os.Exit(1)
		}
		return
	}
	ctrllog.SetLogger(logr.Discard()) // envtest's progress lines
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// chartifyRun does what helmfile does for a release with `injector:`:
// chartify the chart (helm template --output-dir, one injector run per
// rendered file, a temporary chart), then render that chart with helm.
func chartifyRun(args []string) error {
	helm, chart, injector, out := args[0], args[1], args[2], args[3]
	r := chartify.New(chartify.HelmBin(helm), chartify.UseHelm3(true))
	tmp, err := r.Chartify("bench", chart, chartify.WithChartifyOpts(&chartify.ChartifyOpts{
		Injectors: []string{injector},
		SetFlags:  []string{"--set", "level=bench"},
	}))
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	cmd := exec.Command(helm, "template", "bench", tmp)
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	cmd.Stdout, cmd.Stderr = f, os.Stderr
	return cmd.Run()
}

type options struct {
	sizes  []int
	rounds int
	write  bool
	repo   string
	// only, when set, names the methods to measure (a partial run is
	// printed, never written to docs/).
	only []string
	// hfWorkloads is the chart size of the helmfile comparison.
	hfWorkloads int
	// delay is the delay proxy's latency each way.
	delay time.Duration
	// profiles, when set, is a folder that gets a CPU profile of every
	// measured run of helm-inject and of the helm CLIs (each reads a
	// variable naming the file), named METHOD-N-rROUND.prof.
	profiles string
	// writeConcurrency, when set, adds an apply method (on loopback and,
	// with a delay, through the proxy) for each --write-concurrency value:
	// the measurement that chooses its default.
	writeConcurrency []int
	// gogc, when set, adds apply and template methods run with each of
	// these GOGC values: what tuning the collector would change.
	gogc []string
}

func run(ctx context.Context) error {
	var o options
	sizes := flag.String("sizes", "10,100,500,2000", "workload counts (Deployment + Service per workload)")
	flag.IntVar(&o.rounds, "rounds", 5, "measured rounds per method and size")
	flag.BoolVar(&o.write, "write", true, "rewrite the results in docs/performance.md, .svg and .json")
	replot := flag.Bool("replot", false, "only rewrite docs/performance.md and .svg from docs/performance.json")
	only := flag.String("methods", "", "comma-separated method keys to measure (for example helm-template,hi-template-builtin); implies -write=false")
	hfReleases := flag.String("helmfile", "", "run the helmfile comparison instead, for these release counts (for example 10,30)")
	flag.IntVar(&o.hfWorkloads, "hf-workloads", 100, "with -helmfile: workloads in each release's chart")
	flag.DurationVar(&o.delay, "delay", 10*time.Millisecond, "the delay proxy's latency each way for the delayed methods (0: leave them out)")
	flag.StringVar(&o.profiles, "profiles", "", "write a CPU profile of every measured helm-inject and helm run into this folder (METHOD-N-rROUND.prof; read with go tool pprof)")
	wc := flag.String("write-concurrency", "", "also measure apply, built-in, with each of these --write-concurrency values (for example 1,4,16,32; methods hi-apply-wcN and hi-apply-wcN-delayed)")
	gogc := flag.String("gogc", "", "also measure apply and template, built-in, with each of these GOGC values (for example 100,200,400,off; methods hi-apply-gogcV and hi-template-gogcV)")
	flag.Parse()
	if *only != "" {
		o.only, o.write = strings.Split(*only, ","), false
	}
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("-sizes: %w", err)
		}
		o.sizes = append(o.sizes, n)
	}
	for _, s := range strings.Split(*wc, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return fmt.Errorf("-write-concurrency %q: want whole numbers of 1 or more", *wc)
		}
		o.writeConcurrency = append(o.writeConcurrency, n)
	}
	for _, s := range strings.Split(*gogc, ",") {
		if s = strings.TrimSpace(s); s != "" {
			o.gogc = append(o.gogc, s)
		}
	}
	var err error
	if o.repo, err = repoRoot(); err != nil {
		return err
	}
	if *replot {
		data, err := os.ReadFile(filepath.Join(o.repo, "docs", "performance.json"))
		if err != nil {
			return err
		}
		var saved savedRun
		if err := json.Unmarshal(data, &saved); err != nil {
			return fmt.Errorf("docs/performance.json: %w", err)
		}
		b := &bench{o: options{sizes: saved.Sizes, rounds: saved.Rounds, repo: o.repo}}
		return b.write(saved.Header, saved.Results)
	}

	work, err := os.MkdirTemp("", "helm-inject-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	bin := filepath.Join(work, "bin")
	// Built as releases are (.goreleaser.yaml) and as hack/tools.sh builds
	// helm: without cgo, which alone costs 20 MB of resident memory.
	for _, pkg := range []string{".", "./fixtures/injectors/sidecar-injector"} {
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin+string(filepath.Separator), pkg)
		cmd.Dir = o.repo
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("building %s: %v\n%s", pkg, err, out)
		}
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	tools, err := testenv.ToolsBinDir()
	if err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "bench: starting etcd and kube-apiserver")
	env, err := testenv.Start(ctx, testenv.Options{ToolsBin: tools})
	if err != nil {
		return err
	}
	defer env.Stop()

	b := &bench{
		o: o, ctx: ctx, work: work,
		helm: filepath.Join(tools, "helm"), helm4: filepath.Join(filepath.Dir(tools), "helm4", "helm"), helmInject: filepath.Join(bin, "helm-inject"),
		injector: filepath.Join(bin, "sidecar-injector"), self: self,
		environ: append(append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH")), env.Environ()...),
	}
	if o.delay > 0 {
		target, err := apiServerAddress(env.Kubeconfig)
		if err != nil {
			return err
		}
		addr, err := startDelayProxyProcess(ctx, self, target, o.delay)
		if err != nil {
			return err
		}
		kc, err := delayedKubeconfig(env.Kubeconfig, addr, work)
		if err != nil {
			return err
		}
		b.delayed = []string{"KUBECONFIG=" + kc}
	}
	if b.plugins, err = injectorPlugin(work, b.injector); err != nil {
		return err
	}
	if *hfReleases != "" {
		return b.runHelmfile(*hfReleases)
	}
	results, err := b.measure()
	if err != nil {
		return err
	}
	head := b.header()
	if !o.write {
		fmt.Print(b.report(head, results))
		return nil
	}
	data, err := json.MarshalIndent(savedRun{Header: head, Sizes: o.sizes, Rounds: o.rounds, Results: results}, "", " ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(o.repo, "docs", "performance.json"), data, 0o644); err != nil {
		return err
	}
	return b.write(head, results)
}

// savedRun is docs/performance.json: everything the report is made from.
type savedRun struct {
	Header  string  `json:"header"`
	Sizes   []int   `json:"sizes"`
	Rounds  int     `json:"rounds"`
	Results results `json:"results"`
}

// write prints the report and rewrites docs/performance.md's results
// section and docs/performance.svg.
func (b *bench) write(head string, res results) error {
	report := b.report(head, res)
	fmt.Print(report)
	if err := replaceSection(filepath.Join(b.o.repo, "docs", "performance.md"), report); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(b.o.repo, "docs", "performance.svg"), []byte(plot(res, b.o.sizes)), 0o644)
}

// repoRoot is the folder above the working directory holding
// hack/versions.env (this module's own go.mod is in hack/bench).
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "hack", "versions.env")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no helm-inject checkout above the working directory")
		}
		dir = parent
	}
}

type bench struct {
	o                                options
	ctx                              context.Context
	work                             string
	helm, helmInject, injector, self string
	// helm4 is the helm 4 CLI under the file name helm (hack/tools.sh).
	helm4   string
	environ []string
	// delayed is the environment of the methods that reach the API
	// server through the delay proxy (-delay); nil without it.
	delayed []string
	// plugins is a HELM_PLUGINS folder with the fixture injector as a
	// helm 4 postrenderer/v1 plugin named bench-injector.
	plugins string
}

// method is one way of getting injected manifests (or an injected release).
type method struct {
	key, label string
	// install methods write a release; they are compared with plain helm
	// upgrade --install, the others with helm template.
	install bool
	// delayed methods reach the API server through the delay proxy.
	delayed bool
	// env is added to the method's environment.
	env []string
	// args returns the command line for size n in round r; count is the
	// injector's count file.
	args func(n, r int, chart, count string) []string
}

// injectorFlags are helm-inject's flags that select a built-in injector.
func (b *bench) injectorFlags(bi benchchart.Injector) []string {
	flags := []string{"--injector-library", filepath.Join(b.o.repo, filepath.FromSlash(bi.Library)), "--with", bi.Name + "@" + bi.Version}
	for _, k := range slices.Sorted(maps.Keys(bi.Params)) {
		flags = append(flags, "--with-set", fmt.Sprintf("%s.%s=%v", bi.Name, k, bi.Params[k]))
	}
	return flags
}

func (b *bench) methods() []method {
	// The built-in injector adds the very container the external one adds,
	// so the two compare the ways of injecting on objects of the same size;
	// log-shipper, a richer template, shows what a larger patch costs.
	sidecar, shipper := benchchart.Injectors()
	builtin, logShipper := b.injectorFlags(sidecar), b.injectorFlags(shipper)
	ext := func(count string) string { return "sidecar-injector f=FILE,count-file=" + count }
	set := func(r int) []string { return []string{"--set", fmt.Sprintf("level=r%d", r)} }
	// installNS is for helm install, which has no --history-max.
	installNS := func(n int) []string { return []string{"-n", fmt.Sprintf("bench-%d", n), "--create-namespace"} }
	ns := func(n int) []string { return append(installNS(n), "--history-max", "10") }
	sh := func(s string) []string { return []string{"sh", "-c", s} }
	all := []method{
		{key: "helm-template", label: "helm template (CLI)", args: func(n, r int, chart, count string) []string {
			return []string{b.helm, "template", "bench", chart}
		}},
		{key: "helm-template-pipe", label: "helm template \\| injector", args: func(n, r int, chart, count string) []string {
			return sh(fmt.Sprintf("%q template bench %q | %q --count-file %q", b.helm, chart, b.injector, count))
		}},
		{key: "chartify", label: "chartify v0.28.2 + helm template", args: func(n, r int, chart, count string) []string {
			return []string{b.self, "chartify-run", b.helm, chart, b.injector + ",f=FILE,count-file=" + count, os.DevNull}
		}},
		{key: "hi-template-ext", label: "helm-inject template, external", args: func(n, r int, chart, count string) []string {
			return []string{b.helmInject, "template", "bench", chart, "--injector", ext(count)}
		}},
		{key: "hi-template-builtin", label: "helm-inject template, built-in", args: func(n, r int, chart, count string) []string {
			return append([]string{b.helmInject, "template", "bench", chart}, builtin...)
		}},
		{key: "hi-template-logshipper", label: "helm-inject template, built-in log-shipper", args: func(n, r int, chart, count string) []string {
			return append([]string{b.helmInject, "template", "bench", chart}, logShipper...)
		}},
		{key: "helm4-template", label: "helm 4 template (CLI)", args: func(n, r int, chart, count string) []string {
			return []string{b.helm4, "template", "bench", chart}
		}},
		{key: "helm-upgrade", label: "helm upgrade --install", install: true, args: func(n, r int, chart, count string) []string {
			return slices.Concat([]string{b.helm, "upgrade", "--install", "plain", chart}, ns(n), set(r))
		}},
		{key: "helm4-upgrade", label: "helm 4 upgrade --install (server-side)", install: true, args: func(n, r int, chart, count string) []string {
			return slices.Concat([]string{b.helm4, "upgrade", "--install", "plain4", chart}, ns(n), set(r))
		}},
		{key: "helm-postrender", label: "helm upgrade --install --post-renderer injector", install: true, args: func(n, r int, chart, count string) []string {
			return slices.Concat([]string{b.helm, "upgrade", "--install", "postrendered", chart, "--post-renderer", b.injector,
				"--post-renderer-args", "--count-file", "--post-renderer-args", count}, ns(n), set(r))
		}},
		// helm 4 runs a post-renderer only as a plugin.
		{key: "helm4-postrender", label: "helm 4 upgrade --install --post-renderer (plugin) injector", install: true, env: []string{"HELM_PLUGINS=" + b.plugins},
			args: func(n, r int, chart, count string) []string {
				return slices.Concat([]string{b.helm4, "upgrade", "--install", "postrendered4", chart, "--post-renderer", "bench-injector",
					"--post-renderer-args", "--count-file", "--post-renderer-args", count}, ns(n), set(r))
			}},
		// A new release every round: an install, not an upgrade (helm
		// install has no --history-max).
		{key: "helm4-install", label: "helm 4 install (a new release)", install: true, args: func(n, r int, chart, count string) []string {
			return slices.Concat([]string{b.helm4, "install", fmt.Sprintf("new4-r%d", r), chart}, installNS(n))
		}},
		{key: "hi-apply-builtin-install", label: "helm-inject apply, built-in, a new release", install: true, args: func(n, r int, chart, count string) []string {
			return slices.Concat([]string{b.helmInject, "apply", fmt.Sprintf("new-r%d", r), chart}, builtin, installNS(n))
		}},
		{key: "hi-apply-ext", label: "helm-inject apply, external", install: true, args: func(n, r int, chart, count string) []string {
			return slices.Concat([]string{b.helmInject, "apply", "external", chart, "--injector", ext(count)}, ns(n), set(r))
		}},
		{key: "hi-apply-builtin", label: "helm-inject apply, built-in", install: true, args: func(n, r int, chart, count string) []string {
			return slices.Concat([]string{b.helmInject, "apply", "builtin", chart}, builtin, ns(n), set(r))
		}},
		// The same values every round: helm 4 makes a revision anyway,
		// helm-inject finds nothing changed.
		{key: "helm4-upgrade-same", label: "helm 4 upgrade --install, nothing changed", install: true, args: func(n, r int, chart, count string) []string {
			return slices.Concat([]string{b.helm4, "upgrade", "--install", "same4", chart}, ns(n))
		}},
		{key: "hi-apply-builtin-same", label: "helm-inject apply, built-in, nothing changed (the cluster read)", install: true, args: func(n, r int, chart, count string) []string {
			return slices.Concat([]string{b.helmInject, "apply", "builtin-same", chart}, builtin, ns(n))
		}},
		{key: "hi-apply-builtin-same-skip", label: "helm-inject apply, built-in, nothing changed, --skip-live-check", install: true, args: func(n, r int, chart, count string) []string {
			return slices.Concat([]string{b.helmInject, "apply", "builtin-same-skip", chart, "--skip-live-check"}, builtin, ns(n))
		}},
		{key: "hi-apply-builtin-csa", label: "helm-inject apply, built-in, --server-side=false", install: true, args: func(n, r int, chart, count string) []string {
			return slices.Concat([]string{b.helmInject, "apply", "builtin-csa", chart, "--server-side=false"}, builtin, ns(n), set(r))
		}},
	}
	if b.delayed != nil {
		ms := fmt.Sprintf("%v", b.o.delay)
		all = append(all,
			method{key: "helm4-upgrade-delayed", label: "helm 4 upgrade --install, " + ms + " each way", install: true, delayed: true, args: func(n, r int, chart, count string) []string {
				return slices.Concat([]string{b.helm4, "upgrade", "--install", "plain4-delayed", chart}, ns(n), set(r))
			}},
			method{key: "hi-apply-builtin-delayed", label: "helm-inject apply, built-in, " + ms + " each way", install: true, delayed: true, args: func(n, r int, chart, count string) []string {
				return slices.Concat([]string{b.helmInject, "apply", "builtin-delayed", chart}, builtin, ns(n), set(r))
			}},
			method{key: "helm4-upgrade-same-delayed", label: "helm 4 upgrade --install, nothing changed, " + ms + " each way", install: true, delayed: true, args: func(n, r int, chart, count string) []string {
				return slices.Concat([]string{b.helm4, "upgrade", "--install", "same4-delayed", chart}, ns(n))
			}},
			method{key: "hi-apply-builtin-same-delayed", label: "helm-inject apply, built-in, nothing changed (the cluster read), " + ms + " each way", install: true, delayed: true, args: func(n, r int, chart, count string) []string {
				return slices.Concat([]string{b.helmInject, "apply", "builtin-same-delayed", chart}, builtin, ns(n))
			}},
			method{key: "helm4-install-delayed", label: "helm 4 install (a new release), " + ms + " each way", install: true, delayed: true, args: func(n, r int, chart, count string) []string {
				return slices.Concat([]string{b.helm4, "install", fmt.Sprintf("new4-delayed-r%d", r), chart}, installNS(n))
			}},
			method{key: "hi-apply-builtin-install-delayed", label: "helm-inject apply, built-in, a new release, " + ms + " each way", install: true, delayed: true, args: func(n, r int, chart, count string) []string {
				return slices.Concat([]string{b.helmInject, "apply", fmt.Sprintf("new-delayed-r%d", r), chart}, builtin, installNS(n))
			}},
		)
	}
	for _, c := range b.o.writeConcurrency {
		wc := []string{"--write-concurrency", strconv.Itoa(c)}
		all = append(all, method{key: fmt.Sprintf("hi-apply-wc%d", c), label: fmt.Sprintf("helm-inject apply, built-in, --write-concurrency %d", c), install: true,
			args: func(n, r int, chart, count string) []string {
				return slices.Concat([]string{b.helmInject, "apply", fmt.Sprintf("wc%d", c), chart}, builtin, wc, ns(n), set(r))
			}})
		if b.delayed != nil {
			all = append(all, method{key: fmt.Sprintf("hi-apply-wc%d-delayed", c), label: fmt.Sprintf("helm-inject apply, built-in, --write-concurrency %d, %v each way", c, b.o.delay), install: true, delayed: true,
				args: func(n, r int, chart, count string) []string {
					return slices.Concat([]string{b.helmInject, "apply", fmt.Sprintf("wc%d-delayed", c), chart}, builtin, wc, ns(n), set(r))
				}})
		}
	}
	// An apply and a template, built-in, with one environment setting
	// (release name SUFFIX, methods hi-apply-SUFFIX and hi-template-SUFFIX).
	withEnv := func(suffix, setting string) []method {
		env := []string{setting}
		return []method{
			{key: "hi-apply-" + suffix, label: "helm-inject apply, built-in, " + setting, install: true, env: env,
				args: func(n, r int, chart, count string) []string {
					return slices.Concat([]string{b.helmInject, "apply", suffix, chart}, builtin, ns(n), set(r))
				}},
			{key: "hi-template-" + suffix, label: "helm-inject template, built-in, " + setting, env: env,
				args: func(n, r int, chart, count string) []string {
					return append([]string{b.helmInject, "template", "bench", chart}, builtin...)
				}},
		}
	}
	for _, g := range b.o.gogc {
		all = append(all, withEnv("gogc"+g, "GOGC="+g)...)
	}
	if len(b.o.only) == 0 {
		return all
	}
	return slices.DeleteFunc(all, func(m method) bool { return !slices.Contains(b.o.only, m.key) })
}

// sample is one measured run.
type sample struct {
	Wall  time.Duration `json:"wall"`
	CPU   time.Duration `json:"cpu"`
	RSSKB int64         `json:"rssKB"`
	Runs  int           `json:"runs"`
}

// results[method key][n] holds the samples.
type results map[string]map[int][]sample

func (b *bench) measure() (results, error) {
	ms := b.methods()
	res := results{}
	for _, n := range b.o.sizes {
		chart := filepath.Join(b.work, fmt.Sprintf("chart-%d", n), "bench")
		if err := benchchart.Write(chart, n); err != nil {
			return nil, err
		}
		// Round 0 warms caches and installs the releases; it is not kept.
		for r := 0; r <= b.o.rounds; r++ {
			for i := range ms {
				m := ms[(i+r)%len(ms)] // a different order every round
				count := filepath.Join(b.work, fmt.Sprintf("count-%s-%d-%d", m.key, n, r))
				env := b.profileEnv(m.key, n, r)
				if m.delayed {
					env = append(env, b.delayed...)
				}
				env = append(env, m.env...)
				if err := b.sampleRun(res, m.key, n, r, m.args(n, r, chart, count), env, count); err != nil {
					return nil, fmt.Errorf("%s, N=%d: %w", m.label, n, err)
				}
			}
			fmt.Fprintf(os.Stderr, "bench: N=%d round %d/%d done\n", n, r, b.o.rounds)
		}
	}
	return res, nil
}

// profileEnv asks helm-inject (HELM_INJECT_PPROF_CPU_PROFILE) and the helm
// CLIs (HELM_PPROF_CPU_PROFILE, helm 3's and helm 4's) for a CPU profile of
// a measured run. Nothing with -profiles unset or in the warm-up round.
func (b *bench) profileEnv(key string, n, r int) []string {
	if b.o.profiles == "" || r == 0 {
		return nil
	}
	path := filepath.Join(b.o.profiles, fmt.Sprintf("%s-%d-r%d.prof", key, n, r))
	return []string{"HELM_INJECT_PPROF_CPU_PROFILE=" + path, "HELM_PPROF_CPU_PROFILE=" + path}
}

// sampleRun runs argv once (with env added to the bench's environment),
// counts the injector's runs in count, and keeps the sample under key and
// n unless r is the warm-up round 0.
func (b *bench) sampleRun(res results, key string, n, r int, argv, env []string, count string) error {
	s, err := b.runOnce(argv, env)
	if err != nil {
		return err
	}
	if data, err := os.ReadFile(count); err == nil {
		s.Runs = strings.Count(string(data), "\n")
	}
	if r > 0 {
		if res[key] == nil {
			res[key] = map[int][]sample{}
		}
		res[key][n] = append(res[key][n], s)
	}
	return nil
}

func (b *bench) runOnce(argv, env []string) (sample, error) {
	cmd := exec.CommandContext(b.ctx, argv[0], argv[1:]...)
	cmd.Env = append(slices.Clip(b.environ), env...)
	cmd.Stdout = nil // discarded: the manifests themselves are not measured
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil {
		return sample{}, fmt.Errorf("%s: %v\n%s", strings.Join(argv, " "), err, stderr.String())
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	// wait4's usage covers the process and every descendant it waited for
	// (helm's and chartify's injector runs included); maxrss is the largest.
	return sample{Wall: wall, CPU: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), RSSKB: ru.Maxrss}, nil
}

type stat struct{ median, min, max float64 }

func stats(xs []float64) stat {
	s := slices.Clone(xs)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return stat{m, s[0], s[len(s)-1]}
}

func (res results) wall(key string, n int) stat {
	var xs []float64
	for _, s := range res[key][n] {
		xs = append(xs, s.Wall.Seconds())
	}
	return stats(xs)
}

func (res results) of(key string, n int, f func(sample) float64) float64 {
	var xs []float64
	for _, s := range res[key][n] {
		xs = append(xs, f(s))
	}
	return stats(xs).median
}

// header describes the run: date, machine, versions, command.
func (b *bench) header() string {
	var w strings.Builder
	host, _ := os.Hostname()
	fmt.Fprintf(&w, "Measured %s on %s/%s, %d CPUs (%s), %s; helm %s and %s CLIs, kube-apiserver from hack/versions.env; "+
		"%d rounds per method and size after one warm-up round, methods in a different order every round.\n\n",
		time.Now().UTC().Format("2006-01-02"), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), cpuModel(), host, helmVersion(b.helm), helmVersion(b.helm4), b.o.rounds)
	if len(b.o.only) > 0 {
		fmt.Fprintf(&w, "Command: `cd hack/bench && go run . -sizes %s -rounds %d -methods %s` (a partial run, not saved).\n\n", joinInts(b.o.sizes), b.o.rounds, strings.Join(b.o.only, ","))
	} else {
		fmt.Fprintf(&w, "Command: `cd hack/bench && go run . -sizes %s -rounds %d` (or `make bench`); raw samples in `docs/performance.json`.\n\n", joinInts(b.o.sizes), b.o.rounds)
	}
	return w.String()
}

func (b *bench) report(head string, res results) string {
	var w strings.Builder
	w.WriteString(head)
	ms := b.methods()
	for _, n := range b.o.sizes {
		fmt.Fprintf(&w, "### N = %d workloads (%d resources)\n\n", n, 2*n)
		fmt.Fprintln(&w, "| method | wall, median (min-max) | CPU | peak RSS | injector runs | vs helm |")
		fmt.Fprintln(&w, "|---|---:|---:|---:|---:|---:|")
		for _, m := range ms {
			if res[m.key] == nil {
				continue // not measured in a run saved before the method existed
			}
			st := res.wall(m.key, n)
			base := "helm-template"
			if m.install {
				base = "helm-upgrade"
			}
			vs := "–" // a partial run (-methods) without the base method
			if res[base] != nil {
				vs = fmt.Sprintf("%.2fx", st.median/res.wall(base, n).median)
			}
			fmt.Fprintf(&w, "| %s | %.3f s (%.3f-%.3f) | %.3f s | %.0f MB | %.0f | %s |\n", m.label, st.median, st.min, st.max,
				res.of(m.key, n, func(s sample) float64 { return s.CPU.Seconds() }),
				res.of(m.key, n, func(s sample) float64 { return float64(s.RSSKB) / 1024 }),
				res.of(m.key, n, func(s sample) float64 { return float64(s.Runs) }),
				vs)
		}
		fmt.Fprintln(&w)
	}

	// The targets hold at N=500 and (the same trend) at every larger size.
	for _, top := range b.o.sizes {
		if top < 500 && top != b.o.sizes[len(b.o.sizes)-1] {
			continue
		}
		b.targets(&w, res, top)
	}

	fmt.Fprintln(&w, "### Cost per workload (least-squares slope of the median wall time over N)")
	fmt.Fprintln(&w)
	fmt.Fprintln(&w, "| method | ms per workload | fixed cost |")
	fmt.Fprintln(&w, "|---|---:|---:|")
	for _, m := range ms {
		if res[m.key] == nil {
			continue
		}
		slope, icpt := fit(b.o.sizes, func(n int) float64 { return res.wall(m.key, n).median })
		fmt.Fprintf(&w, "| %s | %.3f | %.3f s |\n", m.label, slope*1000, icpt)
	}
	fmt.Fprintln(&w)
	fmt.Fprintln(&w, "![wall time against N for each method](performance.svg)")
	return w.String()
}

// targets writes issue 9's targets measured at size top.
func (b *bench) targets(w *strings.Builder, res results, top int) {
	ratio := func(a, c string) float64 { return res.wall(a, top).median / res.wall(c, top).median }
	rss := func(a, c string) float64 {
		f := func(s sample) float64 { return float64(s.RSSKB) }
		return res.of(a, top, f) / res.of(c, top, f)
	}
	cpu := func(a, c string) float64 {
		f := func(s sample) float64 { return s.CPU.Seconds() }
		return res.of(a, top, f) / res.of(c, top, f)
	}
	fmt.Fprintf(w, "### Targets at N = %d\n\n", top)
	fmt.Fprintln(w, "| target | measured | met |")
	fmt.Fprintln(w, "|---|---:|---|")
	// wait4 reports the largest process of the tree, which for an external
	// injector is often the injector itself: for peak RSS each method is
	// compared with the helm CLI doing the same job with the same injector.
	targets := []struct {
		name     string
		of, per  string
		rss, cpu bool
		limit    float64 // a ratio at most this, or at least -limit; 0: reference only
	}{
		// Issue 41's, against the helm 4 CLI.
		{name: "template, built-in ≤ 0.6x helm 4 template", of: "hi-template-builtin", per: "helm4-template", limit: 0.6},
		{name: "CPU of template, built-in ≤ 0.6x helm 4 template", of: "hi-template-builtin", per: "helm4-template", cpu: true, limit: 0.6},
		{name: "apply, built-in ≤ 0.8x helm 4 upgrade --install", of: "hi-apply-builtin", per: "helm4-upgrade", limit: 0.8},
		{name: "CPU of apply, built-in ≤ 0.6x helm 4 upgrade --install", of: "hi-apply-builtin", per: "helm4-upgrade", cpu: true, limit: 0.6},
		{name: "apply, built-in ≤ 0.5x helm 4 upgrade --install, through the delay proxy", of: "hi-apply-builtin-delayed", per: "helm4-upgrade-delayed", limit: 0.5},
		{name: "install, built-in ≤ 0.8x helm 4 install", of: "hi-apply-builtin-install", per: "helm4-install", limit: 0.8},
		{name: "install, built-in ≤ 0.5x helm 4 install, through the delay proxy", of: "hi-apply-builtin-install-delayed", per: "helm4-install-delayed", limit: 0.5},
		{name: "CPU of install, built-in ≤ 0.6x helm 4 install", of: "hi-apply-builtin-install", per: "helm4-install", cpu: true, limit: 0.6},
		{name: "apply, external ≤ 1.0x helm 4 upgrade --install --post-renderer (plugin)", of: "hi-apply-ext", per: "helm4-postrender", limit: 1.0},
		{name: "CPU of apply, external ≤ 1.0x helm 4 upgrade --install --post-renderer (plugin)", of: "hi-apply-ext", per: "helm4-postrender", cpu: true, limit: 1.0},
		// Issue 55's: nothing changed, the cluster read.
		{name: "apply with nothing changed (the cluster read) ≤ 0.2x helm 4's upgrade", of: "hi-apply-builtin-same", per: "helm4-upgrade-same", limit: 0.2},
		{name: "the same through the delay proxy ≤ 0.2x", of: "hi-apply-builtin-same-delayed", per: "helm4-upgrade-same-delayed", limit: 0.2},
		{name: "CPU of apply with nothing changed ≤ 0.5x helm 4's upgrade", of: "hi-apply-builtin-same", per: "helm4-upgrade-same", cpu: true, limit: 0.5},
		{name: "(reference) nothing changed, --skip-live-check vs helm 4's upgrade", of: "hi-apply-builtin-same-skip", per: "helm4-upgrade-same", limit: 0},
		{"template, built-in ≤ 0.8x helm template", "hi-template-builtin", "helm-template", false, false, 0.8},
		{"chartify ≥ 10x template, built-in", "chartify", "hi-template-builtin", false, false, -10},
		{"chartify ≥ 5x template, external", "chartify", "hi-template-ext", false, false, -5},
		{"template, external ≤ 1.1x helm template \\| injector", "hi-template-ext", "helm-template-pipe", false, false, 1.1},
		{"apply, built-in ≤ 1.05x helm upgrade --install", "hi-apply-builtin", "helm-upgrade", false, false, 1.05},
		{"apply, external ≤ 1.10x helm upgrade --install", "hi-apply-ext", "helm-upgrade", false, false, 1.10},
		{"(reference) --post-renderer vs helm upgrade --install", "helm-postrender", "helm-upgrade", false, false, 0},
		{"(reference) helm 4 upgrade --install vs helm upgrade --install", "helm4-upgrade", "helm-upgrade", false, false, 0},
		{"(reference) apply, built-in vs helm 4 upgrade --install", "hi-apply-builtin", "helm4-upgrade", false, false, 0},
		{"(reference) apply, built-in, --server-side=false vs helm upgrade --install", "hi-apply-builtin-csa", "helm-upgrade", false, false, 0},
		{"peak RSS of template, built-in ≤ 1.5x helm template", "hi-template-builtin", "helm-template", true, false, 1.5},
		{"peak RSS of template, external ≤ 1.5x helm template \\| injector", "hi-template-ext", "helm-template-pipe", true, false, 1.5},
		{"peak RSS of apply, built-in ≤ 1.5x helm upgrade --install", "hi-apply-builtin", "helm-upgrade", true, false, 1.5},
		{"peak RSS of apply, external ≤ 1.5x helm upgrade --install --post-renderer injector", "hi-apply-ext", "helm-postrender", true, false, 1.5},
	}
	for _, t := range targets {
		if res[t.of] == nil || res[t.per] == nil {
			continue // a partial run (-methods)
		}
		v := ratio(t.of, t.per)
		switch {
		case t.rss:
			v = rss(t.of, t.per)
		case t.cpu:
			v = cpu(t.of, t.per)
		}
		mark := "yes"
		if (t.limit > 0 && v > t.limit) || (t.limit < 0 && v < -t.limit) {
			mark = "**no**"
		}
		fmt.Fprintf(w, "| %s | %.2f | %s |\n", t.name, v, mark)
	}
	fmt.Fprintln(w)
}

// fit returns the least-squares slope and intercept of y(n) over sizes.
func fit(sizes []int, y func(int) float64) (float64, float64) {
	var sx, sy, sxx, sxy float64
	k := float64(len(sizes))
	for _, n := range sizes {
		x := float64(n)
		sx, sy, sxx, sxy = sx+x, sy+y(n), sxx+x*x, sxy+x*y(n)
	}
	d := k*sxx - sx*sx
	if d == 0 {
		return 0, sy / k
	}
	slope := (k*sxy - sx*sy) / d
	return slope, (sy - slope*sx) / k
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

func cpuModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for _, l := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

func helmVersion(helm string) string {
	out, err := exec.Command(helm, "version", "--short").Output()
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(out))
}

const (
	beginMarker = "<!-- bench results: begin (written by hack/bench) -->"
	endMarker   = "<!-- bench results: end -->"
)

// replaceSection rewrites what lies between the markers in path.
func replaceSection(path, body string) error {
	return replaceMarked(path, beginMarker, endMarker, body)
}

// replaceMarked rewrites what lies between begin and end in path.
func replaceMarked(path, begin, end, body string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(data)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		return fmt.Errorf("%s lacks the markers %q and %q", path, begin, end)
	}
	s = s[:i+len(begin)] + "\n" + body + s[j:]
	return os.WriteFile(path, []byte(s), 0o644)
}

// injectorPlugin writes a HELM_PLUGINS folder holding the fixture
// injector as a helm 4 postrenderer/v1 plugin, bench-injector: helm 4
// takes a post-renderer only as a plugin.
func injectorPlugin(work, injector string) (string, error) {
	dir := filepath.Join(work, "helm4-plugins")
	manifest := fmt.Sprintf("apiVersion: v1\nname: bench-injector\ntype: postrenderer/v1\nruntime: subprocess\nversion: 0.1.0\n"+
		"runtimeConfig:\n  platformCommand:\n    - command: %q\n", injector)
	if err := os.MkdirAll(filepath.Join(dir, "bench-injector"), 0o755); err != nil {
		return "", err
	}
	return dir, os.WriteFile(filepath.Join(dir, "bench-injector", "plugin.yaml"), []byte(manifest), 0o644)
}
