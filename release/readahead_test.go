package release

import (
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/kube"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/resource"
	"k8s.io/client-go/rest"

	"github.com/helm-inject/helm-inject/chartify"
	"github.com/helm-inject/helm-inject/inject"
	"github.com/helm-inject/helm-inject/internal/testfs"
	"github.com/helm-inject/helm-inject/manifest"
)

// aheadInfos are the objects "KIND/NAME" of namespace shop with clients
// of host whose transport goes through ahead, as a cluster view's do.
func aheadInfos(t *testing.T, host string, ahead *readAhead, warn rest.WarningHandler, paths ...string) kube.ResourceList {
	t.Helper()
	cfg := &rest.Config{Host: host, WarningHandler: warn}
	cfg.Wrap(ahead.wrap)
	return infosWith(t, cfg, paths...)
}

// viewConfig is a Helm configuration whose clients reach the object
// server at host through a cluster view, as NewConfiguration's do.
func viewConfig(t *testing.T, host string) *action.Configuration {
	t.Helper()
	view := newClusterView(objectServerGetter{fakeCluster: newFakeCluster(), host: host})
	cfg := memoryConfig(t)
	cfg.RESTClientGetter = view
	cfg.KubeClient = kube.New(view)
	return cfg
}

func configMapNames(names ...string) map[objectName]bool {
	m := map[objectName]bool{}
	for _, n := range names {
		m[objectName{schema.GroupKind{Kind: "ConfigMap"}, n}] = true
	}
	return m
}

// helmsRead is the read of Helm's existence check.
func helmsRead(info *resource.Info) (any, error) {
	return resource.NewHelper(info.Client, info.Mapping).Get(info.Namespace, info.Name)
}

// TestReadAheadAnswersTheNextReadOnce: the objects named are read ahead
// (those not named are not), and the next read of each, Helm's, gets what
// the server answered, found or not found, without asking again; a read
// after that asks the server.
func TestReadAheadAnswersTheNextReadOnce(t *testing.T) {
	srv, ts := newObjectServer(t, "configmaps/a")
	ahead := newReadAhead()
	rs := aheadInfos(t, ts.URL, ahead, nil, "configmaps/a", "configmaps/b", "configmaps/c")

	read := ahead.readAll(t.Context(), rs, configMapNames("a", "b"), 4)
	if want := []objectName{{schema.GroupKind{Kind: "ConfigMap"}, "a"}, {schema.GroupKind{Kind: "ConfigMap"}, "b"}}; !slices.Equal(read, want) {
		t.Errorf("read ahead %v, want a and b", read)
	}
	if srv.gets["configmaps/a"] != 1 || srv.gets["configmaps/b"] != 1 || srv.gets["configmaps/c"] != 0 {
		t.Fatalf("reads reaching the server ahead: %v, want a and b once", srv.gets)
	}

	got, err := helmsRead(rs[0])
	if err != nil {
		t.Fatalf("Helm's read of a: %v", err)
	}
	if v, _, _ := unstructured.NestedString(got.(*unstructured.Unstructured).Object, "data", "v"); v != "old" {
		t.Errorf("Helm's read of a: data.v %q, want the server's %q", v, "old")
	}
	if _, err := helmsRead(rs[1]); !apierrors.IsNotFound(err) {
		t.Errorf("Helm's read of b: %v, want not found", err)
	}
	if srv.gets["configmaps/a"] != 1 || srv.gets["configmaps/b"] != 1 {
		t.Errorf("Helm's reads reached the server: %v", srv.gets)
	}

	for _, info := range rs {
		helmsRead(info)
	}
	if srv.gets["configmaps/a"] != 2 || srv.gets["configmaps/b"] != 2 || srv.gets["configmaps/c"] != 1 {
		t.Errorf("second reads reaching the server: %v, want each of a, b once more and c once", srv.gets)
	}
}

// TestReadAheadDroppedByAWrite: a write through the view drops every
// answer not yet used, so a read after it asks the server.
func TestReadAheadDroppedByAWrite(t *testing.T) {
	srv, ts := newObjectServer(t, "configmaps/a")
	ahead := newReadAhead()
	rs := aheadInfos(t, ts.URL, ahead, nil, "configmaps/a", "configmaps/b")
	ahead.readAll(t.Context(), rs, configMapNames("a", "b"), 2)

	h := resource.NewHelper(rs[0].Client, rs[0].Mapping)
	if _, err := h.Patch("shop", "a", types.MergePatchType, []byte(`{}`), nil); err != nil {
		t.Fatal(err)
	}
	helmsRead(rs[1])
	if srv.gets["configmaps/b"] != 2 {
		t.Errorf("b read after a write was answered from before it: %d reads reached the server, want 2", srv.gets["configmaps/b"])
	}
}

