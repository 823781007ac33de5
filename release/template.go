package release

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"unicode"

	"helm.sh/helm/v4/pkg/action"
	chart "helm.sh/helm/v4/pkg/chart/v2"

	"github.com/helm-inject/helm-inject/chartify"
	"github.com/helm-inject/helm-inject/inject"
	"github.com/helm-inject/helm-inject/manifest"
)

// Template renders and injects a chart without a cluster, like `helm
// template`, and returns what Apply would install: what the temporary
// chart renders to, so template output and `helm get manifest` agree.
type Template struct {
	Inputs
	// IsUpgrade sets .Release.IsUpgrade instead of .Release.IsInstall.
	IsUpgrade bool

	// Cluster, when set (--validate, --dry-run=server), renders with the
	// cluster's capabilities and live lookups instead of offline ones.
	Cluster *action.Configuration
	// Validate also builds the result against the cluster's API, as an
	// install would (--validate); it needs Cluster.
	Validate bool
	// Pins, when not nil, fix the version of every built-in injector
	// (--injector-pins, Argo CD's generate); one without a pin is an error.
	Pins inject.Pins
}

// Run renders src as release name with the user's values.
func (t *Template) Run(ctx context.Context, name string, src Source, vals map[string]any) (*chartify.Rendered, error) {
	_, r, err := t.build(ctx, name, src, vals)
	return r, err
}

// build renders and injects src as release name, and returns the
// temporary chart and what it renders to.
func (t *Template) build(ctx context.Context, name string, src Source, vals map[string]any) (*chart.Chart, *chartify.Rendered, error) {
	opts := chartify.RenderOptions{
		ReleaseName:          name,
		Namespace:            t.Namespace,
		Revision:             1,
		IsUpgrade:            t.IsUpgrade,
		Capabilities:         chartify.OfflineCapabilities(t.KubeVersion, t.Render.APIVersions),
		SkipSchemaValidation: t.SkipSchemaValidation,
		EnableDNS:            t.Render.EnableDNS,
		SubNotes:             t.Render.SubNotes,
		SchemaLoadsNothing:   t.Render.SchemaLoadsNothing,
	}
	if t.Cluster != nil {
		if err := t.connect(name, &opts); err != nil {
			return nil, nil, err
		}
	}
	var choose Chooser
	if t.Pins != nil {
		choose = func(string) (inject.Choice, error) { return inject.Choice{Pins: t.Pins}, nil }
	}
	tc, r, _, err := BuildChart(ctx, name, src, vals, opts, t.Injectors, choose, t.InjectDir, t.Render.PostRenderer)
	if err != nil {
		return nil, nil, err
	}
	if err := keepChart(name, tc, t.KeepChart); err != nil {
		return nil, nil, err
	}
	if t.Validate {
		// Documents of comments only create nothing.
		docs := slices.DeleteFunc(slices.Clone(r.Documents), manifest.Document.Empty)
		if _, err := t.Cluster.KubeClient.Build(strings.NewReader(manifest.Join(docs)), true); err != nil {
			return nil, nil, fmt.Errorf("release %q: validating against the cluster: %w", name, err)
		}
	}
	return tc, r, nil
}

// connect renders with the cluster's capabilities (the user's
// --kube-version and --api-versions still apply) and live lookups.
func (t *Template) connect(name string, opts *chartify.RenderOptions) error {
	caps, restConfig, err := clusterFacts(t.Cluster, name, t.KubeVersion, t.Render.APIVersions)
	if err != nil {
		return err
	}
	opts.Capabilities, opts.RESTConfig = caps, restConfig
	return nil
}

// PrintOptions select what WriteManifests prints, with `helm template`'s
// flags.
type PrintOptions struct {
	IncludeCRDs  bool
	DisableHooks bool
	SkipTests    bool
	// HideSecret prints Secrets of the manifest as a comment, as helm's
	// --hide-secret does.
	HideSecret bool
	// ShowOnly keeps only documents whose source matches one of these
	// template paths or globs (relative to the chart, as in
	// "templates/web.yaml").
	ShowOnly []string
}

