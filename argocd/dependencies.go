package argocd

import (
	"fmt"
	"strings"

	"github.com/Masterminds/semver/v3"
	chart "helm.sh/helm/v4/pkg/chart/v2"

	"github.com/helm-inject/helm-inject/chartify"
	"github.com/helm-inject/helm-inject/internal/repofs"
)

// addDependencies adds to ch, the chart in the repository folder
// chartDir, each dependency Chart.yaml lists and charts/ lacks, as Argo
// CD's Helm source type runs `helm dependency build` for a chart whose
// dependencies are missing, but in memory and offline: a repo-server
// plugin reaches no network and writes nothing into the repository. A
// dependency whose repository is a file:// folder is loaded from that
// folder, relative to the chart as helm resolves it, through the
// repository's root (its version checked against the constraint); any
// other missing one is an error naming it. Vendored dependencies (in
// charts/, as folders or .tgz files) are used as they are.
func addDependencies(repo *repofs.Repo, chartDir string, ch *chart.Chart) error {
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
			return fmt.Errorf("the chart's dependency %s (%s) is not in its charts/ folder, and the plugin reaches no network: vendor it (helm dependency build, then commit charts/)", dep.Name, dep.Repository)
		}
		dir, err := resolve(repo, chartDir, "dependency "+dep.Name, folder)
		if err != nil {
			return err
		}
		sub, err := chartify.LoadChartFromRepo(repo, dir)
		if err != nil {
			return fmt.Errorf("dependency %s: %w", dep.Name, err)
		}
		if err := checkDependency(dep.Name, dep.Version, sub.Name(), sub.Metadata.Version); err != nil {
			return err
		}
		ch.AddDependency(sub)
		have[dep.Name] = true
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
