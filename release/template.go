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

	"helm.sh/helm/v4/pkg/action"

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
			return nil, err
		}
	}
	var choose Chooser
	if t.Pins != nil {
		choose = func(string) (inject.Choice, error) { return inject.Choice{Pins: t.Pins}, nil }
	}
	tc, r, _, err := BuildChart(ctx, name, src, vals, opts, t.Injectors, choose, t.InjectDir, t.Render.PostRenderer)
	if err != nil {
		return nil, err
	}
	if err := keepChart(name, tc, t.KeepChart); err != nil {
		return nil, err
	}
	if t.Validate {
		// Documents of comments only create nothing.
		docs := slices.DeleteFunc(slices.Clone(r.Documents), manifest.Document.Empty)
		if _, err := t.Cluster.KubeClient.Build(strings.NewReader(manifest.Join(docs)), true); err != nil {
			return nil, fmt.Errorf("release %q: validating against the cluster: %w", name, err)
		}
	}
	return r, nil
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
// "# Source:" comment.
func WriteManifests(w io.Writer, r *chartify.Rendered, o PrintOptions) error {
	docs, err := selectDocs(r, o)
	if err != nil {
		return err
	}
	// helm template prints the release manifest trimmed: its last
	// document has no blank line after it, hooks follow.
	last := -1
	for i, d := range docs {
		if d.Hook == "" {
			last = i
		}
	}
	// One write per document would be a system call each on a pipe.
	bw := bufio.NewWriterSize(w, 64<<10)
	if last == -1 && len(o.ShowOnly) == 0 {
		// helm template prints the (empty) release manifest as an empty
		// line before the hooks; --show-only prints documents alone.
		_ = bw.WriteByte('\n')
	}
	for i, d := range docs {
		if err := writeFramed(bw, d, i != last && d.Content != hiddenSecret); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// WriteManifestsToDir writes each document into dir/<source path>, as
// `helm template --output-dir` does (several documents from one template
// share its file).
func WriteManifestsToDir(dir string, r *chartify.Rendered, o PrintOptions) error {
	docs, err := selectDocs(r, o)
	if err != nil {
		return err
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
		err = writeSourced(f, d)
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
// manifest: "---", its "# Source:" comment, the document with the line end
// helm 4 keeps (each document of a template file ends with one), then
// helm's own line end; a hidden Secret's comment has only helm's.
func writeSourced(w io.Writer, d manifest.Document) error {
	return writeFramed(w, d, d.Content != hiddenSecret)
}

// writeFramed writes "---", the "# Source:" comment and the document,
// with a blank line after it when blank is set.
func writeFramed(w io.Writer, d manifest.Document, blank bool) error {
	format := "---\n# Source: %s\n%s\n"
	if blank {
		format += "\n"
	}
	_, err := fmt.Fprintf(w, format, d.Source, d.Content)
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

func selectDocs(r *chartify.Rendered, o PrintOptions) ([]manifest.Document, error) {
	var docs []manifest.Document
	if o.IncludeCRDs {
		for _, crd := range r.Chart.CRDObjects() {
			docs = append(docs, manifest.Document{Source: filepath.ToSlash(crd.Filename), Content: strings.TrimRight(string(crd.File.Data), "\n")})
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
	if len(o.ShowOnly) == 0 {
		return docs, nil
	}
	prefix := r.Chart.Name() + "/"
	var kept []manifest.Document
	matched := make([]bool, len(o.ShowOnly))
	for _, d := range docs {
		rel := strings.TrimPrefix(d.Source, prefix)
		for i, pattern := range o.ShowOnly {
			pattern = path.Clean(filepath.ToSlash(pattern))
			if ok, _ := path.Match(pattern, rel); ok || pattern == d.Source {
				kept = append(kept, d)
				matched[i] = true
				break
			}
		}
	}
	for i, m := range matched {
		if !m {
			return nil, fmt.Errorf("could not find template %s in chart", o.ShowOnly[i])
		}
	}
	return kept, nil
}
