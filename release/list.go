package release

import (
	"context"
	"fmt"

	"helm.sh/helm/v4/pkg/action"

	"github.com/helm-inject/helm-inject/inject"
)

// List finds every release that helm-inject manages.
type List struct {
	cfg           *action.Configuration
	AllNamespaces bool
	Library       *inject.Library
	// Live, when set, adds what runs in the cluster to every release.
	Live *Live
}

// NewList returns a List bound to a Helm configuration.
func NewList(cfg *action.Configuration) *List { return &List{cfg: cfg} }

// Run lists the managed releases, sorted by namespace and name.
func (l *List) Run(ctx context.Context) ([]*ReleaseState, error) {
	ls := action.NewList(l.cfg)
	ls.AllNamespaces = l.AllNamespaces
	ls.All = true
	ls.SetStateMask()
	found, err := ls.Run()
	if err != nil {
		return nil, fmt.Errorf("listing releases: %w", err)
	}
	rels, err := V1Releases(found)
	if err != nil {
		return nil, fmt.Errorf("listing releases: %w", err)
	}
	var clients liveClients
	if l.Live != nil {
		if clients, err = newLiveClients(l.cfg); err != nil {
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
			return nil, fmt.Errorf("release %q in namespace %q: %w", r.Name, r.Namespace, err)
		}
		if l.Live != nil {
			if st.Live, err = l.Live.Run(ctx, clients, r); err != nil {
				return nil, err
			}
		}
		out = append(out, st)
	}
	return out, nil
}
