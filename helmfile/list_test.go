package helmfile

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v4/pkg/action"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	kubefake "helm.sh/helm/v4/pkg/kube/fake"
	hrelease "helm.sh/helm/v4/pkg/release"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	rspb "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage"
	"helm.sh/helm/v4/pkg/storage/driver"
)

// TestListReleasesAsHelmList: the list answer for helmfile's filters, on a
// namespace holding api (revisions 1 superseded, 2 deployed, 3 failed),
// api-2 (deployed) and web (pending install): the newest revision of the
// one name, shown only if its status is asked for; any other filter is
// helm's own regular expression over every name.
func TestListReleasesAsHelmList(t *testing.T) {
	mem := driver.NewMemory()
	mem.SetNamespace("ns")
	store := storage.Init(mem)
	for _, r := range []struct {
		name    string
		version int
		status  rcommon.Status
	}{
		{"api", 1, rcommon.StatusSuperseded},
		{"api", 3, rcommon.StatusFailed},
		{"api", 2, rcommon.StatusDeployed},
		{"api-2", 1, rcommon.StatusDeployed},
		{"web", 1, rcommon.StatusPendingInstall},
	} {
		rel := &rspb.Release{Name: r.name, Namespace: "ns", Version: r.version, Info: &rspb.Info{Status: r.status},
			Chart: &chart.Chart{Metadata: &chart.Metadata{Name: "c", Version: "1.0.0"}}}
		if err := store.Create(rel); err != nil {
			t.Fatal(err)
		}
	}
	helmfileStates := func(l *action.List) { l.Uninstalling, l.Deployed, l.Failed, l.Pending = true, true, true, true }
	deployedOnly := func(l *action.List) { l.Deployed = true }
	for _, tt := range []struct {
		filter string
		states func(*action.List)
		want   []string
	}{
		{"^api$", helmfileStates, []string{"api:3:failed"}},
		{"^api$", deployedOnly, nil},
		{"^api-2$", helmfileStates, []string{"api-2:1:deployed"}},
		{"^web$", helmfileStates, []string{"web:1:pending-install"}},
		{"^web$", deployedOnly, nil},
		{"^nothere$", helmfileStates, nil},
		{"api", helmfileStates, []string{"api:3:failed", "api-2:1:deployed"}},
		{"^a.i$", helmfileStates, []string{"api:3:failed"}},
	} {
		t.Run(tt.filter, func(t *testing.T) {
			cfg := &action.Configuration{Releases: store, KubeClient: &kubefake.PrintingKubeClient{Out: io.Discard}}
			l := action.NewList(cfg)
			l.Filter = tt.filter
			tt.states(l)
			l.SetStateMask()
			rels, err := listReleases(cfg, l)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range rels {
				got = append(got, fmt.Sprintf("%s:%d:%s", r.Name, r.Version, r.Info.Status))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
	t.Run("unreachable cluster", func(t *testing.T) {
		down := errors.New("connection refused")
		for _, filter := range []string{"^api$", "api"} {
			cfg := &action.Configuration{Releases: store, KubeClient: &kubefake.FailingKubeClient{ConnectionError: down}}
			l := action.NewList(cfg)
			l.Filter = filter
			if _, err := listReleases(cfg, l); !errors.Is(err, down) {
				t.Errorf("filter %s: error %v, want the connection error", filter, err)
			}
		}
	})
	t.Run("a store that fails", func(t *testing.T) {
		cfg := &action.Configuration{Releases: storage.Init(failingDriver{mem}), KubeClient: &kubefake.PrintingKubeClient{Out: io.Discard}}
		l := action.NewList(cfg)
		l.Filter = "^api$"
		if _, err := listReleases(cfg, l); err == nil || !strings.Contains(err.Error(), "storage is down") {
			t.Errorf("error %v, want the store's", err)
		}
	})
}

// failingDriver is a release store whose queries fail.
type failingDriver struct{ *driver.Memory }

func (failingDriver) Query(map[string]string) ([]hrelease.Releaser, error) {
	return nil, errors.New("storage is down")
}
