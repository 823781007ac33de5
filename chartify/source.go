// Package chartify turns what a user names as a chart (a chart folder, a
// packaged .tgz, repo/chart, a --repo URL, an oci:// reference, a folder of
// plain manifests or a kustomization) into a Helm chart, renders it with
// Helm's semantics, and builds the temporary chart that holds the injected
// manifests and is installed as the release.
package chartify

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/action"
	helmchart "helm.sh/helm/v4/pkg/chart"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/cli"
	"helm.sh/helm/v4/pkg/registry"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// SourceKind says what a chart reference pointed at.
type SourceKind string

const (
	// SourceChart is a Helm chart: folder, .tgz, repo/chart, --repo or OCI.
	SourceChart SourceKind = "chart"
	// SourceManifests is a folder of plain YAML manifests.
	SourceManifests SourceKind = "manifests"
	// SourceKustomize is a folder with a kustomization file.
	SourceKustomize SourceKind = "kustomize"
)

// LoadOptions say where to look for a chart that is not a local path.
type LoadOptions struct {
	// PathOptions holds --version, --repo, credentials and TLS settings.
	PathOptions action.ChartPathOptions
	// Devel accepts pre-release versions when no --version is given.
	Devel    bool
	Settings *cli.EnvSettings
	// RegistryClient is required for oci:// references.
	RegistryClient *registry.Client
	// UpdateDependencies, when set, is called for a chart folder whose
	// dependencies are missing, before it is loaded again (helm's
	// --dependency-update).
	UpdateDependencies func(chartDir string) error
}

// Load resolves ref and loads it as a chart.
func Load(ref string, o LoadOptions) (*chart.Chart, SourceKind, error) {
	if fi, err := os.Stat(ref); err == nil && fi.IsDir() {
		if o.PathOptions.Verify {
			// As helm: a provenance file signs a packaged archive only.
			return nil, "", fmt.Errorf("chart %s: --verify: unpacked charts cannot be verified; verify a packaged chart (helm package --sign makes its .prov file)", ref)
		}
		switch {
		case exists(filepath.Join(ref, "Chart.yaml")):
			ch, err := loadChart(ref)
			var missing missingDependencies
			if errors.As(err, &missing) && o.UpdateDependencies != nil {
				if err := o.UpdateDependencies(ref); err != nil {
					return nil, "", fmt.Errorf("chart %s: updating its dependencies: %w", ref, err)
				}
				ch, err = loadChart(ref)
			}
			return ch, SourceChart, err
		case kustomizationFile(ref) != "":
			ch, err := loadKustomization(ref)
			return ch, SourceKustomize, err
		default:
			ch, err := loadManifests(ref)
			return ch, SourceManifests, err
		}
	}
	if registry.IsOCI(ref) && o.RegistryClient == nil {
		return nil, "", fmt.Errorf("chart %s: an OCI reference needs a registry client", ref)
	}
	po := o.PathOptions
	if o.Devel && po.Version == "" {
		po.Version = ">0.0.0-0"
	}
	settings := o.Settings
	if settings == nil {
		settings = cli.New()
	}
	// LocateChart reads the client from Install's embedded options only, so
	// go through an Install to hand it over.
	inst := action.NewInstall(&action.Configuration{RegistryClient: o.RegistryClient})
	inst.ChartPathOptions = po
	inst.SetRegistryClient(o.RegistryClient)
	path, err := inst.ChartPathOptions.LocateChart(ref, settings)
	if err != nil {
		if msg, ok := missingLocalChart(ref); ok && po.RepoURL == "" && !exists(ref) {
			// Helm would say "repo X not found" for a mistyped path.
			return nil, "", fmt.Errorf("chart %s: %s", ref, msg)
		}
		if name, _, ok := strings.Cut(ref, "/"); ok && po.RepoURL == "" && strings.Contains(err.Error(), "repo "+name+" not found") {
			return nil, "", fmt.Errorf("chart %s: no repository named %q is added (helm repo list shows those that are); add it with helm repo add %s URL, or give the chart's folder, .tgz or oci:// reference", ref, name, name)
		}
		return nil, "", fmt.Errorf("chart %s: %w", ref, err)
	}
	ch, err := loadChart(path)
	return ch, SourceChart, err
}

func loadChart(path string) (*chart.Chart, error) {
	var ch *chart.Chart
	var err error
	if fi, statErr := os.Stat(path); statErr == nil && fi.IsDir() {
		ch, err = loadDir(path, archive.MaxDecompressedChartSize)
	} else {
		ch, err = loader.Load(path)
	}
	if err != nil {
		return nil, fmt.Errorf("loading chart %s: %w", path, err)
	}
	return checkChart(ch, path)
}

// checkChart refuses what helm install refuses of a loaded chart: an
// apiVersion it does not install, a library chart, a dependency missing
// from charts/ (path names the chart in messages).
func checkChart(ch *chart.Chart, path string) (*chart.Chart, error) {
	if v := ch.Metadata.APIVersion; v != chart.APIVersionV1 && v != chart.APIVersionV2 {
		// helm 4.3.2 refuses apiVersion v3 charts for install too.
		return nil, fmt.Errorf("chart %s has apiVersion %q: helm-inject installs apiVersion v1 and v2 charts only, as helm 4 does", path, v)
	}
	if ch.Metadata.Type == "library" {
		return nil, fmt.Errorf("chart %s is a library chart and cannot be installed", path)
	}
	if deps := ch.Metadata.Dependencies; len(deps) > 0 {
		reqs := make([]helmchart.Dependency, len(deps))
		for i, d := range deps {
			reqs[i] = d
		}
		if err := action.CheckDependencies(ch, reqs); err != nil {
			return nil, missingDependencies{fmt.Errorf("chart %s: %w (run `helm dependency build %s`, or pass --dependency-update)", path, err, path)}
		}
	}
	return ch, nil
}

