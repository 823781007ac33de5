package chartify

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"

	"sigs.k8s.io/yaml"

	"github.com/helm-inject/helm-inject/manifest"
)

// Annotations written into the temporary chart's Chart.yaml, and so into
// every release revision.
const (
	// AnnotationSource is the chart reference the user gave.
	AnnotationSource = "helm-inject.io/source"
	// AnnotationRendered is a digest of the rendered manifests before
	// injection; the with-chart reconcile strategy compares it.
	AnnotationRendered = "helm-inject.io/rendered-digest"
)

// TempChartOptions describe what the temporary chart records.
type TempChartOptions struct {
	// Source is the chart reference as the user gave it.
	Source string
	// Annotations are added to Chart.yaml (the injector records).
	Annotations map[string]string
	// RenderedDigest is recorded as AnnotationRendered when set.
	RenderedDigest string
}

// BuildTempChart assembles the chart that is installed as the release: the
// source chart's metadata and default values, the (injected) documents as
// escaped templates, the rendered notes, and every CRD of the chart and its
// subcharts once. Rendering it reproduces docs byte for byte.
func BuildTempChart(r *Rendered, docs []manifest.Document, o TempChartOptions) (*chart.Chart, error) {
	src := r.Chart
	md := *src.Metadata
	md.APIVersion = chart.APIVersionV2
	md.Dependencies = nil
	md.Annotations = make(map[string]string, len(src.Metadata.Annotations)+2)
	for k, v := range src.Metadata.Annotations {
		md.Annotations[k] = v
	}
	if o.Source != "" {
		md.Annotations[AnnotationSource] = o.Source
	}
	if o.RenderedDigest != "" {
		md.Annotations[AnnotationRendered] = o.RenderedDigest
	}
	for k, v := range o.Annotations {
		md.Annotations[k] = v
	}
	// The defaults are read again from values.yaml, as loading the chart
	// would: rendering may have changed the source chart's values in
	// memory (Helm's dependency processing does), and the release must
	// store the chart's own.
	tc := &chart.Chart{Metadata: &md}
	for _, f := range src.Raw {
		if f.Name == "values.yaml" {
			tc.Raw = append(tc.Raw, f)
			vals, err := common.ReadValues(f.Data)
			if err != nil {
				return nil, fmt.Errorf("reading %s's values.yaml: %w", src.Name(), err)
			}
			tc.Values = vals
		}
	}

	// One template file per source template, at the path it has in the
	// source chart (a subchart's under charts/NAME/ of a subchart of the
	// same name), documents in their order, each followed by the white
	// space Helm kept after it (its Trailer), so that Helm renders them
	// back to the same bytes (templateFile) under the same "# Source:".
	files := map[string][]manifest.Document{}
	var order []string
	for _, d := range docs {
		name, err := tempChartFile(src.Name(), d.Source)
		if err != nil {
			return nil, err
		}
		if _, ok := files[name]; !ok {
			order = append(order, name)
		}
		files[name] = append(files[name], d)
	}
	subcharts := map[string]*chart.Chart{"": tc}
	for _, name := range order {
		at, file := subchartOf(name)
		owner, err := mirrorSubchart(subcharts, src, at)
		if err != nil {
			return nil, err
		}
		owner.Templates = append(owner.Templates, &common.File{Name: file, Data: templateFile(files[name])})
	}
	if r.Notes != "" {
		tc.Templates = append(tc.Templates, &common.File{Name: "templates/NOTES.txt", Data: []byte(Escape(r.Notes))})
	}

	crds, err := flattenCRDs(src)
	if err != nil {
		return nil, err
	}
	tc.Files = append(tc.Files, crds...)
	// In the order Helm's loader reads them back from disk, so the chart
	// in memory installs its CRDs in the order the written one does.
	byName := func(a, b *common.File) int { return strings.Compare(a.Name, b.Name) }
	for _, c := range subcharts {
		slices.SortFunc(c.Templates, byName)
		deps := c.Dependencies()
		slices.SortFunc(deps, func(a, b *chart.Chart) int { return strings.Compare(a.Name(), b.Name()) })
		c.SetDependencies(deps...)
	}
	slices.SortFunc(tc.Files, byName)
	if err := tc.Validate(); err != nil {
		return nil, fmt.Errorf("temporary chart for %s: %w", src.Name(), err)
	}
	return tc, nil
}

