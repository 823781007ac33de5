package release

import (
	"fmt"

	"github.com/Masterminds/semver/v3"
	commonutil "helm.sh/helm/v4/pkg/chart/common/util"

	release "helm.sh/helm/v4/pkg/release/v1"
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

// upgradeValues is, by the rules of Helm's Upgrade.reuseValues, what an
// upgrade renders with and stores as the release config (vals), and, for
// --reuse-values, the chart defaults to render with instead of the chart's
// own (the previous revision's values, coalesced). Diff, apply and the
// unchanged check all use it, so they agree with what `helm upgrade`
// would render and store. It changes nothing it is given.
func upgradeValues(mode ValuesMode, current *release.Release, newVals map[string]any) (vals, chartDefaults map[string]any, err error) {
	switch mode {
	case ValuesReset:
		return newVals, nil, nil
	case ValuesReuse:
		oldVals, err := commonutil.CoalesceValues(current.Chart, current.Config)
		if err != nil {
			return nil, nil, fmt.Errorf("rebuilding the values of revision %d: %w", current.Version, err)
		}
		return commonutil.CoalesceTables(copyValues(newVals), current.Config), oldVals, nil
	case ValuesResetThenReuse:
		return commonutil.CoalesceTables(copyValues(newVals), current.Config), nil, nil
	}
	if len(newVals) == 0 && len(current.Config) > 0 {
		return current.Config, nil, nil
	}
	return newVals, nil, nil
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
