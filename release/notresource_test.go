package release

import (
	"strings"
	"testing"

	"github.com/helm-inject/helm-inject/chartify"
	"github.com/helm-inject/helm-inject/inject"
	"github.com/helm-inject/helm-inject/internal/testfs"
	"github.com/helm-inject/helm-inject/manifest"
)

// TestCheckObjects: a release holding a document that is no Kubernetes
// object is refused with helm's words for an install or an upgrade,
// naming the release and the template; resources and documents that hold
// no object (comments, a YAML null) pass.
func TestCheckObjects(t *testing.T) {
	parse := func(source, content string) manifest.Document {
		t.Helper()
		d, err := manifest.ParseRendered(source, content)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	var (
		cm        = parse("c/templates/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm")
		comment   = parse("c/templates/off.yaml", "# switched off")
		null      = parse("c/templates/null.yaml", "~")
		values    = parse("c/templates/values.yaml", "global:\n  x: 1")
		noKind    = parse("c/templates/nokind.yaml", "apiVersion: v1\nmetadata:\n  name: n")
		noVersion = parse("c/templates/noversion.yaml", "kind: Secret\nmetadata:\n  name: n")
		nameless  = parse("c/templates/nameless.yaml", "apiVersion: v1\nkind: ConfigMap\ndata: {}")
		elsewhere = parse("c/templates/elsewhere.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  namespace: other")
	)
	tests := []struct {
		name    string
		docs    []manifest.Document
		upgrade bool
		want    string
	}{
		{"resources and empty documents", []manifest.Document{cm, comment, null}, false, ""},
		{"no apiVersion nor kind", []manifest.Document{cm, values}, false,
			`release "r": c/templates/values.yaml: unable to build kubernetes objects from release manifest: error validating data: [apiVersion not set, kind not set]`},
		{"no kind, upgrade", []manifest.Document{noKind}, true,
			`release "r": c/templates/nokind.yaml: unable to build kubernetes objects from new release manifest: error validating data: kind not set`},
		{"no apiVersion", []manifest.Document{noVersion}, false,
			`release "r": c/templates/noversion.yaml: unable to build kubernetes objects from release manifest: error validating data: apiVersion not set`},
		{"no name", []manifest.Document{nameless}, false,
			`release "r": c/templates/nameless.yaml: unable to continue with install: could not get information about the resource ConfigMap "" in namespace "ns": resource name may not be empty`},
		{"no name, in its own namespace, upgrade", []manifest.Document{elsewhere}, true,
			`release "r": c/templates/elsewhere.yaml: unable to continue with update: could not get information about the resource ConfigMap "" in namespace "other": resource name may not be empty`},
		{"several", []manifest.Document{cm, values, noKind, nameless}, false,
			`release "r": c/templates/values.yaml: unable to build kubernetes objects from release manifest: error validating data: [apiVersion not set, kind not set] (2 more documents are no Kubernetes object: c/templates/nokind.yaml, c/templates/nameless.yaml)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckObjects("r", "ns", tt.docs, tt.upgrade)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("CheckObjects =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// TestApplyRefusesNotResourcesBeforeWriting: apply of a chart that renders
// a document that is no Kubernetes object (as helm's issue-9027 chart
// does) is refused before anything is written, for a first install and
// for an upgrade, with helm's words, the release and the template named;
// diff refuses it the same way. Helm's fake kube client, which validates
// nothing, would have installed it.
func TestApplyRefusesNotResourcesBeforeWriting(t *testing.T) {
	write := func(templates map[string]string) Source {
		dir := t.TempDir()
		files := map[string]string{"Chart.yaml": "apiVersion: v2\nname: nr\nversion: 0.1.0\n"}
		for name, text := range templates {
			files["templates/"+name] = text
		}
		testfs.Write(t, dir, files)
		ch, _, err := chartify.Load(dir, chartify.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return Source{Ref: dir, Chart: ch}
	}
	const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n"
	good := write(map[string]string{"cm.yaml": cm})
	bad := write(map[string]string{"cm.yaml": cm, "values.yaml": "{{ .Values | toYaml }}\nx: 1\n"})
	tests := []struct {
		name      string
		installed bool
		want      string
	}{
		{"install", false, `release "nr": nr/templates/values.yaml: unable to build kubernetes objects from release manifest: error validating data: [apiVersion not set, kind not set]`},
		{"upgrade", true, `release "nr": nr/templates/values.yaml: unable to build kubernetes objects from new release manifest: error validating data: [apiVersion not set, kind not set]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := memoryConfig(t)
			cfg.RESTClientGetter = newFakeCluster()
			in := Inputs{Namespace: "shop", SkipLiveCheck: true, Injectors: &inject.Declared{}}
			revisions := 0
			if tt.installed {
				a := NewApply(cfg)
				a.Inputs = in
				if _, err := a.Run(t.Context(), "nr", good, nil); err != nil {
					t.Fatal(err)
				}
				revisions = 1
			}
			a := NewApply(cfg)
			a.Inputs = in
			if _, err := a.Run(t.Context(), "nr", bad, nil); err == nil || err.Error() != tt.want {
				t.Errorf("apply: %v\nwant %s", err, tt.want)
			}
			if all, _ := cfg.Releases.ListReleases(); len(all) != revisions {
				t.Errorf("%d revisions stored after the refused apply, want %d", len(all), revisions)
			}
			d := NewDiff(cfg)
			d.Inputs = in
			d.AllowUnreleased = true
			if _, err := d.Run(t.Context(), "nr", bad, nil); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("diff: %v\nwant %s", err, tt.want)
			}
		})
	}
}
