package release

import (
	"context"
	"fmt"
	"time"

	chart "helm.sh/helm/v4/pkg/chart/v2"

	"github.com/helm-inject/helm-inject/chartify"
)

// Package renders and injects a release as Template does, and writes the
// temporary chart as a chart to publish (chartify.PackageChart): an
// archive that helm, Argo CD and Flux install with no plugin, for this
// release name and namespace only.
type Package struct {
	Template
	// Destination is the folder the archive is written to.
	Destination string
	// Version is the packaged chart's version; empty for
	// chartify.DefaultPackageVersion.
	Version string
	// Time dates the archive's files (SOURCE_DATE_EPOCH); zero is the
	// Unix epoch.
	Time time.Time
}

// Run writes the archive and returns its path and the chart in it.
func (p *Package) Run(ctx context.Context, name string, src Source, vals map[string]any) (string, *chart.Chart, error) {
	tc, _, err := p.build(ctx, name, src, vals)
	if err != nil {
		return "", nil, err
	}
	pc, err := chartify.PackageChart(tc, chartify.PackageOptions{
		Release: name, Namespace: p.Namespace, Source: src.Chart, Values: vals, Version: p.Version, Time: p.Time,
	})
	if err != nil {
		return "", nil, fmt.Errorf("release %q: %w", name, err)
	}
	path, err := chartify.SaveArchive(pc, p.Destination, p.Time)
	if err != nil {
		return "", nil, fmt.Errorf("release %q: %w", name, err)
	}
	return path, pc, nil
}
