package release

import (
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/kube"
)

// TestWaitStrategy: the SDK always gets a strategy: hookOnly unless --wait
// names one; --rollback-on-failure waits with the watcher unless --wait
// names another, as helm 4 does. Waiting for resources (and showing them
// in progress) follows.
func TestWaitStrategy(t *testing.T) {
	for _, tt := range []struct {
		o         Options
		want      kube.WaitStrategy
		resources bool
	}{
		{Options{}, kube.HookOnlyStrategy, false},
		{Options{Wait: kube.HookOnlyStrategy}, kube.HookOnlyStrategy, false},
		{Options{Wait: kube.StatusWatcherStrategy}, kube.StatusWatcherStrategy, true},
		{Options{Wait: kube.LegacyStrategy}, kube.LegacyStrategy, true},
		{Options{RollbackOnFailure: true}, kube.StatusWatcherStrategy, true},
		{Options{RollbackOnFailure: true, Wait: kube.LegacyStrategy}, kube.LegacyStrategy, true},
		{Options{WaitForJobs: true}, kube.HookOnlyStrategy, false},
	} {
		if got := tt.o.waitStrategy(); got != tt.want {
			t.Errorf("%+v: strategy %q, want %q", tt.o, got, tt.want)
		}
		if got := tt.o.waitsForResources(); got != tt.resources {
			t.Errorf("%+v: waits for resources %v, want %v", tt.o, got, tt.resources)
		}
	}
}

// TestOptionsRefusedTogether: what helm 4 refuses is refused before
// anything is planned, with both flags named.
func TestOptionsRefusedTogether(t *testing.T) {
	for _, tt := range []struct {
		o    Options
		want string
	}{
		{Options{ServerSide: "yes"}, `--server-side "yes": must be true, false or auto`},
		{Options{ForceConflicts: true, ForceReplace: true}, "--force-conflicts and --force-replace (--force) cannot be used together"},
		{Options{ForceConflicts: true, ServerSide: "false"}, "--force-conflicts needs server-side apply"},
	} {
		if err := tt.o.check(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v, want %q", tt.o, err, tt.want)
		}
	}
	for _, o := range []Options{{}, {ServerSide: "auto"}, {ServerSide: "true", ForceConflicts: true}, {ServerSide: "false", ForceReplace: true}} {
		if err := o.check(); err != nil {
			t.Errorf("%+v: %v", o, err)
		}
	}
}
