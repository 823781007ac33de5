package chartify

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"sigs.k8s.io/yaml"
)

// Annotations a packaged chart records in its Chart.yaml besides those of
// every temporary chart (the source reference, the rendered digest and the
// injector records).
const (
	// AnnotationSourceChart is the source chart's name, version and
	// digest: "NAME VERSION sha256:HEX".
	AnnotationSourceChart = "helm-inject.io/source-chart"
	// AnnotationValues is the digest of the values the chart was rendered
	// with (the user's, before the chart's defaults).
	AnnotationValues = "helm-inject.io/values-digest"
	// AnnotationRelease and AnnotationNamespace are the release name and
	// namespace the chart was rendered for, and the only ones it installs
	// as.
	AnnotationRelease   = "helm-inject.io/release"
	AnnotationNamespace = "helm-inject.io/namespace"
)

// GuardTemplate is the template of a packaged chart that refuses to render
// for another release name or namespace. It renders to nothing otherwise,
// so it adds no document to the release.
const GuardTemplate = "templates/helm-inject-guard.yaml"

// PackageOptions describe a packaged chart.
type PackageOptions struct {
	// Release and Namespace are what the chart was rendered for.
	Release, Namespace string
	// Source is the chart the release was rendered from, as loaded.
	Source *chart.Chart
	// Values are the user's values the chart was rendered with.
	Values map[string]any
	// Version is the packaged chart's version; empty for the default,
	// DefaultPackageVersion.
	Version string
	// Time is the modification time of every file of the archive and of
	// the archive itself (which helm push records as the OCI manifest's
	// creation time); the zero time is the Unix epoch.
	Time time.Time
}

// PackageChart turns a temporary chart (BuildTempChart's) into a chart to
// publish: its templates are the injected manifests with the values baked
// in, so it has no values.yaml and its values.schema.json refuses any
// value a consumer sets; a guard template refuses another release name or
// namespace; Chart.yaml records what it was made from. The version is
// o.Version or DefaultPackageVersion's.
func PackageChart(tc *chart.Chart, o PackageOptions) (*chart.Chart, error) {
	md := *tc.Metadata
	md.Annotations = make(map[string]string, len(tc.Metadata.Annotations)+4)
	for k, v := range tc.Metadata.Annotations {
		md.Annotations[k] = v
	}
	sourceDigest := FilesDigest(o.Source)
	md.Annotations[AnnotationSourceChart] = fmt.Sprintf("%s %s %s", o.Source.Name(), o.Source.Metadata.Version, sourceDigest)
	valuesDigest, err := ValuesDigest(o.Values)
	if err != nil {
		return nil, err
	}
	md.Annotations[AnnotationValues] = valuesDigest
	md.Annotations[AnnotationRelease] = o.Release
	md.Annotations[AnnotationNamespace] = o.Namespace

	pc := &chart.Chart{Metadata: &md}
	// The templates hold the values already; defaults would only be
	// shown by `helm get values --all` and refused by the schema.
	var subcharts []string
	for _, sub := range tc.Dependencies() {
		subcharts = append(subcharts, sub.Name())
	}
	pc.Schema = valuesSchema(md.Name, md.Version, o.Release, o.Namespace, subcharts)
	for _, f := range tc.Templates {
		if f.Name == GuardTemplate {
			return nil, fmt.Errorf("chart %s: its template %s has the name of helm-inject's guard template; rename it", o.Source.Name(), GuardTemplate)
		}
	}
	pc.Templates = append(slices.Clone(tc.Templates), &common.File{Name: GuardTemplate, Data: []byte(guardTemplate(o.Release, o.Namespace))})
	slices.SortFunc(pc.Templates, func(a, b *common.File) int { return strings.Compare(a.Name, b.Name) })
	pc.Files = slices.Clone(tc.Files)
	// Subcharts hold their own rendered templates (BuildTempChart); they
	// are copied, so that tc's keep their parent.
	for _, sub := range tc.Dependencies() {
		pc.AddDependency(copyTree(sub))
	}

	if o.Version != "" {
		if _, err := semver.StrictNewVersion(o.Version); err != nil {
			return nil, fmt.Errorf("version %q is not a semantic version (as helm package --version): %w", o.Version, err)
		}
		md.Version = o.Version
	} else {
		// The version names the content: the digest of the archive
		// written with the source chart's version.
		b, err := archiveBytes(pc, o.Time)
		if err != nil {
			return nil, err
		}
		md.Version = DefaultPackageVersion(o.Source.Metadata.Version, b)
	}
	// The schema's message names the version.
	pc.Schema = valuesSchema(md.Name, md.Version, o.Release, o.Namespace, subcharts)
	if err := pc.Validate(); err != nil {
		return nil, fmt.Errorf("packaged chart %s: %w", md.Name, err)
	}
	return pc, nil
}

