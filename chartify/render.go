package chartify

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	commonutil "helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"

	"helm.sh/helm/v4/pkg/engine"
	release "helm.sh/helm/v4/pkg/release/v1"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/helm-inject/helm-inject/internal/parallel"
	"github.com/helm-inject/helm-inject/manifest"
)

// RenderOptions are the release facts a chart is rendered with.
type RenderOptions struct {
	ReleaseName string
	Namespace   string
	// Revision is .Release.Revision: 1 for an install, the last revision
	// plus one for an upgrade.
	Revision  int
	IsUpgrade bool
	// Capabilities is .Capabilities; OfflineCapabilities or
	// ClusterCapabilities build it.
	Capabilities *common.Capabilities
	// RESTConfig, when set, makes the lookup function query the cluster;
	// without it lookup returns empty results, as in `helm template`.
	RESTConfig           *rest.Config
	SkipSchemaValidation bool
	// EnableDNS lets templates resolve host names (Helm's --enable-dns).
	EnableDNS bool
	// SubNotes adds every subchart's NOTES.txt to the notes, after the
	// top chart's (Helm's --render-subchart-notes).
	SubNotes bool
	// SchemaLoadsNothing validates values against the charts' schemas
	// with no "$ref" loaded from a file or URL (Argo CD's generate);
	// Helm's validation reads both.
	SchemaLoadsNothing bool
	// KeepTree, when set, says which kinds of document keep their parse
	// for their first manifest.Document.Tree: a built-in injector reads
	// workloads again, and reading each document's identity has parsed
	// all of it already. Other documents keep no parse (a parse kept
	// takes memory until the documents go).
	KeepTree func(kind string) bool
}

// Rendered is a rendered chart, split into documents.
type Rendered struct {
	// Chart is the source chart (its metadata, default values and CRDs go
	// into the temporary chart).
	Chart *chart.Chart
	// Documents are the rendered resources: manifests in Helm's install
	// order, then hooks in Helm's order.
	Documents []manifest.Document
	// Notes is the rendered NOTES.txt of the top chart.
	Notes string
}

// Prepare is what Render does to ch before rendering it, as Helm does: the
// kubeVersion check, and the dependency conditions and import-values
// applied (disabled subcharts removed). A plan taken from the cache needs
// the chart in this state without rendering it again.
func Prepare(ch *chart.Chart, vals map[string]any, caps *common.Capabilities) error {
	if kv := ch.Metadata.KubeVersion; kv != "" && !chartutil.IsCompatibleRange(kv, caps.KubeVersion.String()) {
		return fmt.Errorf("chart %s requires kubeVersion %s, which is incompatible with Kubernetes %s", ch.Name(), kv, caps.KubeVersion.String())
	}
	if err := chartutil.ProcessDependencies(ch, vals); err != nil {
		return fmt.Errorf("chart %s: %w", ch.Name(), err)
	}
	return nil
}

// Render renders ch with the user's values exactly as Helm's install and
// upgrade actions do (values coalescing, dependency conditions and
// import-values, schema validation, kubeVersion check, NOTES.txt, hook
// sorting), but in-process and without building the objects against the
// cluster. ch is modified as Helm modifies it (disabled subcharts removed).
func Render(ch *chart.Chart, vals map[string]any, o RenderOptions) (*Rendered, error) {
	caps := o.Capabilities
	if caps == nil {
		caps = OfflineCapabilities("", nil)
	}
	if err := Prepare(ch, vals, caps); err != nil {
		return nil, err
	}
	revision := o.Revision
	if revision < 1 {
		revision = 1
	}
	opts := common.ReleaseOptions{
		Name:      o.ReleaseName,
		Namespace: o.Namespace,
		Revision:  revision,
		IsInstall: !o.IsUpgrade,
		IsUpgrade: o.IsUpgrade,
	}
	values, err := commonutil.ToRenderValuesWithSchemaValidation(ch, vals, opts, caps, o.SkipSchemaValidation || o.SchemaLoadsNothing)
	if err != nil {
		return nil, fmt.Errorf("chart %s: %w", ch.Name(), err)
	}
	if o.SchemaLoadsNothing && !o.SkipSchemaValidation {
		coalesced, _ := values["Values"].(common.Values)
		if err := validateSchemasLocally(ch, coalesced); err != nil {
			return nil, fmt.Errorf("chart %s: values don't meet the specifications of the schema(s) in the following chart(s):\n%w", ch.Name(), err)
		}
	}

	var eng engine.Engine
	if o.RESTConfig != nil {
		eng = engine.New(o.RESTConfig)
	}
	eng.EnableDNS = o.EnableDNS
	files, err := eng.Render(ch, values)
	if err != nil {
		return nil, err
	}

	notesPath := path.Join(ch.Name(), "templates", "NOTES.txt")
	r := &Rendered{Chart: ch, Notes: files[notesPath]}
	// Helm joins the subcharts' notes in map order; ours are in path order
	// after the top chart's, so the notes (stored in the release) are the
	// same on every run.
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if !strings.HasSuffix(name, "NOTES.txt") {
			continue
		}
		if o.SubNotes && name != notesPath {
			if r.Notes != "" {
				r.Notes += "\n"
			}
			r.Notes += files[name]
		}
		delete(files, name)
	}
	if r.Documents, err = sortRendered(files, o.KeepTree); err != nil {
		return nil, fmt.Errorf("chart %s: %w", ch.Name(), err)
	}
	return r, nil
}

