package release

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/action"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"

	"github.com/helm-inject/helm-inject/chartify"
	"github.com/helm-inject/helm-inject/inject"
)

// storedManifestChart has what issue 57 named: documents followed by
// blank lines (after a hook in the same file too), a document ending in a
// trim marker, a file ending in blank lines, and chart defaults set to
// null that a template guards with hasKey (cilium's debug.verbose and
// nodePort.addresses).
var storedManifestChart = map[string]string{
	"Chart.yaml": "apiVersion: v2\nname: parity\nversion: 0.1.0\n",
	"values.yaml": `debug:
  enabled: false
  verbose: ~
nodePort:
  addresses: ~
`,
	"templates/mixed.yaml": `apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ .Release.Name }}

---
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-check
  annotations:
    helm.sh/hook: post-install
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: check
        image: busybox


---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
data:
  debug: {{ .Values.debug.enabled | quote }}
{{- if hasKey .Values.debug "verbose" }}
  debug-verbose: "{{ .Values.debug.verbose }}"
{{- end }}
{{- if hasKey .Values.nodePort "addresses" }}
  nodeport-addresses: {{ get .Values.nodePort "addresses" | join "," | quote }}
{{- end -}}
`,
	"templates/service.yaml": `apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}
spec:
  ports:
  - port: 80


`,
}

// TestApplyStoresHelm4Manifest: the manifest and hooks apply stores are
// the bytes helm 4's install stores, with and without --no-hooks. The
// wanted bytes are what `helm get hooks` prints, and `helm get manifest`
// less the line end it adds, after the helm 4.3.2 CLI installed
// storedManifestChart on a cluster; Helm's own Install in memory is held
// to them too. helm 3 stores other
// bytes (no blank line after a document but a file's last, and
// `debug-verbose: ""` and `nodeport-addresses: ""` from the null
// defaults): issue 57's two symptoms, which were read off helm 3.
func TestApplyStoresHelm4Manifest(t *testing.T) {
	dir := t.TempDir()
	for name, data := range storedManifestChart {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const (
		manifest = "---\n# Source: parity/templates/mixed.yaml\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: ws\n\n\n" +
			"---\n# Source: parity/templates/mixed.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ws-config\ndata:\n  debug: \"false\"\n" +
			"---\n# Source: parity/templates/service.yaml\napiVersion: v1\nkind: Service\nmetadata:\n  name: ws\nspec:\n  ports:\n  - port: 80\n\n\n\n"
		hooks = "---\n# Source: parity/templates/mixed.yaml\napiVersion: batch/v1\nkind: Job\nmetadata:\n  name: ws-check\n  annotations:\n    helm.sh/hook: post-install\n" +
			"spec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: check\n        image: busybox\n\n\n\n"
	)
	for _, tc := range []struct {
		name          string
		noHooks       bool
		vals          map[string]any
		manifest, hks string
	}{
		{name: "--no-hooks", noHooks: true, manifest: manifest, hks: hooks},
		{name: "hooks", manifest: manifest, hks: hooks},
		// A value the user sets is rendered where the null default was not.
		{name: "a null default set by the user", noHooks: true, vals: map[string]any{"debug": map[string]any{"verbose": "flow"}},
			manifest: strings.Replace(manifest, "debug: \"false\"\n", "debug: \"false\"\n  debug-verbose: \"flow\"\n", 1), hks: hooks},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch, _, err := chartify.Load(dir, chartify.LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			cfg := memoryConfig(t)
			cfg.RESTClientGetter = newFakeCluster()
			a := NewApply(cfg)
			a.DisableHooks = tc.noHooks
			a.Inputs = Inputs{Namespace: "ns", SkipLiveCheck: true, Injectors: &inject.Declared{}}
			res, err := a.Run(t.Context(), "ws", Source{Ref: dir, Chart: ch}, tc.vals)
			if err != nil {
				t.Fatal(err)
			}

			helmCfg := memoryConfig(t)
			inst := action.NewInstall(helmCfg)
			inst.ReleaseName, inst.Namespace, inst.DisableHooks = "ws", "ns", tc.noHooks
			helmCh, _, err := chartify.Load(dir, chartify.LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			r, err := inst.RunWithContext(t.Context(), helmCh, tc.vals)
			if err != nil {
				t.Fatal(err)
			}
			helm := r.(*helmrelease.Release)

			for who, rel := range map[string]*helmrelease.Release{"apply": res.Release, "helm's Install": helm} {
				if rel.Manifest != tc.manifest {
					t.Errorf("%s stored the manifest\n%q\nwant helm 4's\n%q", who, rel.Manifest, tc.manifest)
				}
				if got := storedHooks(rel); got != tc.hks {
					t.Errorf("%s stored the hooks\n%q\nwant helm 4's\n%q", who, got, tc.hks)
				}
			}
		})
	}
}

// storedHooks is what `helm get hooks` prints of rel.
func storedHooks(rel *helmrelease.Release) string {
	var b strings.Builder
	for _, h := range rel.Hooks {
		b.WriteString("---\n# Source: " + h.Path + "\n" + h.Manifest + "\n")
	}
	return b.String()
}