// DefaultPackageVersion is the version of a packaged chart when none is
// given: the source chart's version with build metadata "inject." and the
// first 12 hex digits of the sha256 of archive (the chart written with the
// source chart's version), so that another content gets another version.
// An existing build metadata is kept in front: 1.0.0+abc gives
// 1.0.0+abc.inject.HEX. Helm writes the "+" as "_" in the OCI tag.
func DefaultPackageVersion(sourceVersion string, archive []byte) string {
	sum := sha256.Sum256(archive)
	suffix := "inject." + hex.EncodeToString(sum[:])[:12]
	if strings.Contains(sourceVersion, "+") {
		return sourceVersion + "." + suffix
	}
	return sourceVersion + "+" + suffix
}

// valuesSchema refuses every value: the schema's only allowed property
// name is a message, which helm prints when a value is set. Helm's
// coalescing gives each subchart a key of its own (an object holding at
// most "global"): those keys are allowed, and refuse any value under
// them with the same message.
func valuesSchema(name, version, release, namespace string, subcharts []string) []byte {
	msg := fmt.Sprintf("chart %s %s was rendered by helm-inject for release %s in namespace %s with its values baked in; it takes no values: "+
		"run helm-inject package again with the values you want", name, version, release, namespace)
	props := map[string]any{}
	for _, sub := range subcharts {
		props[sub] = map[string]any{
			"type":          "object",
			"propertyNames": map[string]any{"enum": []string{msg, "global"}},
			"properties":    map[string]any{"global": map[string]any{"type": "object", "propertyNames": map[string]any{"const": msg}}},
		}
	}
	schema := map[string]any{
		"$comment":      "written by helm-inject package: this chart's templates hold its values already",
		"type":          "object",
		"propertyNames": map[string]any{"enum": append([]string{msg}, subcharts...)},
		"properties":    props,
	}
	b, _ := json.MarshalIndent(schema, "", "  ")
	return append(b, '\n')
}

// guardTemplate fails a render for another release name or namespace than
// the chart was rendered for, and renders nothing otherwise.
func guardTemplate(release, namespace string) string {
	msg := fmt.Sprintf("this chart was rendered by helm-inject for release %s in namespace %s, and its objects carry that release's names: "+
		"install it as release %s in namespace %s, or run helm-inject package for the release you want (this is release %%s in namespace %%s)",
		release, namespace, release, namespace)
	return fmt.Sprintf("{{- /* written by helm-inject package: the manifests were rendered for one release */ -}}\n"+
		"{{- if or (ne .Release.Name %s) (ne .Release.Namespace %s) }}{{ fail (printf %s .Release.Name .Release.Namespace) }}{{ end -}}\n",
		strconv.Quote(release), strconv.Quote(namespace), strconv.Quote(msg))
}

