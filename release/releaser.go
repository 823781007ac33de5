package release

import (
	"fmt"

	hrelease "helm.sh/helm/v4/pkg/release"
	release "helm.sh/helm/v4/pkg/release/v1"
)

// V1Release is the one place where helm 4's SDK answers (a Releaser, any
// release format) become the helm.sh/release.v1 records helm-inject reads
// and writes: the format helm 3 and helm 4 both store. A nil answer (an
// action that failed before making a release) is nil.
func V1Release(r hrelease.Releaser) (*release.Release, error) {
	switch rel := r.(type) {
	case nil:
		return nil, nil
	case *release.Release:
		return rel, nil
	case release.Release:
		return &rel, nil
	}
	return nil, fmt.Errorf("the Helm SDK returned a release of type %T, not a helm.sh/release.v1 release", r)
}

// V1Releases is V1Release for a list.
func V1Releases(rs []hrelease.Releaser) ([]*release.Release, error) {
	out := make([]*release.Release, 0, len(rs))
	for _, r := range rs {
		rel, err := V1Release(r)
		if err != nil {
			return nil, err
		}
		if rel != nil {
			out = append(out, rel)
		}
	}
	return out, nil
}