// RenderTempChart returns what Helm's render of tc gives back, without
// rendering it: tc is BuildTempChart(r, docs, ...), whose templates hold
// docs escaped, one file per source template at its source path, so its
// render is docs unescaped, under the same "# Source:" paths (tc has the
// source chart's name), in Helm's order again.
// TestRenderTempChartMatchesHelm holds it to a real render; it is what
// lets `template` print what apply installs without rendering twice.
func RenderTempChart(tc *chart.Chart, r *Rendered, docs []manifest.Document) (*Rendered, error) {
	out := make([]manifest.Document, len(docs))
	for i, d := range docs {
		name, err := tempChartFile(r.Chart.Name(), d.Source)
		if err != nil {
			return nil, err
		}
		d.Source = tc.Name() + "/" + name
		out[i] = d
	}
	// A file of the temporary chart holds its documents in docs' order.
	slices.SortStableFunc(out, func(a, b manifest.Document) int { return strings.Compare(a.Source, b.Source) })
	return &Rendered{Chart: tc, Documents: installOrdered(out), Notes: r.Notes}, nil
}

// tempChartFile maps a rendered file of chart, or of one of its
// subcharts, to the file of the temporary chart that renders to it: the
// same path, so that "# Source:" lines, --show-only and the stored
// manifest read as with plain Helm:
//
//	webapp/templates/web.yaml             -> templates/web.yaml
//	webapp/charts/cache/templates/x.yaml  -> charts/cache/templates/x.yaml
//
// A path that is no chart's template (a post-renderer's own "# Source:")
// goes under the top chart's templates/.
func tempChartFile(chartName, source string) (string, error) {
	rest, ok := strings.CutPrefix(source, chartName+"/")
	if !ok {
		return "", fmt.Errorf("rendered file %q is outside chart %s", source, chartName)
	}
	at, file := subchartOf(rest)
	if !strings.HasPrefix(file, "templates/") {
		rest = "templates/" + rest
	}
	clean := path.Clean(rest)
	if clean != rest || !filepath.IsLocal(filepath.FromSlash(clean)) {
		return "", fmt.Errorf("rendered file %q does not map to a safe path in the temporary chart", source)
	}
	at, file = subchartOf(clean)
	// Helm treats files starting with "_" as partials and never renders them.
	if base := path.Base(file); strings.HasPrefix(base, "_") {
		clean = path.Join(at, path.Dir(file), "u"+base)
	}
	return clean, nil
}

// subchartOf splits a file of a chart into the subchart that holds it
// ("" for the chart itself, else "charts/a" or "charts/a/charts/b") and
// its path in that subchart.
func subchartOf(name string) (at, file string) {
	file = name
	for {
		sub, ok := strings.CutPrefix(file, "charts/")
		i := strings.Index(sub, "/")
		if !ok || i <= 0 {
			return strings.TrimSuffix(at, "/"), file
		}
		at += "charts/" + sub[:i] + "/"
		file = sub[i+1:]
	}
}

// mirrorSubchart returns the subchart of the temporary chart at path at
// ("charts/a/charts/b"), creating it and its parents as needed in
// subcharts (which maps each path made so far to its chart, "" to the
// top). A subchart takes the metadata of the source chart's subchart of
// that name, as rendering left it (aliases applied), with no dependencies
// of its own declared: every subchart in the temporary chart rendered,
// and none is disabled or imported from again by a condition.
func mirrorSubchart(subcharts map[string]*chart.Chart, src *chart.Chart, at string) (*chart.Chart, error) {
	if c, ok := subcharts[at]; ok {
		return c, nil
	}
	parentAt, name := "", at
	if i := strings.LastIndex(at, "/charts/"); i >= 0 {
		parentAt, name = at[:i], at[i+len("/charts/"):]
	} else {
		name = strings.TrimPrefix(at, "charts/")
	}
	parent, err := mirrorSubchart(subcharts, src, parentAt)
	if err != nil {
		return nil, err
	}
	md := &chart.Metadata{APIVersion: chart.APIVersionV2, Name: name, Version: "0.0.0"}
	if s := sourceSubchart(src, at); s != nil && s.Metadata != nil {
		copied := *s.Metadata
		copied.APIVersion = chart.APIVersionV2
		copied.Dependencies = nil
		copied.Name = name
		if copied.Type == "library" {
			copied.Type = "" // its rendered documents install
		}
		md = &copied
	}
	c := &chart.Chart{Metadata: md}
	parent.AddDependency(c)
	subcharts[at] = c
	return c, nil
}

// sourceSubchart is the subchart of src at path at ("charts/a/charts/b"),
// or nil.
func sourceSubchart(src *chart.Chart, at string) *chart.Chart {
	c := src
	for _, part := range strings.Split(at, "/") {
		if part == "charts" {
			continue
		}
		var next *chart.Chart
		for _, d := range c.Dependencies() {
			if d.Name() == part {
				next = d
			}
		}
		if next == nil {
			return nil
		}
		c = next
	}
	return c
}