// missingDependencies is a chart folder whose charts/ lacks a dependency.
type missingDependencies struct{ error }

func (m missingDependencies) Unwrap() error { return m.error }

// missingLocalChart explains a reference that could not be found when it
// is meant as a path (never a URL): it starts with ".", "/" or "~", ends in .tgz, or its
// first segment is an existing folder (then it might also have been meant
// as REPO/CHART, which the message says).
func missingLocalChart(ref string) (string, bool) {
	const msg = "no such chart directory or archive"
	if strings.Contains(ref, "://") {
		return "", false // a URL: the download's own error says what failed
	}
	if strings.HasPrefix(ref, ".") || strings.HasPrefix(ref, "/") || strings.HasPrefix(ref, "~") || strings.HasSuffix(ref, ".tgz") {
		return msg, true
	}
	first, _, ok := strings.Cut(ref, "/")
	if fi, err := os.Stat(first); !ok || err != nil || !fi.IsDir() {
		return "", false
	}
	return fmt.Sprintf("%s (and %q is not a repository added with helm repo add)", msg, first), true
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

func kustomizationFile(dir string) string {
	for _, n := range []string{"kustomization.yaml", "kustomization.yml", "Kustomization"} {
		if exists(filepath.Join(dir, n)) {
			return n
		}
	}
	return ""
}

var invalidNameChars = regexp.MustCompile(`[^a-z0-9-]+`)

// generatedChart is the chart that wraps plain manifests or a kustomize
// build; it is named after the folder.
func generatedChart(dir, kind string) (*chart.Chart, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	return namedChart(filepath.Base(abs), dir, kind), nil
}

// namedChart is the chart that wraps plain manifests or a kustomize build
// of the folder shown, named after base (the folder's name).
func namedChart(base, shown, kind string) *chart.Chart {
	name := strings.Trim(invalidNameChars.ReplaceAllString(strings.ToLower(base), "-"), "-")
	if name == "" {
		name = "manifests"
	}
	return &chart.Chart{Metadata: &chart.Metadata{
		APIVersion:  chart.APIVersionV2,
		Name:        name,
		Version:     "0.0.0",
		Description: fmt.Sprintf("%s from %s, wrapped by helm-inject", kind, shown),
		Type:        "application",
	}}
}

// loadManifests wraps every .yaml, .yml and .json file below dir (sorted,
// hidden folders skipped) as a template, escaped so it renders unchanged.
func loadManifests(dir string) (*chart.Chart, error) {
	ch, err := generatedChart(dir, "plain manifests")
	if err != nil {
		return nil, err
	}
	var paths []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != dir && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		switch strings.ToLower(filepath.Ext(p)) {
		case ".yaml", ".yml", ".json":
			if !d.IsDir() {
				paths = append(paths, p)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading manifests in %s: %w", dir, err)
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("%s is neither a chart (no Chart.yaml), a kustomization nor a folder of .yaml manifests", dir)
	}
	slices.Sort(paths)
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("reading manifests in %s: %w", dir, err)
		}
		rel, _ := filepath.Rel(dir, p)
		name := "templates/" + strings.TrimPrefix(filepath.ToSlash(rel), "_")
		if ext := filepath.Ext(name); ext != ".yaml" && ext != ".yml" {
			name += ".yaml"
		}
		ch.Templates = append(ch.Templates, &common.File{Name: name, Data: []byte(Escape(string(data)))})
	}
	return ch, nil
}

// loadKustomization builds dir with the kustomize API (what `kustomize
// build` runs) and wraps each resulting resource as a template.
func loadKustomization(dir string) (*chart.Chart, error) {
	ch, err := generatedChart(dir, "kustomization")
	if err != nil {
		return nil, err
	}
	return ch, kustomizeInto(ch, filesys.MakeFsOnDisk(), dir, dir)
}

// kustomizeInto builds the kustomization in dir of fsys (offline for a
// repository's, see kustomize) and adds each resulting resource to ch as
// a template; shown names dir in messages.
func kustomizeInto(ch *chart.Chart, fsys filesys.FileSystem, dir, shown string) error {
	resources, err := kustomize(fsys, dir)
	if err != nil {
		return fmt.Errorf("kustomize build %s: %w", shown, err)
	}
	for i, r := range resources.Resources() {
		y, err := r.AsYAML()
		if err != nil {
			return fmt.Errorf("kustomize build %s: %w", shown, err)
		}
		name := fmt.Sprintf("templates/%03d-%s-%s.yaml", i, strings.ToLower(r.GetKind()), invalidNameChars.ReplaceAllString(strings.ToLower(r.GetName()), "-"))
		ch.Templates = append(ch.Templates, &common.File{Name: name, Data: []byte(Escape(string(y)))})
	}
	if len(ch.Templates) == 0 {
		return errors.New("kustomize build " + shown + " produced no resources")
	}
	return nil
}