// FilesDigest identifies a chart by its files: the sha256 of every file
// helm loaded (Chart.yaml, values, templates, subcharts' files), in name
// order, each as its name, its length and its bytes (a Chart.yaml as the
// metadata it holds, canonicalMetadata). A folder and the
// archive helm package makes of it give the same digest. A chart made in
// memory from manifests or a kustomization has no files: its templates
// and files count instead.
func FilesDigest(ch *chart.Chart) string {
	files := ch.Raw
	if len(files) == 0 {
		files = slices.Concat(ch.Templates, ch.Files)
	}
	files = slices.Clone(files)
	slices.SortFunc(files, func(a, b *common.File) int { return strings.Compare(a.Name, b.Name) })
	h := sha256.New()
	for _, f := range files {
		data := f.Data
		if path.Base(f.Name) == "Chart.yaml" {
			data = canonicalMetadata(data)
		}
		fmt.Fprintf(h, "%s\x00%d\x00", f.Name, len(data))
		h.Write(data)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// canonicalMetadata is a Chart.yaml as the JSON of the metadata it holds:
// helm package writes Chart.yaml anew from the metadata it read (other
// key order, quoting and white space), so its bytes differ from the
// folder's while the chart does not. A file that does not parse counts as
// its bytes.
func canonicalMetadata(data []byte) []byte {
	var md chart.Metadata
	if err := yaml.Unmarshal(data, &md); err != nil {
		return data
	}
	b, err := json.Marshal(&md)
	if err != nil {
		return data
	}
	return b
}

// ValuesDigest identifies values: the sha256 of their JSON, keys sorted.
func ValuesDigest(vals map[string]any) (string, error) {
	if vals == nil {
		vals = map[string]any{}
	}
	b, err := json.Marshal(vals)
	if err != nil {
		return "", fmt.Errorf("values: %w", err)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// SaveArchive writes ch as DIR/NAME-VERSION.tgz with helm's own writer,
// every file and the archive itself dated t (the Unix epoch when zero), so
// that the same chart gives the same bytes and the same OCI manifest.
func SaveArchive(ch *chart.Chart, dir string, t time.Time) (string, error) {
	t = archiveTime(t)
	dated := dateFiles(ch, t)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	// helm's Save writes in place: a failed write would leave a partial
	// archive under the final name, so it writes into a fresh folder and
	// renames.
	staging, err := os.MkdirTemp(dir, ".helm-inject-package-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(staging)
	written, err := chartutil.Save(dated, staging)
	if err != nil {
		return "", fmt.Errorf("writing chart %s: %w", ch.Name(), err)
	}
	if err := os.Chmod(written, 0o644); err != nil {
		return "", err
	}
	if err := os.Chtimes(written, t, t); err != nil {
		return "", err
	}
	out := filepath.Join(dir, filepath.Base(written))
	if err := os.Rename(written, out); err != nil {
		return "", err
	}
	return out, nil
}

// archiveBytes is what SaveArchive writes for ch.
func archiveBytes(ch *chart.Chart, t time.Time) ([]byte, error) {
	dir, err := os.MkdirTemp("", "helm-inject-package-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	p, err := SaveArchive(ch, dir, t)
	if err != nil {
		return nil, err
	}
	return os.ReadFile(p)
}

func archiveTime(t time.Time) time.Time {
	if t.IsZero() {
		// helm's writer dates a file with no time "now".
		return time.Unix(0, 0).UTC()
	}
	return t.UTC()
}

// copyTree is a copy of ch and its subcharts, each chart struct new (so
// that each has its own parent), their files shared.
func copyTree(ch *chart.Chart) *chart.Chart {
	c := *ch
	deps := make([]*chart.Chart, len(ch.Dependencies()))
	for i, sub := range ch.Dependencies() {
		deps[i] = copyTree(sub)
	}
	c.SetDependencies(deps...)
	return &c
}

// dateFiles is a copy of ch whose files, and its subcharts', all carry t.
func dateFiles(ch *chart.Chart, t time.Time) *chart.Chart {
	c := *ch
	c.ModTime, c.SchemaModTime = t, t
	date := func(files []*common.File) []*common.File {
		out := make([]*common.File, len(files))
		for i, f := range files {
			g := *f
			g.ModTime = t
			out[i] = &g
		}
		return out
	}
	c.Raw, c.Templates, c.Files = date(ch.Raw), date(ch.Templates), date(ch.Files)
	deps := make([]*chart.Chart, len(ch.Dependencies()))
	for i, sub := range ch.Dependencies() {
		deps[i] = dateFiles(sub, t)
	}
	c.SetDependencies(deps...)
	return &c
}
