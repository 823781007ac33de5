package release

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"

	"helm.sh/helm/v4/pkg/kube"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/resource"
)

// readAhead answers Helm's existence check from reads made just before it,
// all at once.
//
// Before an install creates anything (and an upgrade, for the objects its
// new revision adds), Helm's SDK reads every object one after the other
// (pkg/action/validate.go, existingResourceConflict): one that exists and
// is not the release's own stops the install with "exists and cannot be
// imported into the current release"; one that does is adopted. At 1000
// objects 20 ms away that is 20 s of an install spent waiting, a third of
// it (docs/performance.md, "Apply faster than helm").
//
// readAhead is a transport in front of every client of the cluster view.
// When the kube client builds the objects (parallelWrites.Build), it reads
// those the new revision adds, up to --write-concurrency at a time,
// through the very clients and requests Helm's check then makes; the
// transport keeps each answer (an object, or "not found") and gives it to
// the next GET of the same URL, once. Helm's check, its rule and its error
// are untouched: it receives what the server answered a moment earlier
// instead of asking again. Any other request through the view (a create,
// an apply, a delete) drops every answer not yet used, so nothing read
// before a write is ever answered after it.
type readAhead struct {
	mu      sync.Mutex
	answers map[string]*readAnswer
}

// readAnswer is a response to a GET, kept to answer the same GET once more.
type readAnswer struct {
	status int
	header http.Header
	body   []byte
}

// aheadKey marks the context of a read made ahead.
type aheadKey struct{}

func newReadAhead() *readAhead { return &readAhead{answers: map[string]*readAnswer{}} }

// wrap is a rest.Config's WrapTransport.
func (r *readAhead) wrap(rt http.RoundTripper) http.RoundTripper {
	return &readAheadTransport{ahead: r, next: rt}
}

// readKey is what two GETs share when one may answer the other: the URL
// and the media types asked for.
func readKey(req *http.Request) string {
	return req.URL.String() + "\x00" + req.Header.Get("Accept")
}

type readAheadTransport struct {
	ahead *readAhead
	next  http.RoundTripper
}

func (t *readAheadTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet {
		t.ahead.drop()
		return t.next.RoundTrip(req)
	}
	key := readKey(req)
	if req.Context().Value(aheadKey{}) == nil {
		if a := t.ahead.take(key); a != nil {
			return a.response(req), nil
		}
		return t.next.RoundTrip(req)
	}
	resp, err := t.next.RoundTrip(req)
	// Only the two answers Helm's check acts on are kept; anything else
	// (a refusal, a server error, a throttle) is for Helm to meet itself.
	if err != nil || (resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNotFound) {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	t.ahead.keep(key, &readAnswer{status: resp.StatusCode, header: resp.Header.Clone(), body: body})
	// The server's warnings (a deprecated API version) are printed once,
	// for Helm's read, as without the read-ahead.
	resp.Header.Del("Warning")
	return resp, nil
}

func (r *readAhead) keep(key string, a *readAnswer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answers[key] = a
}

// take returns the answer kept for key and forgets it.
func (r *readAhead) take(key string) *readAnswer {
	r.mu.Lock()
	defer r.mu.Unlock()
	a := r.answers[key]
	delete(r.answers, key)
	return a
}

// drop forgets every answer.
func (r *readAhead) drop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	clear(r.answers)
}

func (a *readAnswer) response(req *http.Request) *http.Response {
	return &http.Response{
		Status:        http.StatusText(a.status),
		StatusCode:    a.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        a.header.Clone(),
		Body:          io.NopCloser(bytes.NewReader(a.body)),
		ContentLength: int64(len(a.body)),
		Request:       req,
	}
}

// objectName is what names an object for the read-ahead: its group, kind
// and name. (The namespace is left out: a cluster-scoped object's document
// has none where Helm's object has the release's; reading one object more
// than needed costs a request, not a wrong answer.)
type objectName struct {
	gk   schema.GroupKind
	name string
}

// readAll reads, up to limit at a time, every object of rs that added
// names, the way Helm's existence check reads it, so that the transport
// keeps each answer for that check. It returns the names it read.
func (r *readAhead) readAll(ctx context.Context, rs kube.ResourceList, added map[objectName]bool, limit int) []objectName {
	ctx = context.WithValue(ctx, aheadKey{}, true)
	sem := make(chan struct{}, max(limit, 1))
	var wg sync.WaitGroup
	var read []objectName
	for _, info := range rs {
		// Helm checks no object named by generateName only.
		if info.Name == "" || info.Mapping == nil {
			continue
		}
		name := objectName{info.Mapping.GroupVersionKind.GroupKind(), info.Name}
		if !added[name] {
			continue
		}
		read = append(read, name)
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			// The request of resource.Helper.Get, which Helm's check makes;
			// its answer is the transport's to keep, its error Helm's to meet.
			h := resource.NewHelper(info.Client, info.Mapping)
			_ = h.RESTClient.Get().
				NamespaceIfScoped(info.Namespace, h.NamespaceScoped).
				Resource(h.Resource).
				Name(info.Name).
				Do(ctx).
				Error()
		})
	}
	wg.Wait()
	return read
}