// TestReadAheadKeepsFoundAndNotFoundOnly: an answer other than the
// object or "not found" is not kept: Helm's read meets the server itself.
func TestReadAheadKeepsFoundAndNotFoundOnly(t *testing.T) {
	for _, tt := range []struct {
		status    int
		wantReads int32
	}{
		{http.StatusOK, 1},
		{http.StatusNotFound, 1},
		{http.StatusForbidden, 2},
		{http.StatusInternalServerError, 2},
	} {
		t.Run(fmt.Sprint(tt.status), func(t *testing.T) {
			var reads atomic.Int32
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				reads.Add(1)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tt.status)
				if tt.status == http.StatusOK {
					w.Write(object("configmaps", "a", "old").body(t))
					return
				}
				fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","code":%d}`, tt.status)
			}))
			t.Cleanup(ts.Close)
			ahead := newReadAhead()
			rs := aheadInfos(t, ts.URL, ahead, nil, "configmaps/a")
			ahead.readAll(t.Context(), rs, configMapNames("a"), 1)
			helmsRead(rs[0])
			if got := reads.Load(); got != tt.wantReads {
				t.Errorf("status %d: %d reads reached the server, want %d", tt.status, got, tt.wantReads)
			}
		})
	}
}

type warnings struct {
	mu   sync.Mutex
	seen []string
}

func (w *warnings) HandleWarningHeader(code int, agent, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen = append(w.seen, text)
}

// TestReadAheadWarnsOnce: the server's warning on a read (a deprecated
// API version) is printed once, as it is without the read-ahead.
func TestReadAheadWarnsOnce(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Warning", `299 - "v1 ConfigMap is deprecated"`)
		w.Write(object("configmaps", "a", "old").body(t))
	}))
	t.Cleanup(ts.Close)
	w := &warnings{}
	ahead := newReadAhead()
	rs := aheadInfos(t, ts.URL, ahead, w, "configmaps/a")
	ahead.readAll(t.Context(), rs, configMapNames("a"), 1)
	if _, err := helmsRead(rs[0]); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(w.seen) != "[v1 ConfigMap is deprecated]" {
		t.Errorf("warnings %q, want the server's once", w.seen)
	}
}

// TestReadAheadInFlight: the reads are made up to the limit at once.
func TestReadAheadInFlight(t *testing.T) {
	srv, ts := newObjectServer(t)
	srv.getDelay = 20 * time.Millisecond
	ahead := newReadAhead()
	rs := aheadInfos(t, ts.URL, ahead, nil, "configmaps/a", "configmaps/b", "configmaps/c", "configmaps/d", "configmaps/e", "configmaps/f")
	ahead.readAll(t.Context(), rs, configMapNames("a", "b", "c", "d", "e", "f"), 3)
	if srv.maxGetsIn != 3 {
		t.Errorf("%d reads at once, want the limit, 3", srv.maxGetsIn)
	}
}

