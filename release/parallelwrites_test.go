package release

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/kube"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/resource"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/helm-inject/helm-inject/chartify"
	"github.com/helm-inject/helm-inject/inject"
	"github.com/helm-inject/helm-inject/internal/testfs"
)

// objectServer is an API server for ConfigMaps and Secrets in namespace
// shop, kept in memory: GET, PATCH (server-side apply's object is kept;
// every patch is recorded), POST and DELETE. Each
// request is logged when it ends; inFlight counts requests being served
// at once, per kind.
type objectServer struct {
	mu       sync.Mutex
	objects  map[string][]byte // "configmaps/NAME" -> JSON
	patches  map[string][]byte // the last patch of each object
	log      []string          // "PATCH configmaps/a", in the order they ended
	inFlight map[string]int
	maxIn    map[string]int
	// fail makes a PATCH of this path answer 422.
	fail map[string]bool
	// delay is how long a PATCH takes, getDelay a GET.
	delay, getDelay time.Duration
	// gets counts the GETs of each path; getsIn are those being served,
	// maxGetsIn the most at once (of the paths in counted, if set).
	gets              map[string]int
	getsIn, maxGetsIn int
	counted           map[string]bool
}

// resetCounts forgets the requests counted so far, and counts the GETs
// in flight of these paths only (all when none are given).
func (s *objectServer) resetCounts(paths ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gets, s.maxGetsIn, s.counted = map[string]int{}, 0, nil
	for _, p := range paths {
		if s.counted == nil {
			s.counted = map[string]bool{}
		}
		s.counted[p] = true
	}
}

func newObjectServer(t *testing.T, existing ...string) (*objectServer, *httptest.Server) {
	s := &objectServer{objects: map[string][]byte{}, patches: map[string][]byte{}, inFlight: map[string]int{}, maxIn: map[string]int{}, fail: map[string]bool{}, delay: 20 * time.Millisecond, gets: map[string]int{}}
	for _, path := range existing {
		kind, name, _ := strings.Cut(path, "/")
		s.objects[path] = object(kind, name, "old").body(t)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv
}

func (s *objectServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/version" { // Helm's reachability check
		w.Write([]byte(`{"major": "1", "minor": "31", "gitVersion": "v1.31.0"}`))
		return
	}
	path := strings.TrimPrefix(r.URL.Path, "/api/v1/namespaces/shop/")
	kind, _, _ := strings.Cut(path, "/")
	s.mu.Lock()
	s.inFlight[kind]++
	s.maxIn[kind] = max(s.maxIn[kind], s.inFlight[kind])
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inFlight[kind]--
		s.log = append(s.log, r.Method+" "+path)
		s.mu.Unlock()
	}()
	w.Header().Set("Content-Type", "application/json")
	status := func(code int, reason metav1.StatusReason) {
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: "Failure", Code: int32(code), Reason: reason, Message: fmt.Sprintf("%s %s", path, reason)})
	}
	switch r.Method {
	case http.MethodGet:
		s.mu.Lock()
		s.gets[path]++
		counted := s.counted == nil || s.counted[path]
		if counted {
			s.getsIn++
			s.maxGetsIn = max(s.maxGetsIn, s.getsIn)
		}
		delay := s.getDelay
		s.mu.Unlock()
		time.Sleep(delay)
		s.mu.Lock()
		if counted {
			s.getsIn--
		}
		body, ok := s.objects[path]
		s.mu.Unlock()
		if !ok {
			status(http.StatusNotFound, metav1.StatusReasonNotFound)
			return
		}
		w.Write(body)
	case http.MethodPatch:
		time.Sleep(s.delay)
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		fail := s.fail[path]
		s.patches[path] = body
		if !fail && strings.HasPrefix(r.Header.Get("Content-Type"), "application/apply-patch") {
			s.objects[path] = body // server-side apply sends the whole object
		}
		obj := s.objects[path]
		s.mu.Unlock()
		if fail {
			status(http.StatusUnprocessableEntity, metav1.StatusReasonInvalid)
			return
		}
		w.Write(obj)
	case http.MethodPost: // a client-side create
		body, _ := io.ReadAll(r.Body)
		var o unstructured.Unstructured
		if err := o.UnmarshalJSON(body); err != nil {
			status(http.StatusBadRequest, metav1.StatusReasonBadRequest)
			return
		}
		s.mu.Lock()
		s.objects[path+"/"+o.GetName()] = body
		s.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		w.Write(body)
	case http.MethodDelete:
		s.mu.Lock()
		delete(s.objects, path)
		s.mu.Unlock()
		w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Success"}`))
	}
}