// flatten maps a CRD file of chart or one of its subcharts to a file of
// the temporary chart's own crds/ folder (Helm installs every chart's
// CRDs alike; they are gathered once, see flattenCRDs):
//
//	webapp/crds/c.yaml              -> crds/c.yaml
//	webapp/charts/cache/crds/c.yaml -> crds/charts/cache/c.yaml
func flatten(chartName, source, dir string) (string, error) {
	rest, ok := strings.CutPrefix(source, chartName+"/")
	if !ok {
		return "", fmt.Errorf("rendered file %q is outside chart %s", source, chartName)
	}
	if !strings.HasPrefix(rest, dir+"/") {
		if i := strings.LastIndex(rest, "/"+dir+"/"); i >= 0 {
			rest = rest[:i] + rest[i+len(dir)+1:]
		}
		rest = dir + "/" + rest
	}
	clean := path.Clean(rest)
	if clean != rest || !filepath.IsLocal(filepath.FromSlash(clean)) || !strings.HasPrefix(clean, dir+"/") {
		return "", fmt.Errorf("rendered file %q does not map to a safe path in the temporary chart", source)
	}
	return clean, nil
}

// templateFile is the temporary chart's template for docs of one source
// file: Helm 4 renders it back to the same documents, each with its
// Trailer. A document whose trailer does not end a line (the last of its
// file, after "{{- end -}}") must end the file, or the next separator
// would not start a line: it goes last, which changes nothing of the
// order Helm installs and prints in, since it was the last of its kind in
// its file and Helm's sort by kind is stable. Any other such document
// gets a line end.
func templateFile(docs []manifest.Document) []byte {
	last := len(docs) - 1
	size := 0
	for i, d := range docs {
		if !strings.HasSuffix(d.Trailer, "\n") {
			last = i
		}
		size += len("---\n") + len(d.Content) + len(d.Trailer) + len("\n")
	}
	// Sized once (escapes aside), and handed over without a copy.
	b := bytes.NewBuffer(make([]byte, 0, size))
	write := func(d manifest.Document, end bool) {
		b.WriteString("---\n")
		b.WriteString(Escape(d.Content))
		b.WriteString(d.Trailer)
		if end && !strings.HasSuffix(d.Trailer, "\n") {
			b.WriteString("\n")
		}
	}
	for i, d := range docs {
		if i != last {
			write(d, true)
		}
	}
	write(docs[last], false)
	return b.Bytes()
}

// flattenCRDs collects the CRDs of the chart and all its subcharts, keeping
// the first definition of each CRD name.
func flattenCRDs(src *chart.Chart) ([]*common.File, error) {
	seen := map[string]bool{}
	var out []*common.File
	for _, crd := range src.CRDObjects() {
		var kept []string
		for _, doc := range manifest.Split(string(crd.File.Data)) {
			d, err := manifest.Parse(crd.Filename, doc)
			if err != nil {
				return nil, fmt.Errorf("CRD file %s: %w", crd.Filename, err)
			}
			if seen[d.ID.Name] {
				continue
			}
			seen[d.ID.Name] = true
			kept = append(kept, doc)
		}
		if len(kept) == 0 {
			continue
		}
		name, err := flatten(src.Name(), crd.Filename, "crds")
		if err != nil {
			return nil, err
		}
		out = append(out, &common.File{Name: name, Data: []byte(strings.Join(kept, "\n---\n") + "\n")})
	}
	return out, nil
}

