package release

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"

	"github.com/helm-inject/helm-inject/chartify"
	"github.com/helm-inject/helm-inject/inject"
)

// EnvPlanCache names the plan cache folder of one `helm-inject helmfile`
// run, and EnvPlanKey the run's key that authenticates each entry. The
// wrapper creates both, private, for the run and removes the folder after;
// the shims helmfile starts read them from the environment.
const (
	EnvPlanCache = "HELM_INJECT_PLAN_CACHE"
	EnvPlanKey   = "HELM_INJECT_PLAN_KEY"
)

// PlanCache keeps, within one helmfile run, what rendering and injecting a
// release produced, so that the preflight diff, helmfile's own diff and the
// upgrade of the same release with the same inputs render and inject it
// once. An entry is keyed by a digest of everything its result follows
// from: the release, the revision it builds on, the chart's content, the
// values, the capabilities, the injectors and their library versions, and
// how their versions are chosen. Anything else renders afresh, and so does
// a chart that calls lookup (its result depends on the cluster at the time
// of the call, which another release of the run may have changed).
//
// An entry is installed as it is read, so the cache is trusted only as far
// as the run's own: the folder must be the user's own, 0700, and every
// entry carries an HMAC under the run's key, which only the wrapper and
// the processes it starts know. An entry another user (or another run)
// wrote or changed is refused.
type PlanCache struct {
	dir    string
	secret []byte
}

// OpenPlanCache returns the cache in dir, authenticated with the hex key,
// or nil (no caching) when either is empty. A folder that is not a private
// folder of the user's is refused.
func OpenPlanCache(dir, key string) (*PlanCache, error) {
	if dir == "" || key == "" {
		return nil, nil
	}
	k, err := hex.DecodeString(key)
	if err != nil || len(k) < 16 {
		return nil, fmt.Errorf("%s: not a key of a helm-inject helmfile run", EnvPlanKey)
	}
	if err := privateFolder(dir); err != nil {
		return nil, fmt.Errorf("%s %s: %w; it is set by helm-inject helmfile for its own run only", EnvPlanCache, dir, err)
	}
	return &PlanCache{dir: dir, secret: k}, nil
}

// NewPlanKey returns a new random key for a run's plan cache, in hex.
func NewPlanKey() (string, error) {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		return "", err
	}
	return hex.EncodeToString(k), nil
}

// mac authenticates an entry's data under its name.
func (c *PlanCache) mac(name string, data []byte) []byte {
	m := hmac.New(sha256.New, c.secret)
	fmt.Fprintf(m, "%s\n", name)
	m.Write(data)
	return m.Sum(nil)
}

// planKey is everything a built plan follows from, besides what the
// digests stand for.
type planKey struct {
	Format       int
	Name         string
	Ref          string
	Namespace    string
	Cluster      string
	Revision     int
	IsUpgrade    bool
	KubeVersion  string
	APIVersions  []string
	SkipSchema   bool
	EnableDNS    bool
	SubNotes     bool
	Chart        string
	Values       json.RawMessage
	Injectors    []string
	Timeout      string
	SkipHooks    bool
	SkipTests    bool
	InjectDir    string
	Strategy     inject.ReconcileStrategy
	Update       bool
	Current      int
	RecordsThere []inject.Record
}