type testObject struct{ u *unstructured.Unstructured }

// object is a ConfigMap (kind "configmaps") or Secret ("secrets") of
// namespace shop.
func object(kind, name, value string) testObject {
	k := map[string]string{"configmaps": "ConfigMap", "secrets": "Secret"}[kind]
	return testObject{&unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": k,
		"metadata": map[string]any{"name": name, "namespace": "shop"},
		"data":     map[string]any{"v": value},
	}}}
}

func (o testObject) body(t *testing.T) []byte {
	b, err := json.Marshal(o.u.Object)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// infos are the resource.Infos Helm's Build gives for objects "KIND/NAME"
// (value "new"), with clients of srv.
func infos(t *testing.T, srv *httptest.Server, paths ...string) kube.ResourceList {
	t.Helper()
	return infosWith(t, &rest.Config{Host: srv.URL}, paths...)
}

// infosWith is infos with clients made from cfg (its host, transport and
// warning handler).
func infosWith(t *testing.T, cfg *rest.Config, paths ...string) kube.ResourceList {
	t.Helper()
	cc := resource.UnstructuredPlusDefaultContentConfig()
	cc.GroupVersion = &schema.GroupVersion{Version: "v1"}
	cfg.APIPath, cfg.ContentConfig = "/api", cc
	client, err := rest.RESTClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var list kube.ResourceList
	for _, path := range paths {
		kind, name, _ := strings.Cut(path, "/")
		o := object(kind, name, "new")
		list = append(list, &resource.Info{
			Client: client, Namespace: "shop", Name: name, Object: o.u,
			Mapping: &meta.RESTMapping{
				Resource:         schema.GroupVersionResource{Version: "v1", Resource: kind},
				GroupVersionKind: o.u.GroupVersionKind(),
				Scope:            meta.RESTScopeNamespace,
			},
		})
	}
	return list
}

func names(rs kube.ResourceList) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Name)
	}
	return out
}

// TestParallelWritesInHelmsOrder: an upgrade writes the objects of one
// kind at once (as many as the limit), a kind only after the one before
// it is written, and deletes what the release dropped last; the result
// lists every object as Helm's does.
func TestParallelWritesInHelmsOrder(t *testing.T) {
	srv, ts := newObjectServer(t, "configmaps/a", "configmaps/b", "configmaps/c", "configmaps/d", "configmaps/gone", "secrets/s1")
	targets := infos(t, ts, "configmaps/a", "configmaps/b", "configmaps/c", "configmaps/d", "configmaps/e", "secrets/s1", "secrets/s2")
	originals := infos(t, ts, "configmaps/a", "configmaps/b", "configmaps/c", "configmaps/d", "configmaps/gone", "secrets/s1")
	kc := withParallelWrites(kube.New(nil), 3)
	res, err := kc.Update(originals, targets, kube.ClientUpdateOptionServerSideApply(true, false))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(res.Created), []string{"e", "s2"}; !slices.Equal(got, want) {
		t.Errorf("created %v, want %v", got, want)
	}
	if got, want := names(res.Updated), []string{"a", "b", "c", "d", "s1"}; !slices.Equal(got, want) {
		t.Errorf("updated %v, want %v", got, want)
	}
	if got, want := names(res.Deleted), []string{"gone"}; !slices.Equal(got, want) {
		t.Errorf("deleted %v, want %v", got, want)
	}
	if srv.maxIn["configmaps"] != 3 {
		t.Errorf("at most %d ConfigMap requests at once, want the limit, 3", srv.maxIn["configmaps"])
	}
	// Every ConfigMap written before the first Secret request; the
	// deletion after every write.
	lastCM, firstSecret := -1, -1
	for i, l := range srv.log {
		if strings.HasPrefix(l, "PATCH configmaps/") {
			lastCM = i
		}
		if strings.Contains(l, "secrets/") && firstSecret < 0 {
			firstSecret = i
		}
	}
	if lastCM < 0 || firstSecret < lastCM {
		t.Errorf("a Secret was read or written before the ConfigMaps were written:\n%s", strings.Join(srv.log, "\n"))
	}
	if i := slices.Index(srv.log, "DELETE configmaps/gone"); i != len(srv.log)-1 {
		t.Errorf("the dropped object was deleted at step %d of %d, want last:\n%s", i+1, len(srv.log), strings.Join(srv.log, "\n"))
	}
	if got := string(srv.objects["configmaps/e"]); !strings.Contains(got, `"v":"new"`) {
		t.Errorf("configmaps/e holds %s", got)
	}
}