// sortRendered splits and orders rendered files exactly as Helm's
// releaseutil.SortManifests does (files by path, documents in file order,
// "_" files and unknown hook types skipped, plain manifests then hooks,
// each stably sorted by Helm's install order of kinds), but reads each
// document once, with our own parser and on every CPU, instead of once more
// with sigs.k8s.io/yaml: that second parse was a third of every render.
// A document that is valid YAML but no Kubernetes object is kept, marked
// NotResource, where Helm sorts it (its kind, often "", unknown to the
// install order): `helm template` prints it, and apply and diff refuse
// it as `helm install` does. TestSortRenderedMatchesHelm holds it to
// Helm's result. Resources of the kinds keep accepts keep their parse
// (see RenderOptions.KeepTree).
func sortRendered(files map[string]string, keep func(kind string) bool) ([]manifest.Document, error) {
	type part struct{ source, content, trailer string }
	var parts []part
	for _, p := range slices.Sorted(maps.Keys(files)) {
		if strings.HasPrefix(path.Base(p), "_") || strings.TrimSpace(files[p]) == "" {
			continue
		}
		for _, c := range manifest.SplitFile(files[p]) {
			parts = append(parts, part{p, c.Content, c.Trailer})
		}
	}
	docs := make([]manifest.Document, len(parts))
	err := parallel.For(len(parts), func(i int) error {
		d, err := manifest.ParseRendered(parts[i].source, parts[i].content)
		if err != nil {
			return fmt.Errorf("rendered template %s: %w", parts[i].source, err)
		}
		if keep == nil || d.NotResource != "" || !keep(d.ID.Kind) {
			d = d.WithoutTree()
		}
		d.Trailer = parts[i].trailer
		docs[i] = d
		return nil
	})
	if err != nil {
		return nil, err
	}
	return installOrdered(docs), nil
}

// installOrdered takes documents in file order (files by path, documents in
// their file's order) and returns Helm's order: plain manifests, then hooks
// of the events Helm knows, each group stably sorted by kind as Helm's
// lessByKind sorts (known kinds in install order, unknown kinds after them
// alphabetically). It sorts small keys, each kind looked up once, and moves
// every document once: sorting the documents themselves moved their large
// structs at every step and looked kinds up at every comparison.
func installOrdered(docs []manifest.Document) []manifest.Document {
	type key struct {
		hook bool
		rank int // the index in Helm's install order, unknownKind for a kind not in it
		kind string
		at   int
	}
	unknownKind := len(releaseutil.InstallOrder)
	keys := make([]key, 0, len(docs))
	for i, d := range docs {
		if d.Hook != "" && !knownHook(d.Hook) {
			continue
		}
		r, ok := installOrder[d.ID.Kind]
		if !ok {
			r = unknownKind
		}
		keys = append(keys, key{hook: d.Hook != "", rank: r, kind: d.ID.Kind, at: i})
	}
	slices.SortStableFunc(keys, func(a, b key) int {
		switch {
		case a.hook != b.hook:
			if a.hook {
				return 1
			}
			return -1
		case a.rank != b.rank || a.rank != unknownKind:
			return a.rank - b.rank
		}
		return strings.Compare(a.kind, b.kind)
	})
	ordered := make([]manifest.Document, len(keys))
	for i, k := range keys {
		ordered[i] = docs[k.at]
	}
	return ordered
}

// knownHook reports whether every event in a helm.sh/hook value is one
// Helm knows; Helm skips the document otherwise.
func knownHook(value string) bool {
	for _, e := range strings.Split(value, ",") {
		e = strings.ToLower(strings.TrimSpace(e))
		if !slices.Contains(hookEvents, release.HookEvent(e)) && e != "test-success" { // Helm 2's name for test
			return false
		}
	}
	return true
}

