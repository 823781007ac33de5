package release

import (
	rcommon "helm.sh/helm/v4/pkg/release/common"
	"io"
	"log/slog"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"

	kubefake "helm.sh/helm/v4/pkg/kube/fake"
	release "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage"
	"helm.sh/helm/v4/pkg/storage/driver"

	"github.com/helm-inject/helm-inject/chartify"
	"github.com/helm-inject/helm-inject/inject"
)

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
	cfg := memoryConfig(t,
		revision("web", "shop", 1, `[{"name":"log-shipper","version":"1.0.0","digest":"sha256:a"}]`),
		revision("web", "shop", 2, `[{"name":"log-shipper","version":"1.1.0","digest":"sha256:b"},{"name":"sidecar-injector f=FILE","digest":"sha256:c"}]`),
	)
	found, _ := cfg.Releases.Get("web", 1)
	old, _ := V1Release(found)
	old.Info.Status = rcommon.StatusSuperseded
	_ = cfg.Releases.Update(old)
	st, err := NewStatus(cfg).Run(t.Context(), "web")
	if err != nil {
		t.Fatal(err)
	}
	if st.Revision != 2 || len(st.Injectors) != 2 || st.Injectors[0].Version != "1.1.0" || st.Injectors[1].Name != "sidecar-injector f=FILE" || st.Source != "./api" {
		t.Errorf("status = %+v", st)
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
}