// TestParallelWritesErrorsAsHelms: failed updates are reported joined in
// the objects' order with Helm's separator, the later kinds are still
// written, and nothing is deleted; a failed create ends the upgrade after
// its kind, with that object's error.
func TestParallelWritesErrorsAsHelms(t *testing.T) {
	srv, ts := newObjectServer(t, "configmaps/a", "configmaps/b", "configmaps/c", "configmaps/gone")
	srv.fail["configmaps/c"], srv.fail["configmaps/a"] = true, true
	targets := infos(t, ts, "configmaps/a", "configmaps/b", "configmaps/c", "secrets/s1")
	originals := infos(t, ts, "configmaps/a", "configmaps/b", "configmaps/c", "configmaps/gone")
	kc := withParallelWrites(kube.New(nil), 4)
	res, err := kc.Update(originals, targets, kube.ClientUpdateOptionServerSideApply(true, false))
	want := "server-side apply failed for object shop/a /v1, Kind=ConfigMap: configmaps/a Invalid && server-side apply failed for object shop/c /v1, Kind=ConfigMap: configmaps/c Invalid"
	if err == nil || err.Error() != want {
		t.Fatalf("error:\n%v\nwant:\n%s", err, want)
	}
	if got := names(res.Updated); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("updated %v", got)
	}
	if !slices.Contains(srv.log, "PATCH secrets/s1") {
		t.Error("the Secret after the failed ConfigMaps was not written (Helm goes on after a failed update)")
	}
	if _, ok := srv.objects["configmaps/gone"]; !ok {
		t.Error("an object was deleted after a failed update")
	}

	srv, ts = newObjectServer(t)
	srv.fail["configmaps/new2"] = true
	targets = infos(t, ts, "configmaps/new1", "configmaps/new2", "configmaps/new3", "secrets/s1")
	res, err = withParallelWrites(kube.New(nil), 4).Update(nil, targets, kube.ClientUpdateOptionServerSideApply(true, false))
	if err == nil || !strings.HasPrefix(err.Error(), "failed to create resource: server-side apply failed for object shop/new2") {
		t.Fatalf("a failed create: %v", err)
	}
	if got := names(res.Created); !slices.Equal(got, []string{"new1", "new2", "new3"}) {
		t.Errorf("created %v, want every object of the kind that was tried (--rollback-on-failure removes them)", got)
	}
	if slices.ContainsFunc(srv.log, func(l string) bool { return strings.Contains(l, "secrets/") }) {
		t.Errorf("the next kind was written after a failed create:\n%s", strings.Join(srv.log, "\n"))
	}
}

// TestParallelWritesRefusesHelmsBadOptions: the option combinations Helm's
// Update refuses are refused once, with Helm's error, before any request.
func TestParallelWritesRefusesHelmsBadOptions(t *testing.T) {
	srv, ts := newObjectServer(t, "configmaps/a")
	_, err := withParallelWrites(kube.New(nil), 4).Update(nil, infos(t, ts, "configmaps/a"),
		kube.ClientUpdateOptionServerSideApply(true, false), kube.ClientUpdateOptionForceReplace(true))
	if err == nil || err.Error() != "invalid operation: cannot use server-side apply and force replace together" {
		t.Errorf("server-side apply with force replace: %v", err)
	}
	if len(srv.log) != 0 {
		t.Errorf("requests sent: %v", srv.log)
	}
	// With nothing to write, as with Helm's own client.
	_, err = withParallelWrites(kube.New(nil), 4).Update(nil, nil,
		kube.ClientUpdateOptionServerSideApply(true, false), kube.ClientUpdateOptionForceReplace(true))
	if err == nil {
		t.Error("server-side apply with force replace and nothing to write: no error")
	}
}