// TestApplyInstallReadsAhead: an install through a cluster view reads
// every object once, WriteConcurrency at a time (1: one after the other,
// as helm does), and refuses an object that exists without the release's
// ownership with helm's own error, creating nothing.
func TestApplyInstallReadsAhead(t *testing.T) {
	dir := t.TempDir()
	var cms strings.Builder
	for i := range 6 {
		fmt.Fprintf(&cms, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\ndata:\n  v: x\n", i)
	}
	testfs.Write(t, dir, map[string]string{"Chart.yaml": "apiVersion: v2\nname: many\nversion: 0.1.0\n", "templates/cms.yaml": cms.String()})
	ch, _, err := chartify.Load(dir, chartify.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const refused = `release "many": install: unable to continue with install: ConfigMap "cm-4" in namespace "shop" exists and cannot be imported into the current release: invalid ownership metadata`
	for _, tt := range []struct {
		concurrency, wantAtOnce int
		existing                []string
		wantErr                 string
		// wantLastRead is how often cm-5 is read: helm's check, one
		// object after the other, stops at the first it refuses.
		wantLastRead int
	}{
		{concurrency: 1, wantAtOnce: 1, wantLastRead: 1},
		{concurrency: 4, wantAtOnce: 4, wantLastRead: 1},
		{concurrency: 0, wantAtOnce: 6, wantLastRead: 1}, // DefaultWriteConcurrency
		{concurrency: 1, wantAtOnce: 1, existing: []string{"configmaps/cm-4"}, wantErr: refused, wantLastRead: 0},
		{concurrency: 4, wantAtOnce: 4, existing: []string{"configmaps/cm-4"}, wantErr: refused, wantLastRead: 1},
	} {
		t.Run(fmt.Sprint(tt.concurrency, tt.existing), func(t *testing.T) {
			srv, ts := newObjectServer(t, tt.existing...)
			srv.getDelay = 20 * time.Millisecond
			a := NewApply(viewConfig(t, ts.URL))
			a.Inputs = Inputs{Namespace: "shop", Injectors: &inject.Declared{}}
			a.DisableOpenAPIValidation = true
			a.WriteConcurrency = tt.concurrency
			_, err := a.Run(t.Context(), "many", Source{Ref: dir, Chart: ch}, nil)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatal(err)
			case tt.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want one starting %q", err, tt.wantErr)
			}
			for i := range 5 {
				if got := srv.gets[fmt.Sprintf("configmaps/cm-%d", i)]; got != 1 {
					t.Errorf("cm-%d read %d times, want once", i, got)
				}
			}
			if got := srv.gets["configmaps/cm-5"]; got != tt.wantLastRead {
				t.Errorf("cm-5 read %d times, want %d", got, tt.wantLastRead)
			}
			if srv.maxGetsIn != tt.wantAtOnce {
				t.Errorf("%d reads at once, want %d", srv.maxGetsIn, tt.wantAtOnce)
			}
			if tt.wantErr != "" && len(srv.patches) > 0 {
				t.Errorf("a refused install wrote %d objects", len(srv.patches))
			}
		})
	}
}

// TestApplyUpgradeReadsAheadWhatItAdds: an upgrade reads the objects it
// adds for helm's check, WriteConcurrency at a time (1: one after the
// other, as helm does), and each once: an object is read twice (the check,
// then helm's update), one it keeps once (helm's update).
func TestApplyUpgradeReadsAheadWhatItAdds(t *testing.T) {
	dir := t.TempDir()
	testfs.Write(t, dir, map[string]string{
		"Chart.yaml":         "apiVersion: v2\nname: grow\nversion: 0.1.0\n",
		"templates/cms.yaml": "{{ range until (int .Values.n) }}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{{ . }}\ndata:\n  v: x\n{{ end }}\n",
	})
	ch, _, err := chartify.Load(dir, chartify.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	added := []string{"configmaps/cm-3", "configmaps/cm-4", "configmaps/cm-5"}
	for _, tt := range []struct{ concurrency, wantAtOnce int }{{1, 1}, {4, 3}} {
		t.Run(fmt.Sprint(tt.concurrency), func(t *testing.T) {
			srv, ts := newObjectServer(t)
			srv.getDelay = 20 * time.Millisecond
			cfg := viewConfig(t, ts.URL)
			apply := func(n int) {
				t.Helper()
				a := NewApply(cfg)
				a.Inputs = Inputs{Namespace: "shop", Injectors: &inject.Declared{}}
				a.DisableOpenAPIValidation = true
				a.WriteConcurrency = tt.concurrency
				if _, err := a.Run(t.Context(), "grow", Source{Ref: dir, Chart: ch}, map[string]any{"n": n}); err != nil {
					t.Fatal(err)
				}
			}
			apply(3)
			srv.resetCounts(added...)
			apply(6)
			want := map[string]int{"configmaps/cm-0": 1, "configmaps/cm-1": 1, "configmaps/cm-2": 1, "configmaps/cm-3": 2, "configmaps/cm-4": 2, "configmaps/cm-5": 2}
			if !maps.Equal(srv.gets, want) {
				t.Errorf("reads during the upgrade: %v, want %v", srv.gets, want)
			}
			if srv.maxGetsIn != tt.wantAtOnce {
				t.Errorf("%d reads of the added objects at once, want %d", srv.maxGetsIn, tt.wantAtOnce)
			}
		})
	}
}

// TestAddedObjects: what helm's check reads are the resources an apply
// adds, not the hooks, nor those it changes or removes.
func TestAddedObjects(t *testing.T) {
	changes := []Change{
		{Type: Added, ID: manifest.ID{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"}},
		{Type: Added, ID: manifest.ID{APIVersion: "v1", Kind: "Namespace", Name: "shop"}},
		{Type: Added, ID: manifest.ID{APIVersion: "batch/v1", Kind: "Job", Name: "migrate"}, Hook: true},
		{Type: Changed, ID: manifest.ID{APIVersion: "v1", Kind: "ConfigMap", Name: "cm"}},
		{Type: Removed, ID: manifest.ID{APIVersion: "v1", Kind: "Secret", Name: "s"}},
	}
	want := map[objectName]bool{
		{schema.GroupKind{Group: "apps", Kind: "Deployment"}, "web"}: true,
		{schema.GroupKind{Kind: "Namespace"}, "shop"}:                true,
	}
	if got := addedObjects(changes); !maps.Equal(got, want) {
		t.Errorf("addedObjects = %v, want %v", got, want)
	}
}
