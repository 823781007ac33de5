package release

import (
	"context"
	"io"
	"strings"
	"sync"

	"helm.sh/helm/v4/pkg/kube"
)

// DefaultWriteConcurrency is how many objects an upgrade writes at once
// within one group of helm's order when --write-concurrency is not given,
// chosen by measurement (docs/performance.md, "Apply faster than helm"):
// at N = 500 through a 20 ms round trip, 32 took an upgrade 5.2 s against
// 6.1 s with 16 and 15.1 s with 4; on loopback 32 and 16 were within the
// noise of each other (4.3 and 4.0 s; 4: 5.1 s). It stays far below helm's
// default burst (100).
const DefaultWriteConcurrency = 32

// parallelWrites is Helm's kube client with an Update that writes the
// objects of each group of helm's order concurrently. Helm's own Update
// visits the objects one after the other, two requests each (a get, then
// the apply or patch), so an upgrade's wall time is the sum of its round
// trips; its Create already writes each kind's objects at once.
//
// Every object still goes through Helm's Update, alone: server-side apply,
// the field manager, client-side patches, --force-replace, an object that
// exists in the cluster but not in the last revision, and the errors are
// Helm's own. What changes:
//   - groups: the objects are taken in the order Helm gives them (its
//     install order) and grouped by kind as Helm's Create groups them (a
//     run of one kind); a group starts when the one before it is written;
//   - a failing create or read ends the upgrade after its group, where
//     Helm stops at that object: the other objects of the group may have
//     been written (and are in the result, so --rollback-on-failure
//     removes those it created); the error is the first such object's;
//   - failed updates are collected, as Helm does, and reported joined in
//     the objects' order; nothing is deleted then, as in Helm;
//   - objects the release no longer has are deleted after every write,
//     by Helm's Update, as Helm does.
//
// Its Build also reads ahead, for Helm's existence check, the objects the
// new revision adds (see readAhead).
type parallelWrites struct {
	*kube.Client
	limit int
	// ahead, when set, keeps the answers of reads made in Build for the
	// objects named in added, each read once (an upgrade builds its target
	// twice); ctx bounds those reads.
	ahead *readAhead
	mu    sync.Mutex
	added map[objectName]bool
	ctx   context.Context
}

// withParallelWrites puts parallel writes in front of Helm's kube client;
// a limit below 2 keeps Helm's own Update (and its reads one at a time).
func withParallelWrites(kc kube.Interface, limit int) kube.Interface {
	c, ok := kc.(*kube.Client)
	if !ok || limit < 2 {
		return kc
	}
	return &parallelWrites{Client: c, limit: limit}
}

// Build is Helm's Build; the objects of the result that the new revision
// adds are then read ahead, for Helm's existence check, when ahead is set.
func (p *parallelWrites) Build(reader io.Reader, validate bool) (kube.ResourceList, error) {
	rs, err := p.Client.Build(reader, validate)
	if err != nil || p.ahead == nil {
		return rs, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, name := range p.ahead.readAll(p.ctx, rs, p.added, p.limit) {
		delete(p.added, name)
	}
	return rs, nil
}

// Update updates, or creates, every target and deletes the originals that
// are not targets, as Helm's Update does (see parallelWrites).
func (p *parallelWrites) Update(originals, targets kube.ResourceList, options ...kube.ClientUpdateOption) (*kube.Result, error) {
	// Helm refuses bad option combinations before any request; so does
	// this, once, with Helm's error.
	if res, err := p.Client.Update(nil, nil, options...); err != nil {
		return res, err
	}
	res := &kube.Result{}
	var updateErrs []error
	for _, group := range kindRuns(targets) {
		results := make([]*kube.Result, len(group))
		errs := make([]error, len(group))
		sem := make(chan struct{}, p.limit)
		var wg sync.WaitGroup
		for i, target := range group {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				var original kube.ResourceList
				if o := originals.Get(target); o != nil {
					original = kube.ResourceList{o}
				}
				results[i], errs[i] = p.Client.Update(original, kube.ResourceList{target}, options...)
			})
		}
		wg.Wait()
		var stop error
		for i := range group {
			if r := results[i]; r != nil {
				res.Created = append(res.Created, r.Created...)
				res.Updated = append(res.Updated, r.Updated...)
			}
			switch {
			case errs[i] == nil:
			case results[i] == nil || len(results[i].Updated) == 0:
				// A create or a read that failed: Helm's Update ends there.
				if stop == nil {
					stop = errs[i]
				}
			default:
				updateErrs = append(updateErrs, errs[i])
			}
		}
		if stop != nil {
			return res, stop
		}
	}
	if len(updateErrs) > 0 {
		return res, joinedErrors{errs: updateErrs, sep: " && "}
	}
	dropped := originals.Difference(targets)
	if len(dropped) == 0 {
		return res, nil
	}
	del, err := p.Client.Update(dropped, kube.ResourceList{}, options...)
	if del != nil {
		res.Deleted = del.Deleted
	}
	return res, err
}

// kindRuns splits the resources into runs of one kind, in their order, as
// Helm's Create batches them.
func kindRuns(rs kube.ResourceList) []kube.ResourceList {
	var runs []kube.ResourceList
	kind := ""
	for i, r := range rs {
		k := r.Object.GetObjectKind().GroupVersionKind().Kind
		if i == 0 || k != kind {
			runs = append(runs, nil)
			kind = k
		}
		runs[len(runs)-1] = append(runs[len(runs)-1], r)
	}
	return runs
}

// joinedErrors reads as Helm's own joined update errors (the texts joined
// by sep), each still reachable with errors.Is and errors.As.
type joinedErrors struct {
	errs []error
	sep  string
}

func (e joinedErrors) Error() string {
	texts := make([]string, len(e.errs))
	for i, err := range e.errs {
		texts[i] = err.Error()
	}
	return strings.Join(texts, e.sep)
}

func (e joinedErrors) Unwrap() []error { return e.errs }