// key returns the entry name for a plan, or "" when the plan must not be
// cached.
func (c *PlanCache) key(name string, src Source, vals map[string]any, opts chartify.RenderOptions, o Inputs, current int, recordsBefore []inject.Record) string {
	if c == nil || callsLookup(src.Chart) {
		return ""
	}
	values, err := json.Marshal(vals)
	if err != nil {
		return ""
	}
	injectDir, err := filepath.Abs(o.InjectDir)
	if err != nil {
		return ""
	}
	k := planKey{
		Format: 1, Name: name, Ref: src.Ref, Namespace: opts.Namespace, Revision: opts.Revision, IsUpgrade: opts.IsUpgrade,
		SkipSchema: opts.SkipSchemaValidation, EnableDNS: opts.EnableDNS, SubNotes: opts.SubNotes,
		Chart: chartDigest(src.Chart), Values: values, InjectDir: injectDir,
		Strategy: o.Reconcile, Update: o.UpdateInjectors, Current: current, RecordsThere: recordsBefore,
	}
	// The same release name may be in two clusters of one helmfile run
	// (releases with their own kubeContext), and an injector may read its
	// cluster (istioctl reads the mesh's config).
	if rc := opts.RESTConfig; rc != nil {
		k.Cluster = rc.Host
	}
	if caps := opts.Capabilities; caps != nil {
		k.KubeVersion = caps.KubeVersion.Version
		k.APIVersions = slices.Sorted(slices.Values(caps.APIVersions))
	}
	if d := o.Injectors; d != nil {
		k.Timeout, k.SkipHooks, k.SkipTests = d.Timeout.String(), d.SkipHooks, d.SkipTests
		for _, s := range d.Specs {
			k.Injectors = append(k.Injectors, specKey(s))
		}
	}
	b, err := json.Marshal(k)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// specKey identifies an injector as declared: a command by its argument
// list, a built-in one by its reference, parameters and the digests of
// every version the library has of it (a version added or removed may
// change the choice).
func specKey(s inject.Spec) string {
	switch s := s.(type) {
	case *inject.Command:
		b, _ := json.Marshal(s.Argv)
		return "command " + string(b)
	case *inject.TemplateRef:
		params, _ := json.Marshal(s.Params)
		var versions []string
		for _, d := range s.Library.Versions(s.Injector) {
			versions = append(versions, d.Version+"="+d.Digest)
		}
		return fmt.Sprintf("with %s %s %s %s", s.Ref, params, s.Library.Dir, strings.Join(versions, ","))
	case *inject.TemplateInjector:
		params, _ := json.Marshal(s.Params)
		return fmt.Sprintf("template %s %s %s", s.Def.Ref(), s.Def.Digest, params)
	}
	return fmt.Sprintf("%T %s", s, s.Name())
}

// callsLookup reports whether a template of ch or its subcharts may call
// lookup: by name, or through tpl, which renders a string (from values,
// files or another template) that may call it.
func callsLookup(ch *chart.Chart) bool {
	for _, t := range ch.Templates {
		if strings.Contains(string(t.Data), "lookup") || strings.Contains(string(t.Data), "tpl") {
			return true
		}
	}
	return slices.ContainsFunc(ch.Dependencies(), callsLookup)
}

// chartDigest identifies a chart's content: metadata, lock, values, schema,
// templates and files, of the chart and its subcharts.
func chartDigest(ch *chart.Chart) string {
	h := sha256.New()
	var walk func(*chart.Chart)
	walk = func(c *chart.Chart) {
		b, _ := json.Marshal([]any{c.Metadata, c.Lock, c.Values})
		fmt.Fprintf(h, "chart %d %s\nschema %d %s\n", len(b), b, len(c.Schema), c.Schema)
		for _, fs := range [][]*common.File{c.Templates, c.Files} {
			for _, f := range fs {
				fmt.Fprintf(h, "file %s %d %s\n", f.Name, len(f.Data), f.Data)
			}
		}
		deps := c.Dependencies()
		fmt.Fprintf(h, "dependencies %d\n", len(deps))
		for _, d := range deps {
			walk(d)
		}
	}
	walk(ch)
	return hex.EncodeToString(h.Sum(nil))
}

// load returns the entry for key, if the run has one.
func (c *PlanCache) load(key string, ch *chart.Chart, vals map[string]any, caps *common.Capabilities) (*built, bool, error) {
	if c == nil || key == "" {
		return nil, false, nil
	}
	raw, err := os.ReadFile(filepath.Join(c.dir, key+".json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("reading the run's plan cache: %w", err)
	}
	sum, data, ok := strings.Cut(string(raw), "\n")
	if mac, err := hex.DecodeString(sum); !ok || err != nil || !hmac.Equal(mac, c.mac(key, []byte(data))) {
		return nil, false, fmt.Errorf("the run's plan cache entry %s was not written by this run (its authentication fails); refusing to install it", key)
	}
	var b built
	if err := json.Unmarshal([]byte(data), &b); err != nil {
		return nil, false, fmt.Errorf("reading the run's plan cache: %w", err)
	}
	if err := chartify.Prepare(ch, vals, caps); err != nil {
		return nil, false, err
	}
	b.chart = ch
	return &b, true, nil
}

// store keeps b under key for the rest of the run.
func (c *PlanCache) store(key string, b *built) error {
	if c == nil || key == "" {
		return nil
	}
	data, err := json.Marshal(b)
	if err != nil {
		return fmt.Errorf("writing the run's plan cache: %w", err)
	}
	data = append([]byte(hex.EncodeToString(c.mac(key, data))+"\n"), data...)
	// Written whole, then renamed: a concurrent reader (helmfile runs
	// releases in parallel) sees all of an entry or none.
	f, err := os.CreateTemp(c.dir, key+".*.tmp")
	if err == nil {
		_, err = f.Write(data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(f.Name(), filepath.Join(c.dir, key+".json"))
		}
		if err != nil {
			os.Remove(f.Name())
		}
	}
	if err != nil {
		return fmt.Errorf("writing the run's plan cache: %w", err)
	}
	return nil
}
