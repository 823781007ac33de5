package release

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"

	rcommon "helm.sh/helm/v4/pkg/release/common"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"

	kubefake "helm.sh/helm/v4/pkg/kube/fake"
	hrelease "helm.sh/helm/v4/pkg/release"
	release "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage"
	"helm.sh/helm/v4/pkg/storage/driver"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/helm-inject/helm-inject/chartify"
	"github.com/helm-inject/helm-inject/inject"
)

// unorderedMemory is Helm's in-memory storage answering queries newest
// revision first, as the Secrets driver may (it lists v10 before v2).
type unorderedMemory struct{ *driver.Memory }

func (m unorderedMemory) Query(labels map[string]string) ([]hrelease.Releaser, error) {
	rs, err := m.Memory.Query(labels)
	slices.SortFunc(rs, func(a, b hrelease.Releaser) int {
		ra, _ := V1Release(a)
		rb, _ := V1Release(b)
		return rb.Version - ra.Version
	})
	return rs, err
}

// memoryConfig is a Helm configuration over in-memory release storage and
// a kube client that applies nothing, as Helm tests its actions.
func memoryConfig(t *testing.T, rels ...*release.Release) *action.Configuration {
	t.Helper()
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(slog.DiscardHandler))
	cfg.Releases = storage.Init(driver.NewMemory())
	cfg.KubeClient = &kubefake.PrintingKubeClient{Out: io.Discard}
	cfg.Capabilities = common.DefaultCapabilities
	for _, r := range rels {
		if err := cfg.Releases.Create(r); err != nil {
			t.Fatal(err)
		}
	}
	return cfg
}

// revision is a stored revision of a release helm-inject made, with the
// given injector records annotation.
func revision(name, ns string, version int, records string) *release.Release {
	return &release.Release{
		Name: name, Namespace: ns, Version: version,
		Info: &release.Info{Status: rcommon.StatusDeployed},
		Chart: &chart.Chart{Metadata: &chart.Metadata{Name: "api", Version: "0.1.0", APIVersion: "v2", Annotations: map[string]string{
			chartify.AnnotationRendered: "sha256:r", chartify.AnnotationSource: "./api", inject.RecordsAnnotation: records,
		}}},
	}
}

