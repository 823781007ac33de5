package argocd

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/Masterminds/semver/v3"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
)

// BuildDependencies fills the charts/ folder of the application's chart
// with each dependency Chart.yaml lists and charts/ lacks, as Argo CD's
// Helm source type runs `helm dependency build` for a chart whose
// dependencies are missing, but offline: a repo-server plugin reaches no
// network. A dependency whose repository is a file:// folder inside the
// repository is packaged from that folder (its version checked against the
// constraint); any other missing one is an error naming it. Vendored
// dependencies (in charts/, as folders or .tgz files) are used as they
// are, and a packaged chart (.tgz) is left alone.
func (r *Request) BuildDependencies(appDir string) error {
	root, chart, err := r.chart(appDir)
	if err != nil {
		return fmt.Errorf("%s: %w", r.app(), err)
	}
	if fi, err := os.Stat(chart); err != nil || !fi.IsDir() {
		return nil
	}
	ch, err := loader.Load(chart)
	if err != nil {
		// template reports a chart that does not load.
		return nil
	}
	have := map[string]bool{}
	for _, d := range ch.Dependencies() {
		have[d.Name()] = true
	}
	for _, dep := range ch.Metadata.Dependencies {
		if have[dep.Name] {
			continue
		}
		folder, ok := strings.CutPrefix(dep.Repository, "file://")
		if !ok {
			return fmt.Errorf("%s: the chart's dependency %s (%s) is not in its charts/ folder, and the plugin reaches no network: vendor it (helm dependency build, then commit charts/)", r.app(), dep.Name, dep.Repository)
		}
		real, err := inRepo(root, chart, "dependency "+dep.Name, folder)
		if err != nil {
			return fmt.Errorf("%s: %w", r.app(), err)
		}
		sub, err := loader.Load(real)
		if err != nil {
			return fmt.Errorf("%s: dependency %s: %w", r.app(), dep.Name, err)
		}
		if err := checkDependency(dep.Name, dep.Version, sub.Name(), sub.Metadata.Version); err != nil {
			return fmt.Errorf("%s: %w", r.app(), err)
		}
		if _, err := chartutil.Save(sub, filepath.Join(chart, "charts")); err != nil {
			return fmt.Errorf("%s: dependency %s: %w", r.app(), dep.Name, err)
		}
	}
	return nil
}

// checkDependency refuses a dependency folder whose chart is not the one
// Chart.yaml asks for, as helm dependency build does.
func checkDependency(name, constraint, gotName, gotVersion string) error {
	if gotName != name {
		return fmt.Errorf("dependency %s: the folder holds the chart %s", name, gotName)
	}
	if constraint == "" {
		return nil
	}
	c, err := semver.NewConstraint(constraint)
	if err != nil {
		return fmt.Errorf("dependency %s: version %q: %w", name, constraint, err)
	}
	v, err := semver.NewVersion(gotVersion)
	if err != nil || !c.Check(v) {
		return fmt.Errorf("dependency %s: the folder holds version %s, which is not %s", name, gotVersion, constraint)
	}
	return nil
}
