package release

import (
	"fmt"

	"github.com/Masterminds/semver/v3"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/release"
)

// ValuesMode is how an upgrade treats the previous revision's values; the
// modes are Helm's --reset-values, --reuse-values and
// --reset-then-reuse-values.
type ValuesMode int

const (
	// ValuesDefault reuses the previous values only when no new ones are
	// given (Helm's default).
	ValuesDefault ValuesMode = iota
	ValuesReset
	ValuesReuse
	ValuesResetThenReuse
)

// upgradeValues computes the values the source chart is rendered with on an
// upgrade, with the same rules as Helm's Upgrade.reuseValues, so that the
// rendered manifests match what `helm upgrade` would render.
func upgradeValues(mode ValuesMode, src *chart.Chart, current *release.Release, newVals map[string]any) (map[string]any, error) {
	switch mode {
	case ValuesReset:
		return newVals, nil
	case ValuesReuse:
		oldVals, err := chartutil.CoalesceValues(current.Chart, current.Config)
		if err != nil {
			return nil, fmt.Errorf("rebuilding the values of revision %d: %w", current.Version, err)
		}
		src.Values = oldVals
		return chartutil.CoalesceTables(copyValues(newVals), current.Config), nil
	case ValuesResetThenReuse:
		return chartutil.CoalesceTables(copyValues(newVals), current.Config), nil
	}
	if len(newVals) == 0 && len(current.Config) > 0 {
		return current.Config, nil
	}
	return newVals, nil
}

// copyValues deep-copies a values tree, so merging into the copy leaves the
// user's values (later stored as the release config) untouched.
func copyValues(v map[string]any) map[string]any {
	out := make(map[string]any, len(v))
	for k, x := range v {
		out[k] = copyValue(x)
	}
	return out
}

func copyValue(x any) any {
	switch t := x.(type) {
	case map[string]any:
		return copyValues(t)
	case []any:
		l := make([]any, len(t))
		for i, e := range t {
			l[i] = copyValue(e)
		}
		return l
	default:
		return x
	}
}

// mustSemverLess compares two versions that the library already validated.
func mustSemverLess(a, b string) bool {
	va, err1 := semver.NewVersion(a)
	vb, err2 := semver.NewVersion(b)
	return err1 == nil && err2 == nil && va.LessThan(vb)
}