// WriteChart writes ch as a chart folder into dir (which must exist or be
// creatable), with private permissions: folders 0700, files 0600.
func WriteChart(ch *chart.Chart, dir string) error {
	md, err := json.Marshal(ch.Metadata)
	if err != nil {
		return err
	}
	chartYAML, err := jsonToYAML(md)
	if err != nil {
		return err
	}
	files := []*common.File{{Name: "Chart.yaml", Data: chartYAML}}
	files = append(files, ch.Raw...)
	files = append(files, ch.Templates...)
	files = append(files, ch.Files...)
	for _, sub := range ch.Dependencies() {
		if !filepath.IsLocal(sub.Name()) || strings.ContainsAny(sub.Name(), `/\`) {
			return fmt.Errorf("temporary chart's subchart %q would escape %s", sub.Name(), dir)
		}
		if err := WriteChart(sub, filepath.Join(dir, "charts", sub.Name())); err != nil {
			return err
		}
	}
	for _, f := range files {
		if !filepath.IsLocal(filepath.FromSlash(f.Name)) {
			return fmt.Errorf("temporary chart file %q would escape %s", f.Name, dir)
		}
		p := filepath.Join(dir, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.Data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// LoadWritten loads a chart written by WriteChart (a --keep-chart folder)
// as helm would load it.
func LoadWritten(dir string) (*chart.Chart, error) {
	ch, err := loader.LoadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("loading the temporary chart in %s: %w", dir, err)
	}
	return ch, nil
}

func jsonToYAML(j []byte) ([]byte, error) {
	y, err := yaml.JSONToYAML(j)
	if err != nil {
		return nil, fmt.Errorf("writing Chart.yaml: %w", err)
	}
	return y, nil
}

// keptChartMarker marks a folder that WriteKeptChart wrote, and lists the
// files it wrote there, so that the next --keep-chart run may replace it;
// .helmignore keeps it out of the chart when helm loads the folder.
const (
	keptChartMarker = ".helm-inject-kept-chart"
	keptChartIgnore = ".helmignore"
	keptChartHeader = "# Written by helm-inject --keep-chart; the next run with this folder replaces it whole. Its files:\n"
)

// WriteKeptChart writes ch into dir for --keep-chart. The chart is written
// into a new private folder beside dir (0700, files 0600, nothing in it
// that another user could have placed or linked) and renamed into place,
// so no write follows a link and the result is private whatever dir was.
// dir must be absent, an empty folder (replaced, its mode with it), or a
// folder WriteKeptChart wrote before and that holds only the files its
// marker lists (replaced whole, so no stale template survives). Anything
// else, a link included, is refused and left as it is: a planted marker
// does not make a folder of someone else's go away.
func WriteKeptChart(ch *chart.Chart, dir string) error {
	fail := func(err error) error { return fmt.Errorf("--keep-chart %s: %w", dir, err) }
	dir = filepath.Clean(dir)
	replace, err := keptChartReplaceable(dir)
	if err != nil {
		return fail(err)
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return fail(err)
	}
	staging, err := os.MkdirTemp(parent, ".helm-inject-keep-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(staging)
	if err := WriteChart(ch, staging); err != nil {
		return fail(err)
	}
	var files []string
	err = filepath.WalkDir(staging, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(staging, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		return fail(err)
	}
	slices.Sort(files)
	marker := keptChartHeader + strings.Join(files, "\n") + "\n"
	if err := os.WriteFile(filepath.Join(staging, keptChartMarker), []byte(marker), 0o600); err != nil {
		return fail(err)
	}
	if err := os.WriteFile(filepath.Join(staging, keptChartIgnore), []byte(keptChartMarker+"\n"), 0o600); err != nil {
		return fail(err)
	}
	switch replace {
	case keptBefore:
		old := staging + ".old"
		if err := os.Rename(dir, old); err != nil {
			return fail(err)
		}
		defer os.RemoveAll(old)
	case keptEmpty:
		// Fails if the folder gained a file since it was checked.
		if err := os.Remove(dir); err != nil {
			return fail(err)
		}
	}
	// Fails if a folder took the name meanwhile; a link there is replaced,
	// not followed.
	if err := os.Rename(staging, dir); err != nil {
		return fail(err)
	}
	return nil
}

// What --keep-chart finds where it is to write.
type keptTarget int

const (
	keptAbsent keptTarget = iota
	keptEmpty
	keptBefore
)

// keptChartReplaceable checks that dir may be written by WriteKeptChart,
// and says what is there: nothing, an empty folder or a chart kept before.
func keptChartReplaceable(dir string) (keptTarget, error) {
	fi, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return keptAbsent, nil
	case err != nil:
		return 0, err
	case fi.Mode()&fs.ModeSymlink != 0:
		return 0, errors.New("it is a symbolic link; name a new or empty folder")
	case !fi.IsDir():
		return 0, errors.New("it is not a folder")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	if len(entries) == 0 {
		return keptEmpty, nil
	}
	notOurs := errors.New("the folder is not empty and was not written by --keep-chart; name a new or empty folder")
	b, err := os.ReadFile(filepath.Join(dir, keptChartMarker))
	if err != nil || !strings.HasPrefix(string(b), keptChartHeader) {
		return 0, notOurs
	}
	listed := map[string]bool{keptChartMarker: true, keptChartIgnore: true}
	for _, f := range strings.Split(strings.TrimPrefix(string(b), keptChartHeader), "\n") {
		listed[f] = true
	}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if !d.Type().IsRegular() || !listed[filepath.ToSlash(rel)] {
			return fmt.Errorf("the folder holds %s, which --keep-chart did not write; name a new or empty folder", rel)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return keptBefore, nil
}
