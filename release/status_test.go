package release

import (
	rcommon "helm.sh/helm/v4/pkg/release/common"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"

	kubefake "helm.sh/helm/v4/pkg/kube/fake"
	hrelease "helm.sh/helm/v4/pkg/release"
	release "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage"
	"helm.sh/helm/v4/pkg/storage/driver"

	"github.com/google/go-cmp/cmp"

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
	if _, err := NewList(broken).Run(t.Context()); err == nil || !strings.Contains(err.Error(), `release "bad" in namespace "shop"`) {
		t.Errorf("list with a broken record: %v", err)
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
