package release

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v4/pkg/chart/common"

	"k8s.io/client-go/rest"

	"github.com/helm-inject/helm-inject/chartify"
	"github.com/helm-inject/helm-inject/inject"
	"github.com/helm-inject/helm-inject/internal/testfs"
)

// countingInjector is an external injector (stdin to stdout, unchanged)
// that appends a line to a file each time it runs.
func countingInjector(t *testing.T) (*inject.Command, func() int) {
	t.Helper()
	dir := t.TempDir()
	count := filepath.Join(dir, "count")
	script := filepath.Join(dir, "inject")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho run >> '"+count+"'\nexec cat\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	c, err := inject.ParseCommand(script)
	if err != nil {
		t.Fatal(err)
	}
	return c, func() int {
		b, _ := os.ReadFile(count)
		return strings.Count(string(b), "run")
	}
}

const testPlanKey = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

// runDir is a private folder, as the wrapper makes one for its run.
func runDir(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	if err := os.Chmod(d, 0o700); err != nil {
		t.Fatal(err)
	}
	return d
}

func openCache(t *testing.T, dir, key string) *PlanCache {
	t.Helper()
	c, err := OpenPlanCache(dir, key)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestPlanCache: within a run, diff and apply of a release with the same
// inputs inject it once and install what was diffed; any input that
// changes (values, the revision it builds on) renders afresh, and a chart
// that calls lookup is never taken from the cache.
func TestPlanCache(t *testing.T) {
	cfg := memoryConfig(t)
	cfg.RESTClientGetter = newFakeCluster()
	injector, runs := countingInjector(t)
	cache := openCache(t, runDir(t), testPlanKey)
	inputs := func(c *PlanCache) Inputs {
		return Inputs{Namespace: "shop", SkipLiveCheck: true, Injectors: &inject.Declared{Specs: []inject.Spec{injector}}, Cache: c}
	}
	ch, _, err := chartify.Load("../fixtures/charts/api", chartify.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	src := Source{Ref: "api", Chart: ch}
	diff := func(c *PlanCache, vals map[string]any) *DiffResult {
		t.Helper()
		d := NewDiff(cfg)
		d.Inputs, d.AllowUnreleased = inputs(c), true
		r, err := d.Run(t.Context(), "api", src, vals)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	vals := map[string]any{"replicas": 2}

	uncached := diff(nil, vals)
	if runs() != 1 {
		t.Fatalf("%d injector runs for one diff", runs())
	}
	first := diff(cache, vals)
	second := diff(cache, vals)
	if runs() != 2 {
		t.Errorf("%d injector runs: the second diff with the same inputs did not use the plan", runs())
	}
	if d := cmp.Diff(uncached, first); d != "" || !cmp.Equal(first, second) {
		t.Errorf("a plan from the cache diffs otherwise (-uncached +cached)\n%s", d)
	}

	a := NewApply(cfg)
	a.Inputs = inputs(cache)
	res, err := a.Run(t.Context(), "api", src, vals)
	if err != nil {
		t.Fatal(err)
	}
	if runs() != 2 || res.Release.Version != 1 {
		t.Errorf("apply after the diffs: %d injector runs, revision %d; want the cached plan installed as revision 1", runs(), res.Release.Version)
	}

	// The release now has revision 1: the same values build on it, which
	// is another plan.
	diff(cache, vals)
	if runs() != 3 {
		t.Errorf("%d injector runs: a plan for revision 1 was taken for revision 2", runs())
	}
	diff(cache, map[string]any{"replicas": 3})
	if runs() != 4 {
		t.Errorf("%d injector runs: changed values were served from the cache", runs())
	}

	// The same release in another cluster (helmfile releases with their
	// own kubeContext) is another plan.
	in := inputs(cache)
	here := cache.key("api", src, vals, chartify.RenderOptions{Namespace: "shop", RESTConfig: &rest.Config{Host: "https://a:6443"}}, in, 0, nil)
	there := cache.key("api", src, vals, chartify.RenderOptions{Namespace: "shop", RESTConfig: &rest.Config{Host: "https://b:6443"}}, in, 0, nil)
	if here == "" || here == there {
		t.Errorf("the plan keys of one release in two clusters: %q and %q", here, there)
	}

	// lookup answers from the cluster at the time of the call.
	lookupChart := t.TempDir()
	testfs.Write(t, lookupChart, map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: lookup\nversion: 0.1.0\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: seen\ndata:\n  n: {{ len (lookup \"v1\" \"ConfigMap\" \"\" \"\") | quote }}\n",
	})
	lch, _, err := chartify.Load(lookupChart, chartify.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if key := cache.key("l", Source{Ref: lookupChart, Chart: lch}, nil, chartify.RenderOptions{}, inputs(cache), 0, nil); key != "" {
		t.Errorf("a chart that calls lookup has a cache key")
	}
	// tpl renders a string that may call lookup.
	testfs.Write(t, lookupChart, map[string]string{
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: seen\ndata:\n  n: {{ tpl .Values.expr . | quote }}\n",
	})
	if lch, _, err = chartify.Load(lookupChart, chartify.LoadOptions{}); err != nil {
		t.Fatal(err)
	}
	if key := cache.key("l", Source{Ref: lookupChart, Chart: lch}, nil, chartify.RenderOptions{}, inputs(cache), 0, nil); key != "" {
		t.Errorf("a chart that calls tpl has a cache key")
	}
}

// TestPlanCacheTrustsOnlyItsRun: an entry is installed as it is read, so
// one that another user or another run wrote or changed is refused, and
// so is a folder others can write to.
func TestPlanCacheTrustsOnlyItsRun(t *testing.T) {
	cfg, src := apiRelease(t)
	dir := runDir(t)
	diff := func(c *PlanCache) error {
		d := NewDiff(cfg)
		d.Inputs = Inputs{Namespace: "shop", SkipLiveCheck: true, Cache: c}
		d.AllowUnreleased = true
		_, err := d.Run(t.Context(), "api", src, map[string]any{"replicas": 2})
		return err
	}
	if err := diff(openCache(t, dir, testPlanKey)); err != nil {
		t.Fatal(err)
	}
	entries, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(entries) != 1 {
		t.Fatalf("entries %v, want one", entries)
	}
	if err := diff(openCache(t, dir, testPlanKey)); err != nil {
		t.Fatalf("the run's own entry: %v", err)
	}
	// Another run's key: the entry is not this run's.
	other := strings.Repeat("ff", 32)
	if err := diff(openCache(t, dir, other)); err == nil || !strings.Contains(err.Error(), "was not written by this run") {
		t.Errorf("an entry of another key: %v", err)
	}
	// Rewritten by someone else, its authentication kept.
	b, err := os.ReadFile(entries[0])
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(b), "registry.example", "attacker.example", 1)
	if changed == string(b) {
		t.Fatal("the entry holds no image to change")
	}
	if err := os.WriteFile(entries[0], []byte(changed), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := diff(openCache(t, dir, testPlanKey)); err == nil || !strings.Contains(err.Error(), "was not written by this run") {
		t.Errorf("a changed entry: %v", err)
	}

	for name, mk := range map[string]func(t *testing.T) string{
		"a folder others may write": func(t *testing.T) string {
			d := t.TempDir()
			if err := os.Chmod(d, 0o777); err != nil {
				t.Fatal(err)
			}
			return d
		},
		"a link": func(t *testing.T) string {
			l := filepath.Join(t.TempDir(), "l")
			if err := os.Symlink(runDir(t), l); err != nil {
				t.Fatal(err)
			}
			return l
		},
	} {
		if _, err := OpenPlanCache(mk(t), testPlanKey); err == nil || !strings.Contains(err.Error(), "it is set by helm-inject helmfile for its own run only") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if c, err := OpenPlanCache(dir, ""); c != nil || err != nil {
		t.Errorf("no key: %v %v, want no cache", c, err)
	}
}

// TestPlanCacheKeyInputs: a plan is reused only for exactly the inputs it
// was built from, so each input of the key, changed alone, gives another
// key (and so renders afresh).
func TestPlanCacheKeyInputs(t *testing.T) {
	cache := openCache(t, runDir(t), testPlanKey)
	chartDir := t.TempDir()
	testfs.Write(t, chartDir, map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: keyed\nversion: 0.1.0\n",
		"values.yaml":       "level: info\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: keyed\ndata:\n  level: {{ .Values.level }}\n",
		"files/extra.txt":   "extra\n",
	})
	lib := t.TempDir()
	testfs.Write(t, lib, map[string]string{"side/1.0.0.yaml": "name: side\nversion: 1.0.0\ntemplate: |\n  annotations: {a: b}\n"})
	type keyInputs struct {
		name    string
		src     Source
		vals    map[string]any
		opts    chartify.RenderOptions
		in      Inputs
		current int
		records []inject.Record
	}
	base := func(t *testing.T) keyInputs {
		ch, _, err := chartify.Load(chartDir, chartify.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cmd, err := inject.ParseCommand("sidecar-injector f=FILE")
		if err != nil {
			t.Fatal(err)
		}
		return keyInputs{
			name: "keyed", src: Source{Ref: "keyed", Chart: ch}, vals: map[string]any{"level": "debug"},
			opts: chartify.RenderOptions{Namespace: "shop", Revision: 2, IsUpgrade: true, Capabilities: common.DefaultCapabilities.Copy(),
				RESTConfig: &rest.Config{Host: "https://a:6443"}},
			in:      Inputs{Injectors: &inject.Declared{Specs: []inject.Spec{cmd}, Timeout: time.Minute}, InjectDir: "."},
			current: 1, records: []inject.Record{{Name: "sidecar-injector f=FILE", Digest: "sha256:1"}},
		}
	}
	key := func(k keyInputs) string { return cache.key(k.name, k.src, k.vals, k.opts, k.in, k.current, k.records) }
	want := key(base(t))
	if want == "" || want != key(base(t)) {
		t.Fatalf("the same inputs give keys %q and %q", want, key(base(t)))
	}
	changes := map[string]func(k *keyInputs){
		"release name":    func(k *keyInputs) { k.name = "other" },
		"chart reference": func(k *keyInputs) { k.src.Ref = "other/keyed" },
		"chart template":  func(k *keyInputs) { k.src.Chart.Templates[0].Data = append(k.src.Chart.Templates[0].Data, '\n') },
		"chart file":      func(k *keyInputs) { k.src.Chart.Files[0].Data = []byte("changed\n") },
		"chart defaults":  func(k *keyInputs) { k.src.Chart.Values["level"] = "warn" },
		"chart version":   func(k *keyInputs) { k.src.Chart.Metadata.Version = "0.2.0" },
		"values":          func(k *keyInputs) { k.vals["level"] = "warn" },
		"namespace":       func(k *keyInputs) { k.opts.Namespace = "other" },
		"cluster":         func(k *keyInputs) { k.opts.RESTConfig = &rest.Config{Host: "https://b:6443"} },
		"revision":        func(k *keyInputs) { k.opts.Revision = 3 },
		"install":         func(k *keyInputs) { k.opts.IsUpgrade = false },
		"kube version":    func(k *keyInputs) { k.opts.Capabilities.KubeVersion.Version = "v1.99.0" },
		"api versions": func(k *keyInputs) {
			k.opts.Capabilities.APIVersions = append(k.opts.Capabilities.APIVersions, "x.example/v1")
		},
		"schema validation": func(k *keyInputs) { k.opts.SkipSchemaValidation = true },
		"dns":               func(k *keyInputs) { k.opts.EnableDNS = true },
		"subchart notes":    func(k *keyInputs) { k.opts.SubNotes = true },
		"injector spec": func(k *keyInputs) {
			c, _ := inject.ParseCommand("sidecar-injector f=FILE,name=other")
			k.in.Injectors.Specs = []inject.Spec{c}
		},
		"a built-in injector": func(k *keyInputs) {
			l, err := inject.LoadLibrary(lib)
			if err != nil {
				t.Fatal(err)
			}
			ref, err := inject.ParseTemplateRef(l, "side", nil)
			if err != nil {
				t.Fatal(err)
			}
			k.in.Injectors.Specs = append(k.in.Injectors.Specs, ref)
		},
		"injector timeout":  func(k *keyInputs) { k.in.Injectors.Timeout = time.Hour },
		"skip hooks":        func(k *keyInputs) { k.in.Injectors.SkipHooks = true },
		"skip tests":        func(k *keyInputs) { k.in.Injectors.SkipTests = true },
		"injector folder":   func(k *keyInputs) { k.in.InjectDir = "/elsewhere" },
		"reconcile":         func(k *keyInputs) { k.in.Reconcile = inject.ReconcileNever },
		"update injectors":  func(k *keyInputs) { k.in.UpdateInjectors = true },
		"current revision":  func(k *keyInputs) { k.current = 2 },
		"recorded injector": func(k *keyInputs) { k.records[0].Digest = "sha256:2" },
	}
	for name, change := range changes {
		k := base(t)
		change(&k)
		if got := key(k); got == "" || got == want {
			t.Errorf("%s changed alone: key %q, want a new key", name, got)
		}
	}
}

// TestOpenPlanCacheKeyLength: a key of 16 bytes (128 bits) or more is a
// run's key; a shorter one, or one that is not hex, is refused.
func TestOpenPlanCacheKeyLength(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		key string
		ok  bool
	}{
		{strings.Repeat("ab", 16), true},
		{strings.Repeat("ab", 32), true},
		{strings.Repeat("ab", 15), false},
		{strings.Repeat("zz", 16), false},
	} {
		c, err := OpenPlanCache(dir, tt.key)
		if tt.ok != (err == nil && c != nil) {
			t.Errorf("key of %d hex digits: cache %v, error %v; want usable %v", len(tt.key), c != nil, err, tt.ok)
		}
	}
}

// TestPlanCacheStoreFailureLeavesNoTemporaryFile: an entry that cannot be
// renamed into place (a folder has its name) is an error, and its
// temporary file is removed.
func TestPlanCacheStoreFailureLeavesNoTemporaryFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	c, err := OpenPlanCache(dir, strings.Repeat("ab", 16))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "k1.json"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "k1.json", "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := c.store("k1", &built{}); err == nil || !strings.Contains(err.Error(), "writing the run's plan cache") {
		t.Errorf("store over a folder: %v", err)
	}
	if tmp, _ := filepath.Glob(filepath.Join(dir, "*.tmp")); len(tmp) != 0 {
		t.Errorf("left %v", tmp)
	}
}