// WriteManifests prints r as `helm template` does: CRDs (when asked), the
// manifests in install order, then the hooks, each preceded by "---" and a
// "# Source:" comment and followed by the white space Helm keeps after it
// (its Trailer), except the release manifest's last document: helm
// template prints that manifest trimmed, then the hooks. With --show-only,
// helm splits that output again and prints, pattern by pattern, each
// document that matches with what followed it there and one more line end.
func WriteManifests(w io.Writer, r *chartify.Rendered, o PrintOptions) error {
	docs := selectDocs(r, o)
	last := -1 // the release manifest's last document
	for i, d := range docs {
		if d.Hook == "" {
			last = i
		}
	}
	if last >= 0 {
		docs[last].Trailer = "" // helm template trims the release manifest
	}
	// One write per document would be a system call each on a pipe.
	bw := bufio.NewWriterSize(w, 64<<10)
	if len(o.ShowOnly) > 0 {
		shown, err := showOnly(docs, r.Chart.Name(), o.ShowOnly)
		if err != nil {
			return err
		}
		for _, d := range shown {
			if err := writeFramed(bw, d, trailerOf(d)+"\n"); err != nil {
				return err
			}
		}
		return bw.Flush()
	}
	if last == -1 {
		// helm template prints the (empty) release manifest as an empty
		// line before the hooks.
		_ = bw.WriteByte('\n')
	}
	for _, d := range docs {
		if err := writeFramed(bw, d, trailerOf(d)); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// WriteManifestsToDir writes each document into dir/<source path>, as
// `helm template --output-dir` does (several documents from one template
// share its file).
func WriteManifestsToDir(dir string, r *chartify.Rendered, o PrintOptions) error {
	docs := selectDocs(r, o)
	if len(o.ShowOnly) > 0 {
		var err error
		if docs, err = showOnly(docs, r.Chart.Name(), o.ShowOnly); err != nil {
			return err
		}
	}
	written := map[string]bool{}
	for _, d := range docs {
		rel := filepath.FromSlash(d.Source)
		if !filepath.IsLocal(rel) {
			return fmt.Errorf("document source %q would escape %s", d.Source, dir)
		}
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		flag := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
		if written[p] {
			flag = os.O_CREATE | os.O_WRONLY | os.O_APPEND
		}
		f, err := os.OpenFile(p, flag, 0o644)
		if err != nil {
			return err
		}
		err = writeFramed(f, d, trailerOf(d))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		written[p] = true
	}
	return nil
}

// writeSourced writes one document as Helm 4 frames it in a rendered
// manifest: "---", its "# Source:" comment, the document with the white
// space helm keeps after it, then helm's own line end.
func writeSourced(w io.Writer, d manifest.Document) error {
	return writeFramed(w, d, trailerOf(d))
}

// trailerOf is the white space helm prints after d: none after a hidden
// Secret's comment.
func trailerOf(d manifest.Document) string {
	if d.Content == hiddenSecret {
		return ""
	}
	return d.Trailer
}

// writeFramed writes "---", the "# Source:" comment, the document, tail
// and a line end.
func writeFramed(w io.Writer, d manifest.Document, tail string) error {
	_, err := fmt.Fprintf(w, "---\n# Source: %s\n%s%s\n", d.Source, d.Content, tail)
	return err
}

// hiddenSecret is what helm's --hide-secret prints instead of a Secret.
const hiddenSecret = "# HIDDEN: The Secret output has been suppressed"

func isSecretID(id manifest.ID) bool { return id.Kind == "Secret" && id.APIVersion == "v1" }

// HideSecrets replaces each Secret of a release manifest (documents led by
// their "# Source:" comment) by helm's --hide-secret comment.
func HideSecrets(stored string) (string, error) {
	docs, err := manifestDocuments(stored, nil)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, d := range docs {
		if isSecretID(d.ID) {
			d.Content = hiddenSecret
		}
		_ = writeSourced(&b, d) // a strings.Builder does not fail
	}
	return b.String(), nil
}

// selectDocs is what template prints of r, before --show-only.
func selectDocs(r *chartify.Rendered, o PrintOptions) []manifest.Document {
	var docs []manifest.Document
	if o.IncludeCRDs {
		for _, crd := range r.Chart.CRDObjects() {
			// helm prints a CRD file as it is.
			data := string(crd.File.Data)
			content := strings.TrimRightFunc(data, unicode.IsSpace)
			docs = append(docs, manifest.Document{Source: filepath.ToSlash(crd.Filename), Content: content, Trailer: data[len(content):]})
		}
	}
	for _, d := range r.Documents {
		if d.Hook != "" && (o.DisableHooks || (o.SkipTests && d.IsTestHook())) {
			continue
		}
		if o.HideSecret && d.Hook == "" && isSecretID(d.ID) {
			d.Content = hiddenSecret
		}
		docs = append(docs, d)
	}
	return docs
}

// showOnly is what --show-only prints of docs, as helm template picks it:
// pattern by pattern, the documents whose template (relative to the chart,
// or as its "# Source:" names it) matches, in order; a pattern that
// matches none is an error.
func showOnly(docs []manifest.Document, chartName string, patterns []string) ([]manifest.Document, error) {
	prefix := chartName + "/"
	var kept []manifest.Document
	for _, pattern := range patterns {
		pattern = path.Clean(filepath.ToSlash(pattern))
		missing := true
		for _, d := range docs {
			if ok, _ := path.Match(pattern, strings.TrimPrefix(d.Source, prefix)); ok || pattern == d.Source {
				kept = append(kept, d)
				missing = false
			}
		}
		if missing {
			return nil, fmt.Errorf("could not find template %s in chart", pattern)
		}
	}
	return kept, nil
}
