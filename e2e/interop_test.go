package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// helm4Bin is the helm 4 CLI installed under the file name helm
// (hack/tools.sh), as users run it: helm 4 names its field manager after
// its file name.
func helm4Bin(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(filepath.Dir(cluster.ToolsBin), "helm4", "helm")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("the helm 4 CLI as helm: %v (run bash hack/tools.sh helm4)", err)
	}
	return bin
}

// storedRevision is what a test reads of one stored revision.
type storedRevision struct {
	Version     int    `json:"version"`
	ApplyMethod string `json:"apply_method"`
	Info        struct {
		Status string `json:"status"`
	} `json:"info"`
}

// storedRevisions decodes every stored revision of a release, by number.
func storedRevisions(t *testing.T, ns, name string) map[int]storedRevision {
	t.Helper()
	out := map[int]storedRevision{}
	for _, b := range decodedRecords(t, ns, name) {
		var r storedRevision
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		out[r.Version] = r
	}
	return out
}

func liveDeployment(t *testing.T, ns, name string) *appsv1.Deployment {
	t.Helper()
	d, err := clientset(t).AppsV1().Deployments(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// liveManagers are the field managers of a live Deployment's own fields
// (not its status, which the controllers write).
func liveManagers(t *testing.T, ns, name string) []string {
	t.Helper()
	d := liveDeployment(t, ns, name)
	var managers []string
	for _, m := range d.ManagedFields {
		if m.Subresource == "" && !slices.Contains(managers, m.Manager) {
			managers = append(managers, m.Manager)
		}
	}
	slices.Sort(managers)
	return managers
}

func liveContainers(t *testing.T, ns, name string) []string {
	t.Helper()
	d := liveDeployment(t, ns, name)
	var names []string
	for _, c := range d.Spec.Template.Spec.Containers {
		names = append(names, c.Name)
	}
	return names
}

// TestReleasesSharedWithHelm3AndHelm4: every pair of creator and follower
// among the helm 3 CLI, the helm 4 CLI (as helm) and helm-inject installs,
// upgrades with a changed value, rolls back and uninstalls one release.
// Each step succeeds (no server-side apply conflict); the helm 3 and helm
// 4 CLIs read the whole history; a server-side release stays server-side
// (apply_method ssa on every revision) when helm 4 or helm-inject follows;
// the live Deployment has the one field manager helm; diff exits 0 right
// after an apply that changed nothing; and a helm 4 upgrade without the
// injector removes the sidecar from the live Deployment.
func TestReleasesSharedWithHelm3AndHelm4(t *testing.T) {
	chart := filepath.Join(repoRoot(t), apiChart)
	tools := map[string]string{"helm3": helmBin(t), "helm4": helm4Bin(t), "helm-inject": filepath.Join(binDir, "helm-inject")}
	injector := []string{"--injector", "sidecar-injector f=FILE"}
	// upgrade installs or upgrades rel with the tool, logLevel=level.
	upgrade := func(t *testing.T, tool, rel, ns, level string) {
		t.Helper()
		args := []string{"upgrade", "--install", rel, chart, "-n", ns, "--set", "logLevel=" + level}
		if tool == "helm-inject" {
			args = append(args, injector...)
		}
		command{}.mustRun(t, tools[tool], args...)
	}
	// The tool that rolls back and uninstalls: helm-inject leaves those to
	// helm, so its turn is helm 4's.
	helmOf := func(tool string) string {
		if tool == "helm-inject" {
			return tools["helm4"]
		}
		return tools[tool]
	}
	names := []string{"helm3", "helm4", "helm-inject"}
	for _, creator := range names {
		for _, follower := range names {
			t.Run(creator+"_then_"+follower, func(t *testing.T) {
				ns := namespace(t)
				rel := "shared"
				upgrade(t, creator, rel, ns, "info")
				serverSide := storedRevisions(t, ns, rel)[1].ApplyMethod == "ssa"
				if want := creator != "helm3"; serverSide != want {
					t.Errorf("%s's install: server-side %v, want %v", creator, serverSide, want)
				}
				upgrade(t, follower, rel, ns, "debug")
				if got := configMapData(t, ns, rel+"-config")["logLevel"]; got != "debug" {
					t.Errorf("after %s's upgrade logLevel is %q", follower, got)
				}
				if follower == "helm-inject" {
					// Nothing changed: diff says so, and apply makes no revision.
					r := helmInject(t, append([]string{"diff", "upgrade", rel, chart, "-n", ns, "--set", "logLevel=debug", "--detailed-exitcode"}, injector...)...)
					if r.code != 0 {
						t.Errorf("diff right after the apply: want exit 0:\n%s", r)
					}
				}
				command{}.mustRun(t, helmOf(follower), "rollback", rel, "1", "-n", ns)
				for _, reader := range []string{"helm3", "helm4"} {
					out := command{}.mustRun(t, tools[reader], "history", rel, "-n", ns, "-o", "json").stdout
					var hist []struct{ Revision int }
					if err := json.Unmarshal([]byte(out), &hist); err != nil {
						t.Fatalf("%s history: %v\n%s", reader, err, out)
					}
					if len(hist) != 3 {
						t.Errorf("%s history reads %d revisions, want 3:\n%s", reader, len(hist), out)
					}
				}
				revs := storedRevisions(t, ns, rel)
				if serverSide && follower != "helm3" {
					for v, r := range revs {
						if r.ApplyMethod != "ssa" {
							t.Errorf("revision %d (%s after %s) has apply_method %q, want ssa", v, follower, creator, r.ApplyMethod)
						}
					}
				}
				if m := liveManagers(t, ns, rel); !slices.Equal(m, []string{"helm"}) {
					t.Errorf("live field managers %v, want [helm]", m)
				}
				command{}.mustRun(t, helmOf(follower), "uninstall", rel, "-n", ns)
				if n := len(storedRevisions(t, ns, rel)); n != 0 {
					t.Errorf("%d revisions left after uninstall", n)
				}
			})
		}
	}

	// helm-inject injects; a plain helm 4 upgrade (the same field manager)
	// takes the sidecar away again.
	t.Run("helm4_upgrade_removes_the_sidecar", func(t *testing.T) {
		ns := namespace(t)
		upgrade(t, "helm-inject", "side", ns, "info")
		if c := liveContainers(t, ns, "side"); !slices.Contains(c, "sidecar") {
			t.Fatalf("helm-inject's install: containers %v", c)
		}
		upgrade(t, "helm4", "side", ns, "info")
		if c := liveContainers(t, ns, "side"); slices.Contains(c, "sidecar") {
			t.Errorf("after a helm 4 upgrade without the injector: containers %v", c)
		}
		if got := storedRevisions(t, ns, "side")[2].ApplyMethod; got != "ssa" {
			t.Errorf("helm 4's upgrade: apply_method %q", got)
		}
	})

	// --server-side=false stores csa, and an upgrade follows it.
	t.Run("server_side_false", func(t *testing.T) {
		ns := namespace(t)
		mustHelmInject(t, append([]string{"apply", "csa", chart, "-n", ns, "--server-side=false"}, injector...)...)
		mustHelmInject(t, append([]string{"apply", "csa", chart, "-n", ns, "--set", "logLevel=warn"}, injector...)...)
		revs := storedRevisions(t, ns, "csa")
		for _, v := range []int{1, 2} {
			if revs[v].ApplyMethod != "csa" {
				t.Errorf("revision %d: apply_method %q, want csa", v, revs[v].ApplyMethod)
			}
		}
	})
}
