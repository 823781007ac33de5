package argocde2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/argoproj/argo-cd/v3/cmpserver/plugin"
)

// docsInstall is the install of docs/argocd.md: the kustomization and the
// command, between its markers.
func docsInstall(t *testing.T) (kustomization, command string) {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(root, "docs", "argocd.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)<!-- install: [^>]*-->\s*` + "```yaml\n(.*?)```" + `\s*` + "```sh\n(.*?)```" + `\s*<!-- end of install -->`).FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/argocd.md has no install kustomization and command between its markers")
	}
	// The block is indented as a list item's.
	return dedent(string(m[1])), strings.TrimSpace(dedent(string(m[2])))
}

func dedent(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, "   ")
	}
	return strings.Join(lines, "\n")
}

// TestInstallComponent builds the kustomization docs/argocd.md tells an
// operator to write, over Argo CD v3.6.1's own manifests/install.yaml,
// with the kustomize Go API (what `kubectl apply -k` runs); checks the
// plugin's containers are hardened as Argo CD's own, bounded, and share the
// volume the library and programs are provisioned into; creates the result
// on the test control plane; and runs the init container's command.
func TestInstallComponent(t *testing.T) {
	kust, command := docsInstall(t)
	if command != "kubectl apply -n argocd --server-side --force-conflicts -k ." {
		t.Fatalf("docs/argocd.md's install command is %q; this test builds what -k . builds", command)
	}
	// The operator's folder: Argo CD's install.yaml where the
	// kustomization names its URL (no network here), and helm-inject's
	// deploy/argocd where the docs say to put it.
	dir := t.TempDir()
	const installURL = "https://raw.githubusercontent.com/argoproj/argo-cd/v3.6.1/manifests/install.yaml"
	if !strings.Contains(kust, installURL) {
		t.Fatalf("the documented kustomization does not install Argo CD v3.6.1 from %s:\n%s", installURL, kust)
	}
	install, err := os.ReadFile(filepath.Join(argoCDModule(t), "manifests", "install.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"kustomization.yaml":  strings.Replace(kust, installURL, "argocd-install.yaml", 1),
		"argocd-install.yaml": string(install),
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.CopyFS(filepath.Join(dir, "helm-inject", "deploy", "argocd"), os.DirFS(filepath.Join(root, "deploy", "argocd"))); err != nil {
		t.Fatal(err)
	}
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build of the documented kustomization: %v", err)
	}
	var objs []*unstructured.Unstructured
	for _, r := range resMap.Resources() {
		m, err := r.Map()
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}

	repo := find(objs, "Deployment", "argocd-repo-server")
	if repo == nil || repo.GetNamespace() != "argocd" {
		t.Fatalf("no Deployment argocd-repo-server in namespace argocd: %v", repo)
	}
	var dep appsv1.Deployment
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(repo.Object, &dep); err != nil {
		t.Fatal(err)
	}
	spec := dep.Spec.Template.Spec
	initC := container(t, spec.InitContainers, "helm-inject-provision")
	sidecar := container(t, spec.Containers, "helm-inject")
	// Argo CD's own containers are still there.
	container(t, spec.InitContainers, "copyutil")
	container(t, spec.Containers, "argocd-repo-server")

	for _, c := range []corev1.Container{initC, sidecar} {
		checkHardened(t, c)
		if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
			t.Errorf("container %s: requests %v, limits %v: want CPU and memory requests and a memory limit", c.Name, c.Resources.Requests, c.Resources.Limits)
		}
	}
	if slices.Contains(initC.Args, "wget") || slices.Contains(initC.Command, "sh") || !strings.HasPrefix(initC.Image, "ghcr.io/helm-inject/helm-inject:v") {
		t.Errorf("init container %s %v %v: want the helm-inject image running provision, nothing downloaded", initC.Image, initC.Command, initC.Args)
	}

	// The volume: the init container writes it, the sidecar reads it; its
	// PATH and library lie in it.
	vol := mountOf(t, initC, "helm-inject")
	if vol.ReadOnly {
		t.Errorf("the init container cannot write the helm-inject volume")
	}
	if m := mountOf(t, sidecar, "helm-inject"); m.MountPath != vol.MountPath || !m.ReadOnly {
		t.Errorf("the sidecar mounts helm-inject at %s (read-only %v), want %s read-only", m.MountPath, m.ReadOnly, vol.MountPath)
	}
	if !slices.Equal(initC.Args, []string{"argocd", "provision", vol.MountPath}) {
		t.Errorf("init container args %v, want provision into %s", initC.Args, vol.MountPath)
	}
	env := map[string]string{}
	for _, e := range sidecar.Env {
		env[e.Name] = e.Value
	}
	// The library is the operator's, on generate's command line in
	// plugin.yaml, where no request can change it.
	pluginCfg, err := plugin.ReadPluginConfig(filepath.Join(root, "deploy", "argocd"))
	if err != nil {
		t.Fatal(err)
	}
	library := ""
	for _, arg := range pluginCfg.Spec.Generate.Command {
		if v, ok := strings.CutPrefix(arg, "--injector-library="); ok {
			library = v
		}
	}
	if !strings.HasPrefix(env["PATH"], vol.MountPath+"/bin:") || library != vol.MountPath+"/injectors" {
		t.Errorf("sidecar PATH %q, library %q: want %s/bin first and %s/injectors", env["PATH"], library, vol.MountPath, vol.MountPath)
	}
	for _, name := range []string{"HELM_INJECT_CONFINE", "HELM_INJECT_ALLOWED_COMMANDS", "HELM_INJECT_INJECTOR_LIBRARY"} {
		if _, ok := env[name]; ok {
			t.Errorf("the sidecar sets %s: the policy belongs on plugin.yaml's command lines", name)
		}
	}
	if v := volume(t, spec.Volumes, "helm-inject-tmp"); v.EmptyDir == nil || v.EmptyDir.SizeLimit == nil || v.EmptyDir.SizeLimit.IsZero() {
		t.Errorf("volume helm-inject-tmp %+v: want an emptyDir with a sizeLimit (a killed render's folder waits there for the next render)", v)
	}
	if v := volume(t, spec.Volumes, "helm-inject"); v.EmptyDir == nil {
		t.Errorf("volume helm-inject %+v: want an emptyDir, filled at each start", v)
	}
	if m := mountOf(t, sidecar, "helm-inject-plugin"); m.MountPath != "/home/argocd/cmp-server/config/plugin.yaml" || m.SubPath != "plugin.yaml" {
		t.Errorf("plugin.yaml mounted at %s (%s), want where the cmp-server reads it", m.MountPath, m.SubPath)
	}
	cm := find(objs, "ConfigMap", "helm-inject-plugin")
	shipped, err := os.ReadFile(filepath.Join(root, "deploy", "argocd", "plugin.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if cm == nil || cm.GetNamespace() != "argocd" || cm.Object["data"].(map[string]any)["plugin.yaml"] != string(shipped) {
		t.Errorf("ConfigMap helm-inject-plugin in argocd with the shipped plugin.yaml: %v", cm)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cs, err := kubernetes.NewForConfig(cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	createOnCluster(t, ctx, cs, objs, "argocd")
	admitRestricted(t, ctx, cs, dep.Spec.Template)

	// What the init container runs, in a folder standing for the volume,
	// gives the sidecar helm-inject first on its PATH and a library.
	fakeVol := filepath.Join(t.TempDir(), "vol")
	provision := exec.Command(filepath.Join(binDir, "helm-inject"), append(initC.Args[:2:2], fakeVol)...)
	if out, err := provision.CombinedOutput(); err != nil {
		t.Fatalf("helm-inject %v: %v\n%s", initC.Args, err, out)
	}
	path := strings.ReplaceAll(env["PATH"], vol.MountPath, fakeVol)
	found := ""
	for _, d := range filepath.SplitList(path) {
		if fi, err := os.Stat(filepath.Join(d, "helm-inject")); err == nil && fi.Mode()&0o111 != 0 {
			found = filepath.Join(d, "helm-inject")
			break
		}
	}
	if found != filepath.Join(fakeVol, "bin", "helm-inject") {
		t.Errorf("on the sidecar's PATH, helm-inject is %q, want the provisioned one", found)
	}
	if fi, err := os.Stat(strings.Replace(library, vol.MountPath, fakeVol, 1)); err != nil || !fi.IsDir() {
		t.Errorf("the sidecar's library: %v", err)
	}

	// The documented image of an operator's own: the library in
	// /injectors and istioctl in /tools, which the patch of docs/argocd.md
	// hands to provision. The patch, added to the kustomization, changes
	// only helm-inject's init container.
	ownArgs := ownImagePatch(t, dir)
	if want := []string{"argocd", "provision", "/helm-inject", "--library", "/injectors", "--tools", "/tools"}; !slices.Equal(ownArgs, want) {
		t.Fatalf("the documented patch gives the init container args %v, want %v", ownArgs, want)
	}
	image := t.TempDir()
	if err := os.CopyFS(filepath.Join(image, "injectors"), os.DirFS(filepath.Join(root, "fixtures", "injectors", "library"))); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(image, "tools"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(image, "tools", "istioctl"), []byte("#!/bin/sh\necho istioctl\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ownVol := filepath.Join(t.TempDir(), "vol")
	own := exec.Command(filepath.Join(binDir, "helm-inject"), "argocd", "provision", ownVol, "--library", filepath.Join(image, "injectors"), "--tools", filepath.Join(image, "tools"))
	if out, err := own.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", own.Args, err, out)
	}
	for _, p := range []string{"bin/helm-inject", "bin/istioctl", "injectors/sidecar/1.0.0.yaml", "injectors/injectors.lock"} {
		if _, err := os.Stat(filepath.Join(ownVol, p)); err != nil {
			t.Errorf("the operator's image provisioned no %s: %v", p, err)
		}
	}
	// A released version removed from the library: the pod does not start.
	if err := os.Remove(filepath.Join(image, "injectors", "sidecar", "1.0.0.yaml")); err != nil {
		t.Fatal(err)
	}
	broken := exec.Command(filepath.Join(binDir, "helm-inject"), "argocd", "provision", filepath.Join(t.TempDir(), "vol"), "--library", filepath.Join(image, "injectors"))
	if out, err := broken.CombinedOutput(); err == nil || !strings.Contains(string(out), "sidecar@1.0.0 locked in injectors.lock but removed") {
		t.Errorf("provision with a removed version: %v\n%s", err, out)
	}
}

// checkHardened: as Argo CD's own containers run (and as the restricted
// Pod Security Standard asks).
func checkHardened(t *testing.T, c corev1.Container) {
	t.Helper()
	sc := c.SecurityContext
	switch {
	case sc == nil:
		t.Errorf("container %s has no security context", c.Name)
	case sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0:
		t.Errorf("container %s may run as root", c.Name)
	case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
		t.Errorf("container %s allows privilege escalation", c.Name)
	case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
		t.Errorf("container %s has a writable root", c.Name)
	case sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0:
		t.Errorf("container %s keeps capabilities: %+v", c.Name, sc.Capabilities)
	case sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault:
		t.Errorf("container %s has seccomp profile %+v, want RuntimeDefault", c.Name, sc.SeccompProfile)
	}
}

func container(t *testing.T, cs []corev1.Container, name string) corev1.Container {
	t.Helper()
	return byName(t, cs, func(c corev1.Container) string { return c.Name }, name, "container")
}

func mountOf(t *testing.T, c corev1.Container, volume string) corev1.VolumeMount {
	t.Helper()
	return byName(t, c.VolumeMounts, func(m corev1.VolumeMount) string { return m.Name }, volume, "mount in container "+c.Name+" of volume")
}

func volume(t *testing.T, vs []corev1.Volume, name string) corev1.Volume {
	t.Helper()
	return byName(t, vs, func(v corev1.Volume) string { return v.Name }, name, "volume")
}

// byName is the item of items named name, or fails the test.
func byName[T any](t *testing.T, items []T, nameOf func(T) string, name, what string) T {
	t.Helper()
	i := slices.IndexFunc(items, func(it T) bool { return nameOf(it) == name })
	if i < 0 {
		t.Fatalf("no %s %s", what, name)
	}
	return items[i]
}

// ownImagePatch adds docs/argocd.md's patch for an operator's own image to
// the install kustomization in dir, builds it, and returns the args of
// helm-inject's init container, after checking that the patch changed its
// image and nothing of Argo CD's own containers.
func ownImagePatch(t *testing.T, dir string) []string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(root, "docs", "argocd.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)<!-- own image: [^>]*-->\s*` + "```yaml\n(.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/argocd.md has no patch for an operator's own image between its markers")
	}
	kust, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), append(kust, m[1]...), 0o644); err != nil {
		t.Fatal(err)
	}
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build with the documented patch: %v", err)
	}
	var dep appsv1.Deployment
	for _, r := range resMap.Resources() {
		if r.GetKind() == "Deployment" && r.GetName() == "argocd-repo-server" {
			m, err := r.Map()
			if err != nil {
				t.Fatal(err)
			}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &dep); err != nil {
				t.Fatal(err)
			}
		}
	}
	spec := dep.Spec.Template.Spec
	initC := container(t, spec.InitContainers, "helm-inject-provision")
	if initC.Image != "registry.example/argocd/helm-inject:2026-12-04" {
		t.Errorf("the patched init container runs %s", initC.Image)
	}
	checkHardened(t, initC)
	if c := container(t, spec.InitContainers, "copyutil"); c.Image != "quay.io/argoproj/argocd:v3.6.1" || !strings.Contains(strings.Join(c.Args, " "), "/var/run/argocd/argocd-cmp-server") {
		t.Errorf("Argo CD's copyutil changed: %s %v", c.Image, c.Args)
	}
	return initC.Args
}

// admitRestricted creates the repo-server's pod (server-side dry run) in a
// namespace that enforces the restricted Pod Security Standard: the API
// server's PodSecurity admission checks every container, Argo CD's own
// and the plugin's.
func admitRestricted(t *testing.T, ctx context.Context, cs kubernetes.Interface, tmpl corev1.PodTemplateSpec) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "argocd-restricted", Labels: map[string]string{
		"pod-security.kubernetes.io/enforce":         "restricted",
		"pod-security.kubernetes.io/enforce-version": "latest",
	}}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: tmpl.Spec.ServiceAccountName}}
	if _, err := cs.CoreV1().ServiceAccounts(ns.Name).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "argocd-repo-server", Labels: tmpl.Labels}, Spec: tmpl.Spec}
	if _, err := cs.CoreV1().Pods(ns.Name).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Errorf("the repo-server's pod under the restricted Pod Security Standard: %v", err)
	}
}