// hookEvents are the events of Helm's pkg/releaseutil hook table.
var hookEvents = []release.HookEvent{
	release.HookPreInstall, release.HookPostInstall, release.HookPreDelete, release.HookPostDelete,
	release.HookPreUpgrade, release.HookPostUpgrade, release.HookPreRollback, release.HookPostRollback, release.HookTest,
}

// installOrder is the index of each kind in Helm's install order.
var installOrder = func() map[string]int {
	m := make(map[string]int, len(releaseutil.InstallOrder))
	for i, k := range releaseutil.InstallOrder {
		m[k] = i
	}
	return m
}()

// OfflineCapabilities are the capabilities of `helm template`: Helm's
// defaults, optionally with another Kubernetes version (--kube-version) and
// extra API versions (--api-versions).
// Without --kube-version the Kubernetes version is defaultKubeVersion.
func OfflineCapabilities(kubeVersion string, apiVersions []string) *common.Capabilities {
	caps := common.DefaultCapabilities.Copy()
	if kubeVersion == "" {
		kubeVersion = defaultKubeVersion
	}
	if kubeVersion != "" {
		if kv, err := common.ParseKubeVersion(kubeVersion); err == nil {
			caps.KubeVersion = *kv
		}
	}
	caps.APIVersions = append(caps.APIVersions, apiVersions...)
	return caps
}

// ClusterCapabilities asks the API server for its version and API groups,
// as Helm's install and upgrade do.
func ClusterCapabilities(dc discovery.DiscoveryInterface) (*common.Capabilities, error) {
	if cached, ok := dc.(discovery.CachedDiscoveryInterface); ok {
		cached.Invalidate()
	}
	v, err := dc.ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("reading the Kubernetes version: %w", err)
	}
	apis, err := action.GetVersionSet(dc)
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, fmt.Errorf("reading the Kubernetes API versions: %w", err)
	}
	return &common.Capabilities{
		APIVersions: apis,
		KubeVersion: common.KubeVersion{Version: v.GitVersion, Major: v.Major, Minor: v.Minor},
		HelmVersion: common.DefaultCapabilities.HelmVersion,
	}, nil
}

// defaultKubeVersion is the Kubernetes version of the client libraries
// helm-inject is built with (k8s.io/client-go v0.37.x); a test keeps it in
// step with go.mod. Helm's own default is set by ldflags in Helm's build and
// is v1.20 in any other build, too old for many charts' kubeVersion.
const defaultKubeVersion = "v1.37.0"

// WithChartCRDs adds to caps the API versions that the CustomResourceDefinitions
// in ch's crds/ folders (subcharts' included) serve: "group/version" and
// "group/version/Kind" for each served version, as discovery lists them
// once the CRDs exist. Helm's first install creates crds/ before it reads
// the capabilities it renders with, so a template gated on
// .Capabilities.APIVersions.Has of the chart's own CRD renders on the first
// install; apply renders before it writes anything, and gets the same
// answer from the CRDs themselves. A file that is not YAML is left for the
// install to refuse.
func WithChartCRDs(caps *common.Capabilities, ch *chart.Chart) *common.Capabilities {
	crds := ch.CRDObjects()
	if len(crds) == 0 {
		return caps
	}
	out := caps.Copy()
	out.APIVersions = slices.Clone(caps.APIVersions)
	has := map[string]bool{}
	for _, v := range out.APIVersions {
		has[v] = true
	}
	add := func(v string) {
		if !has[v] {
			has[v] = true
			out.APIVersions = append(out.APIVersions, v)
		}
	}
	for _, c := range crds {
		if c.File == nil {
			continue
		}
		for _, doc := range manifest.Split(string(c.File.Data)) {
			var crd struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
				Spec       struct {
					Group string `json:"group"`
					Names struct {
						Kind string `json:"kind"`
					} `json:"names"`
					Versions []struct {
						Name   string `json:"name"`
						Served bool   `json:"served"`
					} `json:"versions"`
				} `json:"spec"`
			}
			if yaml.Unmarshal([]byte(doc), &crd) != nil || crd.Kind != "CustomResourceDefinition" || crd.APIVersion != "apiextensions.k8s.io/v1" {
				continue
			}
			for _, v := range crd.Spec.Versions {
				if v.Served && crd.Spec.Group != "" && v.Name != "" {
					gv := crd.Spec.Group + "/" + v.Name
					add(gv)
					add(gv + "/" + crd.Spec.Names.Kind)
				}
			}
		}
	}
	return out
}
