// Package argocde2e runs helm-inject's Config Management Plugin through Argo
// CD's own code: the cmp-server (cmpserver) serves the shipped
// deploy/argocd/plugin.yaml on a unix socket, and the repo-server's manifest
// generation (reposerver/repository.GenerateManifests) discovers it for an
// application folder, streams the repository to it and reads the manifests
// back, exactly as in an Argo CD installation. The manifests are then
// created on the real test control plane.
package argocde2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/argoproj/argo-cd/v3/cmpserver"
	"github.com/argoproj/argo-cd/v3/cmpserver/plugin"
	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"github.com/argoproj/argo-cd/v3/reposerver/apiclient"
	"github.com/argoproj/argo-cd/v3/reposerver/repository"
	utilio "github.com/argoproj/argo-cd/v3/util/io"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"

	"github.com/helm-inject/helm-inject/internal/testenv"
)

// Set once in TestMain, only read afterwards.
var (
	cluster *testenv.Env
	binDir  string
	root    string
)

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	// This module's folder is e2e-argocd/ in the helm-inject checkout.
	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	root = filepath.Dir(wd)
	// hack/argocd-e2e.sh builds helm-inject with the main module's Go and
	// says where; run by hand, the test builds it.
	if binDir = os.Getenv("HELM_INJECT_E2E_BIN"); binDir == "" {
		if binDir, err = os.MkdirTemp("", "helm-inject-argocd-bin-"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(binDir)
		for _, pkg := range []string{".", "./fixtures/injectors/sidecar-injector", "./fixtures/injectors/escape-probe"} {
			cmd := exec.Command("go", "build", "-o", binDir+string(filepath.Separator), pkg)
			cmd.Dir = root
			if out, err := cmd.CombinedOutput(); err != nil {
				fmt.Fprintf(os.Stderr, "building %s: %v\n%s", pkg, err, out)
				return 1
			}
		}
	}
	return testenv.RunTests(m, testenv.Options{}, func(e *testenv.Env) { cluster = e })
}

// serveShippedPlugin runs Argo CD's cmp-server with deploy/argocd/plugin.yaml
// on a socket in a fresh plugin folder, as the sidecar does, with the
// sidecar's environment (helm-inject on PATH) and the operator's policy
// on the commands' lines: every command confined or failing
// (--confine=required), the allowed injector, and generateArgs.
func serveShippedPlugin(t *testing.T, generateArgs ...string) *plugin.PluginConfig {
	t.Helper()
	// A unix socket path has at most 107 bytes: keep it short.
	sockDir, err := os.MkdirTemp("", "cmp-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	t.Setenv("ARGOCD_PLUGINSOCKFILEPATH", sockDir)
	t.Setenv("ARGOCD_CMP_WORKDIR", t.TempDir())
	t.Setenv("PATH", binDir+string(os.PathListSeparator)+os.Getenv("PATH"))

	cfg, err := plugin.ReadPluginConfig(filepath.Join(root, "deploy", "argocd"))
	if err != nil {
		t.Fatalf("Argo CD refuses the shipped plugin.yaml: %v", err)
	}
	// Every command through Argo CD's own servers is confined, or fails.
	// The shipped library folder is the sidecar's, not this machine's:
	// none unless generateArgs names one.
	cfg.Spec.Generate.Command = append(cfg.Spec.Generate.Command, append([]string{"--confine=required", "--allowed-commands=sidecar-injector", "--injector-library="}, generateArgs...)...)
	cfg.Spec.Discover.Find.Command.Command = append(cfg.Spec.Discover.Find.Command.Command, "--confine=required")
	cfg.Spec.Parameters.Dynamic.Command = append(cfg.Spec.Parameters.Dynamic.Command, "--confine=required")
	srv, err := cmpserver.NewServer(plugin.CMPServerInitConstants{PluginConfig: *cfg})
	if err != nil {
		t.Fatal(err)
	}
	grpcServer, err := srv.CreateGRPC()
	if err != nil {
		t.Fatal(err)
	}
	lis, err := (&net.ListenConfig{}).Listen(t.Context(), "unix", cfg.Address())
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = grpcServer.Serve(lis) }()
	t.Cleanup(grpcServer.Stop)
	return cfg
}

