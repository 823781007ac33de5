package release

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"

	"helm.sh/helm/v4/pkg/action"
	release "helm.sh/helm/v4/pkg/release/v1"

	"github.com/helm-inject/helm-inject/inject"
)

// List finds every release that helm-inject manages.
type List struct {
	cfg           *action.Configuration
	AllNamespaces bool
	Library       *inject.Library
	// Live, when set, adds what runs in the cluster to every release.
	Live *Live
	// Explain, when set, rewrites the error of a release that cannot be
	// read before it is recorded in the release's Error (the command line
	// explains a permission the cluster refused).
	Explain func(error) error
	// connect makes the live view's clients; newLiveClients when nil
	// (tests give in-memory ones).
	connect func(*action.Configuration) (liveClients, error)
}

// NewList returns a List bound to a Helm configuration.
func NewList(cfg *action.Configuration) *List { return &List{cfg: cfg} }

// Run lists the managed releases, sorted by name and namespace. A release
// that cannot be read (its injector records do not decode; with Live, an
// object whose kind the cluster no longer serves, a permission the
// cluster refuses, a record that names a namespace it is not stored in)
// is listed with its Error, and the next release is read: one forged or
// broken record does not hide the others. The error Run returns is the
// listing's own.
func (l *List) Run(ctx context.Context) ([]*ReleaseState, error) {
	rels, err := l.latest()
	if err != nil {
		return nil, fmt.Errorf("listing releases: %w", err)
	}
	var clients liveClients
	if l.Live != nil {
		if clients, err = connect(l.connect, l.cfg); err != nil {
			return nil, err
		}
	}
	out := []*ReleaseState{}
	for _, r := range rels {
		if !IsManaged(r) {
			continue
		}
		st, err := releaseState(r, l.Library)
		if err != nil {
			st = &ReleaseState{Name: r.Name, Namespace: r.Namespace, Revision: r.Version, Status: recordStatus(r), Chart: chartName(r), Injectors: []InjectorState{}}
			err = fmt.Errorf("release %q: %w", r.Name, err)
		} else if l.Live != nil {
			// Its errors name the release.
			st.Live, err = l.Live.Run(ctx, clients, r)
		}
		if err != nil {
			st.Error = l.explain(err).Error()
		}
		out = append(out, st)
	}
	return out, nil
}

func (l *List) explain(err error) error {
	if l.Explain == nil {
		return err
	}
	return l.Explain(err)
}

// latest is the latest revision of every release in the configuration's
// storage, as helm list --all selects them (helm's action.List with every
// state, held to it by TestListSelectsAsHelm), read without helm's state
// filter: it dereferences a record's info, which a record without one
// lacks, and drops a status it does not know, which a record may say.
func (l *List) latest() ([]*release.Release, error) {
	if err := l.cfg.KubeClient.IsReachable(); err != nil {
		return nil, err
	}
	found, err := l.cfg.Releases.ListReleases()
	if err != nil {
		return nil, err
	}
	rels, err := V1Releases(found)
	if err != nil {
		return nil, err
	}
	type key struct{ namespace, name string }
	latest := map[key]*release.Release{}
	for _, r := range rels {
		k := key{r.Namespace, r.Name}
		if cur, ok := latest[k]; ok && cur.Version > r.Version {
			continue
		}
		latest[k] = r
	}
	return slices.SortedFunc(maps.Values(latest), func(a, b *release.Release) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Namespace, b.Namespace))
	}), nil
}
