package chartify

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v4/pkg/chart/common"
	commonutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"

	"helm.sh/helm/v4/pkg/engine"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"

	"github.com/helm-inject/helm-inject/internal/benchchart"
)

// TestSortRenderedMatchesHelm: for real charts and a crafted set of files,
// sortRendered yields the documents, sources and order that Helm's
// releaseutil.SortManifests yields (plain manifests, then hooks).
func TestSortRenderedMatchesHelm(t *testing.T) {
	bench := filepath.Join(t.TempDir(), "bench")
	if err := benchchart.Write(bench, 30); err != nil {
		t.Fatal(err)
	}
	cases := map[string]map[string]string{
		"webapp": renderFiles(t, webapp),
		"api":    renderFiles(t, "../fixtures/charts/api"),
		"bench":  renderFiles(t, bench),
		// Helm's own test chart whose templates print values: two
		// documents that are no Kubernetes objects.
		"issue-9027": renderFiles(t, filepath.Join(helmModuleDir(t), "pkg", "cmd", "testdata", "testcharts", "issue-9027")),
		// Documents that are no objects sort by the kind they name, ""
		// when none: after the known kinds, first of the unknown ones.
		"not resources": {
			"n/templates/a.yaml":     "apiVersion: x/v1\nkind: Alpha\nmetadata:\n  name: a\n---\nglobal:\n  x: 1\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n",
			"n/templates/b.yaml":     "kind: Service\nmetadata:\n  name: no-api-version\n---\napiVersion: v1\nkind: Secret\ndata: {}\n---\n~\n",
			"n/templates/c.yaml":     "apiVersion: v1\nmetadata:\n  name: no-kind\n---\n{}\n",
			"n/templates/hooks.yaml": "metadata:\n  name: hook-without-kind\n  annotations:\n    helm.sh/hook: pre-install\n---\napiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\n  annotations:\n    helm.sh/hook: pre-install\n",
		},
		"crafted": {
			"c/templates/b.yaml":         "apiVersion: v1\nkind: Service\nmetadata:\n  name: s1\n---\napiVersion: x/v1\nkind: Zeta\nmetadata:\n  name: z\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm2\n",
			"c/templates/a.yaml":         "apiVersion: x/v1\nkind: Alpha\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm1\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n",
			"c/templates/_helpers.tpl":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: never\n",
			"c/templates/empty.yaml":     "  \n",
			"c/templates/off.yaml":       "# switched off by a value\n",
			"c/templates/partly.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm3\n---\n# the second one is off\n",
			"c/templates/hooks.yaml":     "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\n  annotations:\n    helm.sh/hook: pre-install,post-upgrade\n    helm.sh/hook-weight: \"5\"\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hc\n  annotations:\n    helm.sh/hook: pre-install\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: unknown-hook\n  annotations:\n    helm.sh/hook: at-lunch\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: t\n  annotations:\n    helm.sh/hook: Test-Success\n",
			"c/templates/annotated.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: sec\n  annotations:\n    other: x\n",
		},
	}
	for name, files := range cases {
		t.Run(name, func(t *testing.T) {
			hooks, manifests, err := releaseutil.SortManifests(copyFiles(files), nil, releaseutil.InstallOrder)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, m := range manifests {
				want = append(want, m.Name+"\n"+strings.TrimSpace(m.Content))
			}
			for _, h := range hooks {
				want = append(want, h.Path+"\n"+strings.TrimSpace(h.Manifest))
			}
			docs, err := sortRendered(copyFiles(files), nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range docs {
				got = append(got, d.Source+"\n"+d.Content)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("order differs from Helm's (-helm +ours):\n%s", diff)
			}
		})
	}
}

func copyFiles(m map[string]string) map[string]string {
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// renderFiles renders a chart with Helm's engine, without NOTES.txt.
func renderFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	ch, err := loader.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := chartutil.ProcessDependencies(ch, nil); err != nil {
		t.Fatal(err)
	}
	vals, err := commonutil.ToRenderValues(ch, nil, common.ReleaseOptions{Name: "r", Namespace: "ns", Revision: 1, IsInstall: true}, common.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	files, err := engine.Render(ch, vals)
	if err != nil {
		t.Fatal(fmt.Errorf("%s: %w", dir, err))
	}
	for k := range files {
		if strings.HasSuffix(k, "NOTES.txt") {
			delete(files, k)
		}
	}
	return files
}
