package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/helm-inject/helm-inject/internal/testfs"
)

// TestRenderMemoryCeiling: a chart whose template builds an 800 MB
// string (what no budget of bytes read can see) fails that render alone
// under the operator's memory ceiling: a non-zero exit, nothing on
// stdout, the process's peak RSS under the ceiling; the next render of
// another application succeeds. Without a ceiling (--max-memory-mib=0)
// the same render passes 512 MiB, so the test proves something.
func TestRenderMemoryCeiling(t *testing.T) {
	repo := t.TempDir()
	testfs.Write(t, filepath.Join(repo, "apps", "bomb"), map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: bomb\nversion: 0.1.0\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bomb\ndata:\n  size: {{ len (repeat 200000000 \"xxxx\") | quote }}\n",
	})
	copyChart(t, filepath.Join(repo, "apps", "web"))
	generate := func(app string, args ...string) (stdout, stderr string, err error, maxRSS int64) {
		r := runChild(t, "helm-inject", filepath.Join(repo, "apps", app),
			[]string{"ARGOCD_APP_NAME=" + app, "ARGOCD_APP_NAMESPACE=shop", "ARGOCD_APP_SOURCE_PATH=apps/" + app, "KUBE_VERSION=1.31.4"},
			append([]string{"argocd", "generate", "--confine=off"}, args...)...)
		return r.stdout, r.stderr, r.err, r.rssKiB << 10
	}
	const ceiling = 256 << 20
	out, stderr, err, rss := generate("bomb", "--max-memory-mib=256")
	if err == nil || out != "" {
		t.Errorf("the bomb under a 256 MiB ceiling: %v, stdout %d bytes; want a failure and nothing printed", err, len(out))
	}
	if !strings.Contains(stderr, "out of memory") && !strings.Contains(stderr, "SIGSEGV") {
		t.Errorf("the bomb's stderr does not say why it stopped:\n%.600s", stderr)
	}
	if rss >= ceiling {
		t.Errorf("the bomb's peak RSS %d MiB, want it under the 256 MiB ceiling", rss>>20)
	}
	if out, stderr, err, _ := generate("web"); err != nil || !strings.Contains(out, "kind: Deployment") {
		t.Errorf("the next render: %v\n%s", err, stderr)
	}
	if _, _, err, rss := generate("bomb", "--max-memory-mib=0"); rss < ceiling {
		t.Errorf("without a ceiling the bomb peaked at %d MiB (%v): the test proves nothing", rss>>20, err)
	}
}