// TestStatusAndListReadRecords: status and list show what a revision
// recorded, the newest revision wins, and a revision whose records cannot
// be read is reported with the release named, not shown as injector-less.
func TestStatusAndListReadRecords(t *testing.T) {
	// Stored newest first: the history is still oldest first.
	cfg := memoryConfig(t)
	cfg.Releases = storage.Init(unorderedMemory{driver.NewMemory()})
	for _, r := range []*release.Release{revision("web", "shop", 3, `[{"name":"log-shipper","version":"1.1.0","digest":"sha256:b"},{"name":"sidecar-injector f=FILE","digest":"sha256:c","program":{"path":"/bin/sidecar-injector","sha256":"sha256:d","version":"1.1"}}]`),
		revision("web", "shop", 1, `[{"name":"log-shipper","version":"1.0.0","digest":"sha256:a"}]`),
		revision("web", "shop", 2, `[]`),
	} {
		if err := cfg.Releases.Create(r); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range []int{1, 2} {
		found, _ := cfg.Releases.Get("web", v)
		old, _ := V1Release(found)
		old.Info.Status = rcommon.StatusSuperseded
		_ = cfg.Releases.Update(old)
	}
	st, err := NewStatus(cfg).Run(t.Context(), "web")
	if err != nil {
		t.Fatal(err)
	}
	program := &inject.Program{Path: "/bin/sidecar-injector", SHA256: "sha256:d", Version: "1.1"}
	if st.Revision != 3 || len(st.Injectors) != 2 || st.Injectors[0].Version != "1.1.0" || st.Injectors[1].Name != "sidecar-injector f=FILE" || st.Source != "./api" ||
		st.Injectors[0].Program != nil || !cmp.Equal(st.Injectors[1].Program, program) {
		t.Errorf("status = %+v", st)
	}
	wantHistory := []RevisionInjectors{
		{Revision: 1, Status: "superseded", Injectors: []inject.Record{{Name: "log-shipper", Version: "1.0.0", Digest: "sha256:a"}}},
		{Revision: 2, Status: "superseded", Injectors: []inject.Record{}},
		{Revision: 3, Status: "deployed", Injectors: []inject.Record{{Name: "log-shipper", Version: "1.1.0", Digest: "sha256:b"}, {Name: "sidecar-injector f=FILE", Digest: "sha256:c", Program: program}}},
	}
	if diff := cmp.Diff(wantHistory, st.History); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	list, err := NewList(cfg).Run(t.Context())
	if err != nil || len(list) != 1 || list[0].Name != "web" {
		t.Errorf("list = %v, %v", list, err)
	}

	broken := memoryConfig(t, revision("bad", "shop", 1, `[{"name":`))
	if _, err := NewStatus(broken).Run(t.Context(), "bad"); err == nil || !strings.Contains(err.Error(), `release "bad": revision 1: reading the helm-inject.io/injectors annotation`) {
		t.Errorf("status of a broken record: %v", err)
	}
	if list, err := NewList(broken).Run(t.Context()); err != nil || len(list) != 1 || !strings.HasPrefix(list[0].Error, `release "bad": revision 1: reading the helm-inject.io/injectors annotation`) {
		t.Errorf("list with a broken record: %+v, %v; want its row with the error", list, err)
	}
	if _, err := NewStatus(cfg).Run(t.Context(), "nope"); err == nil || err.Error() != `release "nope": release: not found` {
		t.Errorf("status of a release that does not exist: %v", err)
	}
	// A broken record in an older revision: status names it.
	olderBroken := memoryConfig(t, revision("bad", "shop", 1, `[{"name":`), revision("bad", "shop", 2, `[]`))
	if _, err := NewStatus(olderBroken).Run(t.Context(), "bad"); err == nil || !strings.Contains(err.Error(), `release "bad": revision 1: reading the helm-inject.io/injectors annotation`) {
		t.Errorf("status with a broken older record: %v", err)
	}
}

// TestListGoesOnAfterAnUnreadableRelease: one release that cannot be
// read (its injector records do not decode; with --live, a kind the
// cluster no longer serves or a record that names another namespace) is
// listed with its error, named, and every other release is still read;
// Explain rewrites the error; the listing itself did not fail.
func TestListGoesOnAfterAnUnreadableRelease(t *testing.T) {
	withManifest := func(r *release.Release, m string) *release.Release { r.Manifest = m; return r }
	const cm = "---\n# Source: a.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata: {level: info}\n"
	cfg := memoryConfig(t,
		withManifest(revision("alpha", "shop", 1, `[]`), cm),
		withManifest(revision("broken", "shop", 1, `[{"name":`), cm),
		withManifest(revision("crd-gone", "shop", 1, `[]`), "---\n# Source: a.yaml\napiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n"),
		withManifest(revision("zulu", "shop", 2, `[]`), cm),
	)
	byName := func(list []*ReleaseState) map[string]*ReleaseState {
		m := map[string]*ReleaseState{}
		for _, r := range list {
			m[r.Name] = r
		}
		return m
	}
	list, err := NewList(cfg).Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	got := byName(list)
	if len(list) != 4 || got["alpha"].Error != "" || got["zulu"].Error != "" || got["crd-gone"].Error != "" ||
		!strings.HasPrefix(got["broken"].Error, `release "broken": revision 1: reading the helm-inject.io/injectors annotation`) ||
		got["broken"].Revision != 1 || got["broken"].Status != "deployed" || got["broken"].Chart != "api-0.1.0" || got["broken"].Namespace != "shop" {
		t.Errorf("list without --live: %+v", list)
	}

	owned := ownedByRelease(unstructuredFrom(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-config, namespace: shop}\ndata: {level: info}\n"), "alpha", "shop")
	zulu := ownedByRelease(owned, "zulu", "shop")
	ls := NewList(cfg)
	ls.Live = &Live{}
	ls.connect = func(*action.Configuration) (liveClients, error) {
		// alpha's and zulu's ConfigMap: one object, owned by zulu.
		return fakeClients(t, nil, zulu), nil
	}
	ls.Explain = func(err error) error { return fmt.Errorf("explained: %w", err) }
	list, err = ls.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	got = byName(list)
	if len(list) != 4 {
		t.Fatalf("list --live: %d releases, want 4: %+v", len(list), list)
	}
	if r := got["crd-gone"]; r.Live != nil || r.Error != `explained: release "crd-gone": example.com/v1 Widget w: the cluster does not serve example.com/v1, Kind=Widget: no matches for kind "Widget" in version "example.com/v1"` {
		t.Errorf("a release whose kind the cluster no longer serves: %+v, error %q", r.Live, r.Error)
	}
	if r := got["broken"]; r.Live != nil || !strings.HasPrefix(r.Error, `explained: release "broken": revision 1`) {
		t.Errorf("a release whose records do not decode: %+v, error %q", r.Live, r.Error)
	}
	if r := got["zulu"]; r.Error != "" || r.Live == nil || r.Live.Drifted {
		t.Errorf("zulu, after the unreadable ones: %+v, error %q; want read, in sync", r.Live, r.Error)
	}
	if r := got["alpha"]; r.Error != "" || r.Live == nil || !cmp.Equal(r.Live.Objects, []ObjectDrift{{Kind: "ConfigMap", Name: "web-config", Namespace: "shop", NotOwned: true}}) {
		t.Errorf("alpha, whose ConfigMap is zulu's: %+v, error %q; want read, not owned", r.Live, r.Error)
	}
	if names := []string{list[0].Name, list[1].Name, list[2].Name, list[3].Name}; !slices.Equal(names, []string{"alpha", "broken", "crd-gone", "zulu"}) {
		t.Errorf("order %v, want by name", names)
	}
}

// TestStatusAndListWithoutChartOrInfo: a record without a chart is shown
// as helm history and helm list show it, CHART MISSING, where status
// dereferenced it; list, which shows the releases helm-inject made (a
// chart annotation), leaves it out. A record without its info (helm's own
// list and status dereference it) shows the status unknown.
func TestStatusAndListWithoutChartOrInfo(t *testing.T) {
	noChart := revision("nochart", "shop", 1, `[]`)
	noChart.Chart = nil
	noMetadata := revision("nometa", "shop", 1, `[]`)
	noMetadata.Chart.Metadata = nil
	noInfo := revision("noinfo", "shop", 1, `[{"name":"log-shipper","version":"1.0.0"}]`)
	noInfo.Info = nil
	// Helm's drivers cannot write a record without info: written as a
	// Secret in helm's format, as anyone may.
	cs := k8sfake.NewClientset()
	for _, r := range []*release.Release{noChart, noMetadata, noInfo, revision("web", "shop", 1, `[]`)} {
		if _, err := cs.CoreV1().Secrets("shop").Create(t.Context(), storedRecord(t, r), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cfg := memoryConfig(t)
	cfg.Releases = storage.Init(driver.NewSecrets(cs.CoreV1().Secrets("shop")))
	for _, name := range []string{"nochart", "nometa"} {
		st, err := NewStatus(cfg).Run(t.Context(), name)
		if err != nil || st.Chart != "MISSING" || st.Source != "" || len(st.Injectors) != 0 || st.Status != "deployed" || len(st.History) != 1 {
			t.Errorf("status of a record without a chart (%s): %+v, %v; want CHART MISSING", name, st, err)
		}
	}
	st, err := NewStatus(cfg).Run(t.Context(), "noinfo")
	if err != nil || st.Status != "unknown" || st.Chart != "api-0.1.0" || len(st.Injectors) != 1 || st.History[0].Status != "unknown" {
		t.Errorf("status of a record without info: %+v, %v; want status unknown", st, err)
	}
	list, err := NewList(cfg).Run(t.Context())
	if err != nil || len(list) != 2 || list[0].Name != "noinfo" || list[0].Status != "unknown" || list[1].Name != "web" {
		t.Errorf("list: %+v, %v; want noinfo (unknown) and web", list, err)
	}
}

// TestListSelectsAsHelm: List reads the release storage itself (helm's
// action.List dereferences a record's info and drops a status it does not
// know); on ordinary records it selects and orders what helm list --all
// does: every namespace's latest revision of each release, any status,
// sorted by name.
func TestListSelectsAsHelm(t *testing.T) {
	var rels []*release.Release
	add := func(name, ns string, version int, status rcommon.Status) {
		r := revision(name, ns, version, `[]`)
		r.Info.Status = status
		rels = append(rels, r)
	}
	add("web", "shop", 1, rcommon.StatusSuperseded)
	add("web", "shop", 2, rcommon.StatusDeployed)
	add("web", "prod", 5, rcommon.StatusFailed)
	add("api", "prod", 1, rcommon.StatusUninstalled)
	add("cache", "shop", 3, rcommon.StatusPendingUpgrade)
	add("cache", "shop", 2, rcommon.StatusDeployed)
	add("db", "prod", 1, rcommon.StatusPendingInstall)
	add("batch", "shop", 1, rcommon.StatusUninstalling)
	add("batch", "shop", 2, rcommon.StatusPendingRollback)
	cfg := memoryConfig(t, rels...)
	cfg.Releases.Driver.(*driver.Memory).SetNamespace("") // list -A

	helm := action.NewList(cfg)
	helm.All = true
	helm.SetStateMask()
	found, err := helm.Run()
	if err != nil {
		t.Fatal(err)
	}
	want, err := V1Releases(found)
	if err != nil {
		t.Fatal(err)
	}
	got, err := NewList(cfg).latest()
	if err != nil {
		t.Fatal(err)
	}
	key := func(rs []*release.Release) []string {
		var out []string
		for _, r := range rs {
			out = append(out, fmt.Sprintf("%s/%s v%d", r.Namespace, r.Name, r.Version))
		}
		return out
	}
	// helm sorts by name only (web in prod and in shop may come in any
	// order); ours by name, then namespace.
	if diff := cmp.Diff(key(want), key(got), cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("releases (-helm +ours):\n%s", diff)
	}
	var names []string
	for _, r := range got {
		names = append(names, r.Name)
	}
	if !slices.IsSorted(names) || len(got) != 6 {
		t.Errorf("order %v, want 6 releases by name", key(got))
	}
}

// storedRecord is rel as helm's Secret storage keeps it (a Secret named
// sh.helm.release.v1.NAME.vN, labelled owner=helm, its release data the
// base64 of the gzipped JSON record), written here as anyone who may
// create Secrets can.
func storedRecord(t *testing.T, rel *release.Release) *corev1.Secret {
	t.Helper()
	js, err := json.Marshal(rel)
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	if _, err := w.Write(js); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("sh.helm.release.v1.%s.v%d", rel.Name, rel.Version),
			Labels: map[string]string{"owner": "helm", "name": rel.Name, "version": fmt.Sprint(rel.Version)}},
		Type: "helm.sh/release.v1",
		Data: map[string][]byte{"release": []byte(base64.StdEncoding.EncodeToString(gz.Bytes()))},
	}
}