// fleetRepo is a Git repository as the repo-server checks it out: the
// webapp chart as application apps/web with its pins, a values file
// outside it, and an injector library.
func fleetRepo(t *testing.T) string {
	t.Helper()
	repo := filepath.Join(t.TempDir(), "repo")
	for src, dst := range map[string]string{
		"fixtures/charts/webapp":     "apps/web",
		"fixtures/injectors/library": "injectors",
	} {
		if err := os.CopyFS(filepath.Join(repo, dst), os.DirFS(filepath.Join(root, src))); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(repo, "envs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "envs", "prod.yaml"), []byte("replicas: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pin := exec.Command(filepath.Join(binDir, "helm-inject"), "argocd", "pin", "--injector-library", filepath.Join(repo, "injectors"), "--with", "sidecar@^1", filepath.Join(repo, "apps", "web"))
	if out, err := pin.CombinedOutput(); err != nil {
		t.Fatalf("helm-inject argocd pin: %v\n%s", err, out)
	}
	return repo
}

func str(s string) *string { return &s }

// clusterVersions are what Argo CD's application controller sends the
// repo-server: the cluster's version and its API versions, as group/version
// and group/version/Kind.
func clusterVersions(t *testing.T, dc discovery.DiscoveryInterface) (string, []string) {
	t.Helper()
	v, err := dc.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	_, lists, err := dc.ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	var apis []string
	for _, l := range lists {
		apis = append(apis, l.GroupVersion)
		for _, r := range l.APIResources {
			if !strings.Contains(r.Name, "/") {
				apis = append(apis, l.GroupVersion+"/"+r.Kind)
			}
		}
	}
	slices.Sort(apis)
	return strings.TrimPrefix(v.GitVersion, "v"), slices.Compact(apis)
}

// TestArgoCDGeneratesThroughItsPlugin: the repo-server path discovers the
// shipped plugin for the application folder, the plugin injects both an
// external and a built-in injector, and every manifest is accepted by the
// API server.
func TestArgoCDGeneratesThroughItsPlugin(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	serveShippedPlugin(t)
	repo := fleetRepo(t)
	cs, err := kubernetes.NewForConfig(cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	kubeVersion, apis := clusterVersions(t, cs.Discovery())

	params := v1alpha1.ApplicationSourcePluginParameters{
		{Name: "values-files", OptionalArray: &v1alpha1.OptionalArray{Array: []string{"../../envs/prod.yaml"}}},
		{Name: "set", OptionalMap: &v1alpha1.OptionalMap{Map: map[string]string{"greeting": "from-argo"}}},
		{Name: "inject", OptionalArray: &v1alpha1.OptionalArray{Array: []string{"sidecar-injector --name mesh-proxy FILE"}}},
		{Name: "with", OptionalArray: &v1alpha1.OptionalArray{Array: []string{"sidecar@^1"}}},
		{Name: "injector-library", String_: str("../../injectors")},
	}
	q := &apiclient.ManifestRequest{
		Repo:    &v1alpha1.Repository{Repo: "https://git.example/fleet.git"},
		AppName: "team-a_web", // an application outside Argo CD's namespace
		// The destination namespace.
		Namespace:      "shop",
		KubeVersion:    kubeVersion,
		ApiVersions:    apis,
		AppLabelKey:    "app.kubernetes.io/instance",
		TrackingMethod: string(v1alpha1.TrackingMethodAnnotation),
		ApplicationSource: &v1alpha1.ApplicationSource{
			RepoURL: "https://git.example/fleet.git", Path: "apps/web", TargetRevision: "main",
			// No plugin name: the repo-server discovers the plugin.
			Plugin: &v1alpha1.ApplicationSourcePlugin{Parameters: params},
		},
	}
	appPath := filepath.Join(repo, "apps", "web")
	res, err := repository.GenerateManifests(ctx, appPath, repo, "0123456789abcdef0123456789abcdef01234567", q, false, nil,
		resource.MustParse("0"), utilio.NewRandomizedTempPaths(t.TempDir()))
	if err != nil {
		t.Fatalf("Argo CD's manifest generation: %v", err)
	}
	if res.SourceType != string(v1alpha1.ApplicationSourceTypePlugin) {
		t.Errorf("source type %q, want Plugin", res.SourceType)
	}

	var objs []*unstructured.Unstructured
	for _, m := range res.Manifests {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON([]byte(m)); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, u)
	}
	dep := find(objs, "Deployment", "web-web")
	if dep == nil {
		t.Fatalf("no Deployment web-web (the release is named after the application, without its namespace prefix) among %d objects", len(objs))
	}
	containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	var names []string
	for _, c := range containers {
		names = append(names, c.(map[string]any)["name"].(string))
	}
	if !slices.Contains(names, "mesh-proxy") || !slices.Contains(names, "sidecar") {
		t.Errorf("Deployment containers %v: want the external (mesh-proxy) and the built-in (sidecar) injector's", names)
	}
	if r, _, _ := unstructured.NestedInt64(dep.Object, "spec", "replicas"); r != 2 {
		t.Errorf("replicas %d: the values file outside the application folder was not used", r)
	}
	if id := dep.GetAnnotations()["argocd.argoproj.io/tracking-id"]; !strings.HasPrefix(id, "team-a_web:apps/Deployment:shop/web-web") {
		t.Errorf("tracking id %q: Argo CD did not take the object as the application's", id)
	}
	if hook := find(objs, "Job", "web-setup"); hook == nil || hook.GetAnnotations()["helm.sh/hook"] != "pre-install" {
		t.Errorf("the chart's pre-install hook is missing or lost its annotation (Argo CD maps it to a sync hook)")
	}
	cm := find(objs, "ConfigMap", "web-info")
	if cm == nil || !strings.Contains(fmt.Sprint(cm.Object["data"]), "v"+kubeVersion) {
		t.Errorf("the chart did not see the cluster's Kubernetes version %s: %v", kubeVersion, cm)
	}

	createOnCluster(t, ctx, cs, objs, "shop")
}

func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

// createOnCluster creates the namespace ns and the CRDs, then every other
// object with a server-side dry run (in ns when it names none): the API
// server validates each one (schema, defaults, admission) without
// controllers acting on it.
func createOnCluster(t *testing.T, ctx context.Context, cs kubernetes.Interface, objs []*unstructured.Unstructured, ns string) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mapper := func() meta.RESTMapper {
		groups, err := restmapper.GetAPIGroupResources(cs.Discovery())
		if err != nil {
			t.Fatal(err)
		}
		return restmapper.NewDiscoveryRESTMapper(groups)
	}
	create := func(m meta.RESTMapper, o *unstructured.Unstructured, dryRun bool) error {
		gvk := o.GroupVersionKind()
		mapping, err := m.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return err
		}
		opts := metav1.CreateOptions{}
		if dryRun {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		var ri dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			in := o.GetNamespace()
			if in == "" {
				in = ns
			}
			ri = dyn.Resource(mapping.Resource).Namespace(in)
		}
		_, err = ri.Create(ctx, o, opts)
		return err
	}
	m := mapper()
	crds := 0
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" {
			if err := create(m, o, false); err != nil {
				t.Fatalf("creating CRD %s: %v", o.GetName(), err)
			}
			crds++
		}
	}
	if crds == 0 {
		t.Error("no CRD in the output: the chart's crds/ were not included")
	}
	// The new kinds must be served before objects of theirs are sent.
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		m = mapper()
		for _, o := range objs {
			gvk := o.GroupVersionKind()
			if _, err := m.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the CRDs' kinds are not served: %v", err)
	}
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" {
			continue
		}
		if err := create(m, o, true); err != nil {
			t.Errorf("the API server refuses %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
}

// TestArgoCDKeepsAnApplicationInItsRepository: through Argo CD's own
// repo-server and cmp-server, an Application cannot make the plugin read
// another application's checkout in the sidecar's work folder, or fetch a
// URL: not with a link inside its repository followed by ".." (Argo CD's
// own link check lets such a link through: it points inside the
// repository), and not with a set-file key that smuggles a second entry
// (helm's --set-file "greeting=FILE,x=cfg" would read FILE, or fetch a
// URL, into .Values.greeting, which the chart renders). The plugin
// refuses each, the request fails, and nothing of the file or the
// server's answer reaches the error; the server gets no request.
func TestArgoCDKeepsAnApplicationInItsRepository(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	serveShippedPlugin(t)
	repo := fleetRepo(t)
	// Another team's checkout beside this one in the cmp-server's work
	// folder (it unpacks each request into _cmp_server/ID), and a decoy
	// where the path points once cleaned lexically.
	const secret = "tenant-b-password-4711"
	work := os.Getenv("ARGOCD_CMP_WORKDIR")
	other := filepath.Join(work, "_cmp_server", "tenant-b", "secret.yaml")
	for path, content := range map[string]string{
		other: "greeting: " + secret + "\n",
		filepath.Join(repo, "tenant-b", "secret.yaml"): "greeting: decoy\n",
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// links/s leads to apps: "links/s/../.." is, lexically, the
	// repository's top, and, as the kernel resolves it, the folder the
	// cmp-server unpacked the repository into.
	if err := os.MkdirAll(filepath.Join(repo, "links"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../apps", filepath.Join(repo, "links", "s")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "apps", "web", "cfg.txt"), []byte("from the repository\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		fmt.Fprint(w, secret)
	}))
	defer srv.Close()

	for _, tc := range []struct {
		name    string
		param   v1alpha1.ApplicationSourcePluginParameter
		message string
	}{
		{
			name:    "a values file through a link and ..",
			param:   v1alpha1.ApplicationSourcePluginParameter{Name: "values-files", OptionalArray: &v1alpha1.OptionalArray{Array: []string{"../../links/s/../../tenant-b/secret.yaml"}}},
			message: `values file "../../links/s/../../tenant-b/secret.yaml" is outside the repository`,
		},
		{
			name:    "a set-file key smuggling a file entry",
			param:   v1alpha1.ApplicationSourcePluginParameter{Name: "set-file", OptionalMap: &v1alpha1.OptionalMap{Map: map[string]string{"greeting=" + other + ",x": "cfg.txt"}}},
			message: `set-file key "greeting=` + other + `,x" holds '='`,
		},
		{
			name:    "a set-file key smuggling a URL entry",
			param:   v1alpha1.ApplicationSourcePluginParameter{Name: "set-file", OptionalMap: &v1alpha1.OptionalMap{Map: map[string]string{"greeting=" + srv.URL + "/token,x": "cfg.txt"}}},
			message: `set-file key "greeting=` + srv.URL + `/token,x" holds '='`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := &apiclient.ManifestRequest{
				Repo:      &v1alpha1.Repository{Repo: "https://git.example/fleet.git"},
				AppName:   "web",
				Namespace: "shop",
				ApplicationSource: &v1alpha1.ApplicationSource{
					RepoURL: "https://git.example/fleet.git", Path: "apps/web", TargetRevision: "main",
					Plugin: &v1alpha1.ApplicationSourcePlugin{Parameters: v1alpha1.ApplicationSourcePluginParameters{
						tc.param,
						{Name: "with", OptionalArray: &v1alpha1.OptionalArray{Array: []string{"sidecar@^1"}}},
						{Name: "injector-library", String_: str("../../injectors")},
					}},
				},
			}
			res, err := repository.GenerateManifests(ctx, filepath.Join(repo, "apps", "web"), repo, "0123456789abcdef0123456789abcdef01234567", q, false, nil,
				resource.MustParse("0"), utilio.NewRandomizedTempPaths(t.TempDir()))
			if err == nil {
				t.Fatalf("Argo CD generated %d manifests:\n%s", len(res.Manifests), strings.Join(res.Manifests, "\n"))
			}
			if !strings.Contains(err.Error(), tc.message) || strings.Contains(err.Error(), secret) {
				t.Errorf("Argo CD's manifest generation: %v\nwant %q", err, tc.message)
			}
		})
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("the server got %d requests", n)
	}

	// The same parameter with a plain key reads the file from the
	// repository.
	q := &apiclient.ManifestRequest{
		Repo:      &v1alpha1.Repository{Repo: "https://git.example/fleet.git"},
		AppName:   "web",
		Namespace: "shop",
		ApplicationSource: &v1alpha1.ApplicationSource{
			RepoURL: "https://git.example/fleet.git", Path: "apps/web", TargetRevision: "main",
			Plugin: &v1alpha1.ApplicationSourcePlugin{Parameters: v1alpha1.ApplicationSourcePluginParameters{
				{Name: "set-file", OptionalMap: &v1alpha1.OptionalMap{Map: map[string]string{"greeting": "cfg.txt"}}},
				{Name: "with", OptionalArray: &v1alpha1.OptionalArray{Array: []string{"sidecar@^1"}}},
				{Name: "injector-library", String_: str("../../injectors")},
			}},
		},
	}
	res, err := repository.GenerateManifests(ctx, filepath.Join(repo, "apps", "web"), repo, "0123456789abcdef0123456789abcdef01234567", q, false, nil,
		resource.MustParse("0"), utilio.NewRandomizedTempPaths(t.TempDir()))
	if err != nil {
		t.Fatalf("a set-file from the repository: %v", err)
	}
	cm := find(objects(t, res.Manifests), "ConfigMap", "web-info")
	if cm == nil {
		t.Fatalf("no ConfigMap web-info in %v", res.Manifests)
	}
	if got := cm.Object["data"].(map[string]any)["greeting"]; got != "from the repository\n" {
		t.Errorf("greeting %q, want the repository's cfg.txt", got)
	}
}