// TestParallelWritesPatchFromTheRelease: a client-side upgrade patches each
// object from its last revision, not from the live object, so a field
// someone added in the cluster stays (the patch of an object with the
// cluster as its baseline would remove it).
func TestParallelWritesPatchFromTheRelease(t *testing.T) {
	srv, ts := newObjectServer(t)
	live := object("configmaps", "a", "old")
	live.u.Object["data"] = map[string]any{"v": "old", "k": "1", "extra": "added-by-kubectl"}
	srv.objects["configmaps/a"] = live.body(t)
	originals := infos(t, ts, "configmaps/a")
	originals[0].Object.(*unstructured.Unstructured).Object["data"] = map[string]any{"v": "old", "k": "1"}
	targets := infos(t, ts, "configmaps/a", "configmaps/b")
	if _, err := withParallelWrites(kube.New(nil), 4).Update(originals, targets, kube.ClientUpdateOptionServerSideApply(false, false)); err != nil {
		t.Fatal(err)
	}
	if got, want := string(srv.patches["configmaps/a"]), `{"data":{"k":null,"v":"new"}}`; got != want {
		t.Errorf("patch of configmaps/a: %s, want %s", got, want)
	}
}

// TestWithParallelWritesLimitOne: a limit of 1 keeps Helm's own client.
func TestWithParallelWritesLimitOne(t *testing.T) {
	kc := kube.New(nil)
	if got := withParallelWrites(kc, 1); got != kube.Interface(kc) {
		t.Errorf("limit 1 gives %T, want Helm's client", got)
	}
	if _, ok := withParallelWrites(kc, 2).(kube.InterfaceWaitOptions); !ok {
		t.Error("the parallel client lost Helm's wait options (install and upgrade wait through them)")
	}
}

// objectServerGetter is the RESTClientGetter of an objectServer: its REST
// config, a mapper of ConfigMaps and Secrets, and fakeCluster's discovery.
type objectServerGetter struct {
	fakeCluster
	host string
}

func (g objectServerGetter) ToRESTConfig() (*rest.Config, error) {
	return &rest.Config{Host: g.host}, nil
}

func (g objectServerGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	c := clientcmdapi.NewConfig()
	c.Clusters["c"] = &clientcmdapi.Cluster{Server: g.host}
	c.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", Namespace: "shop"}
	c.CurrentContext = "c"
	return clientcmd.NewDefaultClientConfig(*c, nil)
}

func (g objectServerGetter) ToRESTMapper() (meta.RESTMapper, error) {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, meta.RESTScopeNamespace)
	return m, nil
}

// TestApplyWritesInParallel: apply's upgrade writes the objects of a kind
// at once, up to WriteConcurrency; 1 writes them one after the other, as
// helm does.
func TestApplyWritesInParallel(t *testing.T) {
	dir := t.TempDir()
	var cms strings.Builder
	for i := range 6 {
		fmt.Fprintf(&cms, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\ndata:\n  v: {{ .Values.v | quote }}\n", i)
	}
	testfs.Write(t, dir, map[string]string{"Chart.yaml": "apiVersion: v2\nname: many\nversion: 0.1.0\n", "templates/cms.yaml": cms.String()})
	ch, _, err := chartify.Load(dir, chartify.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		concurrency, wantAtOnce int
	}{{1, 1}, {4, 4}, {0, 6}} { // 0: DefaultWriteConcurrency, above the kind's 6 objects
		t.Run(fmt.Sprint(tt.concurrency), func(t *testing.T) {
			srv, ts := newObjectServer(t)
			getter := objectServerGetter{fakeCluster: newFakeCluster(), host: ts.URL}
			cfg := memoryConfig(t)
			cfg.RESTClientGetter = getter
			cfg.KubeClient = kube.New(getter)
			apply := func(v string) {
				t.Helper()
				a := NewApply(cfg)
				a.Inputs = Inputs{Namespace: "shop", Injectors: &inject.Declared{}}
				a.DisableOpenAPIValidation = true
				a.WriteConcurrency = tt.concurrency
				if _, err := a.Run(t.Context(), "many", Source{Ref: dir, Chart: ch}, map[string]any{"v": v}); err != nil {
					t.Fatal(err)
				}
			}
			apply("1")
			srv.mu.Lock()
			srv.maxIn = map[string]int{}
			srv.mu.Unlock()
			apply("2")
			if got := srv.maxIn["configmaps"]; got != tt.wantAtOnce {
				t.Errorf("upgrade with WriteConcurrency %d: %d requests at once, want %d", tt.concurrency, got, tt.wantAtOnce)
			}
			if got := string(srv.objects["configmaps/cm-5"]); !strings.Contains(got, `"v":"2"`) {
				t.Errorf("cm-5 after the upgrade: %s", got)
			}
		})
	}
}
