package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
)

// shipperPackageArgs are the inputs of one packaged release of the api
// chart with the built-in log-shipper at version.
func shipperPackageArgs(rel, ns, version string, extra ...string) []string {
	return append([]string{rel, apiChart, "-n", ns, "--injector-library", "examples/injectors",
		"--with", "log-shipper@" + version, "--with-set", "log-shipper.destination=logs.example:24224"}, extra...)
}

// packaged runs helm-inject package and returns the archive's path.
func packaged(t *testing.T, args ...string) string {
	t.Helper()
	out := mustHelmInject(t, append([]string{"package"}, args...)...).stdout
	_, path, ok := strings.Cut(strings.TrimSpace(out), "saved it to: ")
	if !ok {
		t.Fatalf("package printed no archive:\n%s", out)
	}
	path, _, _ = strings.Cut(path, "\n")
	return path
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPackageIsReproducible: the same inputs give the same archive, byte
// for byte; another injector version gives another archive, version and
// record.
func TestPackageIsReproducible(t *testing.T) {
	ns := "prod"
	a := packaged(t, shipperPackageArgs("shop", ns, "1.0.0", "-d", t.TempDir())...)
	b := packaged(t, shipperPackageArgs("shop", ns, "1.0.0", "-d", t.TempDir())...)
	if !bytes.Equal(readFile(t, a), readFile(t, b)) {
		t.Fatalf("two packages of the same inputs differ: %s, %s", a, b)
	}
	if filepath.Base(a) != filepath.Base(b) || !strings.HasPrefix(filepath.Base(a), "api-") {
		t.Errorf("archives %s, %s", filepath.Base(a), filepath.Base(b))
	}
	c := packaged(t, shipperPackageArgs("shop", ns, "1.1.0", "-d", t.TempDir())...)
	if bytes.Equal(readFile(t, a), readFile(t, c)) || filepath.Base(a) == filepath.Base(c) {
		t.Errorf("log-shipper 1.1.0 gave the archive of 1.0.0: %s, %s", a, c)
	}
	for p, want := range map[string]string{a: `"version":"1.0.0"`, c: `"version":"1.1.0"`} {
		ch, err := loader.Load(p)
		if err != nil {
			t.Fatal(err)
		}
		if rec := ch.Metadata.Annotations["helm-inject.io/injectors"]; !strings.Contains(rec, `"name":"log-shipper"`) || !strings.Contains(rec, want) {
			t.Errorf("%s records %s, want log-shipper %s", filepath.Base(p), rec, want)
		}
		if ch.Metadata.Annotations["helm-inject.io/release"] != "shop" || ch.Metadata.Annotations["helm-inject.io/namespace"] != ns {
			t.Errorf("%s annotations %v", filepath.Base(p), ch.Metadata.Annotations)
		}
	}
}

// TestPackagedChartInstallsWithHelm pushes a packaged release to a real
// OCI registry; the helm 3 and helm 4 CLIs install it from there, with no
// plugin, and store the manifest helm-inject apply stores for the same
// inputs. Another release name and a value are refused, with nothing
// installed.
func TestPackagedChartInstallsWithHelm(t *testing.T) {
	addr := ociRegistry(t)
	ns := namespace(t)
	dir := t.TempDir()
	pushed := mustHelmInject(t, append([]string{"package"}, shipperPackageArgs("shop", ns, "1.0.0", "-d", dir, "--push", "oci://"+addr+"/charts", "--plain-http")...)...)
	out := pushed.stdout
	if !strings.Contains(pushed.stdout, "Pushed: "+addr+"/charts/api:") {
		t.Errorf("package --push printed:\n%s", pushed)
	}
	archive := strings.TrimSpace(strings.SplitN(strings.SplitN(out, "saved it to: ", 2)[1], "\n", 2)[0])
	ch, err := loader.Load(archive)
	if err != nil {
		t.Fatal(err)
	}
	version := ch.Metadata.Version
	ref := "oci://" + addr + "/charts/api"

	mustHelmInject(t, append([]string{"apply"}, shipperPackageArgs("shop", ns, "1.0.0")...)...)
	want := mustHelm(t, "get", "manifest", "shop", "-n", ns).stdout
	mustHelm(t, "uninstall", "shop", "-n", ns, "--wait")

	for _, h := range []struct{ name, bin string }{{"helm 3", helmBin(t)}, {"helm 4", helm4Bin(t)}} {
		refused := command{}.run(t, h.bin, "install", "other", ref, "--version", version, "--plain-http", "-n", ns)
		if refused.code == 0 || !strings.Contains(refused.stderr, "rendered by helm-inject for release shop in namespace "+ns) || !strings.Contains(refused.stderr, "this is release other") {
			t.Errorf("%s installed the package as another release:\n%s", h.name, refused)
		}
		refused = command{}.run(t, h.bin, "install", "shop", ref, "--version", version, "--plain-http", "-n", ns, "--set", "replicas=3")
		if refused.code == 0 || !strings.Contains(refused.stderr, "values baked in") || !strings.Contains(refused.stderr, "run helm-inject package again") {
			t.Errorf("%s installed the package with a value:\n%s", h.name, refused)
		}
		// helm 3's list, with every status (helm 4 lists them all).
		if list := mustHelm(t, "list", "-n", ns, "-a", "-q").stdout; strings.TrimSpace(list) != "" {
			t.Errorf("%s: refused installs left releases: %s", h.name, list)
		}

		command{}.mustRun(t, h.bin, "install", "shop", ref, "--version", version, "--plain-http", "-n", ns)
		got := command{}.mustRun(t, h.bin, "get", "manifest", "shop", "-n", ns).stdout
		// helm 3 keeps no white space after a document (see
		// docs/compatibility.md): its documents are equal, the bytes
		// between them are helm 3's.
		want := want
		if h.name == "helm 3" {
			got, want = documentsOf(got), documentsOf(want)
		}
		if got != want {
			t.Errorf("%s stored another manifest than helm-inject apply:\n%s\nwant\n%s", h.name, got, want)
		}
		command{}.mustRun(t, h.bin, "uninstall", "shop", "-n", ns, "--wait")
	}
}

// documentsOf is a manifest's documents, each without the white space
// around it, one per line of "---".
func documentsOf(m string) string {
	var docs []string
	for _, d := range strings.Split(m, "\n---\n") {
		docs = append(docs, strings.TrimSpace(strings.TrimPrefix(d, "---\n")))
	}
	return strings.Join(docs, "\n---\n")
}

// signingKeys writes a new PGP key as a secret and a public keyring.
func signingKeys(t *testing.T, name string) (secret, public string) {
	t.Helper()
	e, err := openpgp.NewEntity(name, "", "ci@example.com", nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var sec, pub bytes.Buffer
	if err := e.SerializePrivate(&sec, nil); err != nil {
		t.Fatal(err)
	}
	if err := e.Serialize(&pub); err != nil {
		t.Fatal(err)
	}
	secret, public = filepath.Join(dir, "secring.gpg"), filepath.Join(dir, "pubring.gpg")
	if err := os.WriteFile(secret, sec.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(public, pub.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return secret, public
}

// TestSignedPackageVerifies: a chart package --sign signed and pushed
// passes helm install --verify (helm 3 and helm 4); the same provenance
// beside another archive of that version fails it.
func TestSignedPackageVerifies(t *testing.T) {
	addr := ociRegistry(t)
	ns := namespace(t)
	secret, public := signingKeys(t, "helm-inject CI")
	dir := t.TempDir()
	args := shipperPackageArgs("shop", ns, "1.0.0", "-d", dir, "--package-version", "1.0.0",
		"--sign", "--key", "helm-inject CI", "--keyring", secret, "--push", "oci://"+addr+"/signed", "--plain-http")
	mustHelmInject(t, append([]string{"package"}, args...)...)
	signed := filepath.Join(dir, "api-1.0.0.tgz")
	if _, err := os.Stat(signed + ".prov"); err != nil {
		t.Fatalf("no provenance beside the archive: %v", err)
	}
	for _, h := range []struct{ name, bin string }{{"helm 3", helmBin(t)}, {"helm 4", helm4Bin(t)}} {
		command{}.mustRun(t, h.bin, "install", "shop", "oci://"+addr+"/signed/api", "--version", "1.0.0", "--plain-http", "-n", ns, "--verify", "--keyring", public)
		command{}.mustRun(t, h.bin, "uninstall", "shop", "-n", ns, "--wait")
	}

	// Another archive with the first one's provenance: another value
	// rendered in, the same version.
	other := t.TempDir()
	mustHelmInject(t, append([]string{"package"}, shipperPackageArgs("shop", ns, "1.0.0", "-d", other, "--package-version", "1.0.0", "--set", "replicas=2")...)...)
	tampered := filepath.Join(other, "api-1.0.0.tgz")
	if bytes.Equal(readFile(t, tampered), readFile(t, signed)) {
		t.Fatal("the tampered archive is the signed one")
	}
	if err := os.WriteFile(tampered+".prov", readFile(t, signed+".prov"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustHelmInject(t, "push", tampered, "oci://"+addr+"/tampered", "--plain-http")
	for _, h := range []struct{ name, bin string }{{"helm 3", helmBin(t)}, {"helm 4", helm4Bin(t)}} {
		r := command{}.run(t, h.bin, "install", "shop", "oci://"+addr+"/tampered/api", "--version", "1.0.0", "--plain-http", "-n", ns, "--verify", "--keyring", public)
		if r.code == 0 || !strings.Contains(r.stderr, "sha256 sum does not match") {
			t.Errorf("%s --verify accepted a tampered chart:\n%s", h.name, r)
		}
	}
	if list := mustHelm(t, "list", "-n", ns, "-a", "-q").stdout; strings.TrimSpace(list) != "" {
		t.Errorf("a failed --verify installed %s", list)
	}
}

// TestPushRefusesOtherCharts: helm-inject push pushes only what package
// wrote.
func TestPushRefusesOtherCharts(t *testing.T) {
	dir := t.TempDir()
	mustHelm(t, "package", webappChart, "-d", dir)
	r := helmInject(t, "push", filepath.Join(dir, "webapp-1.4.2.tgz"), "oci://127.0.0.1:1/charts", "--plain-http")
	if r.code == 0 || !strings.Contains(r.stderr, "was not written by helm-inject package") || !strings.Contains(r.stderr, "helm push") {
		t.Errorf("push of a plain chart:\n%s", r)
	}
}

// TestPackagedArtifactAsFluxReadsIt reads the pushed artifact with
// go-containerregistry, the OCI library Flux's source-controller uses for
// an OCIRepository: the tag is the version with "+" as "_", the manifest
// an OCI image manifest with Helm's config, one chart layer of Helm's
// media type (the one a layerSelector names) whose digest is the
// archive's, and the provenance layer when signed; pushing the same
// archive again gives the same manifest digest.
func TestPackagedArtifactAsFluxReadsIt(t *testing.T) {
	addr := ociRegistry(t)
	secret, _ := signingKeys(t, "flux CI")
	dir := t.TempDir()
	args := shipperPackageArgs("shop", "prod", "1.0.0", "-d", dir, "--sign", "--key", "flux CI", "--keyring", secret, "--push", "oci://"+addr+"/flux", "--plain-http")
	archive := packaged(t, args...)
	ch, err := loader.Load(archive)
	if err != nil {
		t.Fatal(err)
	}
	tag := strings.ReplaceAll(ch.Metadata.Version, "+", "_")
	ref, err := name.ParseReference(addr+"/flux/api:"+tag, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Get(ref, remote.WithContext(t.Context()))
	if err != nil {
		t.Fatalf("the OCI library Flux uses cannot read %s: %v", ref, err)
	}
	if desc.MediaType != types.OCIManifestSchema1 {
		t.Errorf("manifest media type %s, want %s", desc.MediaType, types.OCIManifestSchema1)
	}
	img, err := desc.Image()
	if err != nil {
		t.Fatal(err)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.Config.MediaType != "application/vnd.cncf.helm.config.v1+json" {
		t.Errorf("config media type %s", m.Config.MediaType)
	}
	sum := sha256.Sum256(readFile(t, archive))
	layers := map[string]string{}
	for _, l := range m.Layers {
		layers[string(l.MediaType)] = l.Digest.String()
	}
	if got := layers["application/vnd.cncf.helm.chart.content.v1.tar+gzip"]; got != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Errorf("chart layer %q, want the archive's sha256:%x (layers %v)", got, sum, layers)
	}
	if _, ok := layers["application/vnd.cncf.helm.chart.provenance.v1.prov"]; !ok || len(layers) != 2 {
		t.Errorf("layers %v, want the chart and its provenance", layers)
	}
	// The layer a HelmRelease's chartRef gets is the chart itself.
	for _, l := range mustLayers(t, img) {
		mt, _ := l.MediaType()
		if mt != "application/vnd.cncf.helm.chart.content.v1.tar+gzip" {
			continue
		}
		rc, err := l.Compressed()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Equal(b, readFile(t, archive)) {
			t.Errorf("the chart layer is not the archive (%v)", err)
		}
	}
	// The same archive pushed again: the same manifest.
	mustHelmInject(t, "push", archive, "oci://"+addr+"/flux", "--plain-http")
	again, err := remote.Get(ref, remote.WithContext(t.Context()))
	if err != nil {
		t.Fatal(err)
	}
	if again.Digest != desc.Digest {
		t.Errorf("pushing the same archive again made manifest %s, then %s", desc.Digest, again.Digest)
	}
}

func mustLayers(t *testing.T, img v1.Image) []v1.Layer {
	t.Helper()
	ls, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	return ls
}

// TestHelmfilePackage: `helm-inject helmfile package` packages every
// selected release of a state file, with its injector fields, one archive
// per release, and pushes each; an archive is what helm-inject package
// makes of the same release by hand; helmfile's selectors choose.
func TestHelmfilePackage(t *testing.T) {
	addr := ociRegistry(t)
	root := repoRoot(t)
	api := filepath.Join(root, apiChart)
	lib := filepath.Join(root, "examples", "injectors")
	state := fmt.Sprintf(`releases:
- name: seeded
  namespace: shop
  chart: %[1]s
  labels: {tier: web}
  injector: "sidecar-injector f=FILE,image=registry.example/proxy:1"
- name: mixed
  namespace: shop
  chart: %[1]s
  labels: {tier: web}
  values:
  - replicas: 3
  injectors:
  - with: log-shipper@1.0.0
    library: %[2]s
    params:
      destination: logs.example:24224
- name: untouched
  namespace: ops
  chart: %[1]s
`, api, lib)
	dir := writeState(t, "helmfile.yaml", state)
	out := t.TempDir()
	r := helmfileRun(t, dir, "package", "-d", out, "--push", "oci://"+addr+"/fleet", "--plain-http")
	if r.code != 0 {
		t.Fatalf("helmfile package:\n%s", r)
	}
	archives, _ := filepath.Glob(filepath.Join(out, "*.tgz"))
	if len(archives) != 3 {
		t.Fatalf("archives %v, want one per release", archives)
	}
	byRelease := map[string]string{}
	for _, a := range archives {
		ch, err := loader.Load(a)
		if err != nil {
			t.Fatal(err)
		}
		rel := ch.Metadata.Annotations["helm-inject.io/release"] + "." + ch.Metadata.Annotations["helm-inject.io/namespace"]
		byRelease[rel] = a
		if !strings.Contains(r.stderr+r.stdout, "Pushed: "+addr+"/fleet/api:"+strings.ReplaceAll(ch.Metadata.Version, "+", "_")) {
			t.Errorf("%s was not pushed:\n%s", rel, r)
		}
	}
	// The injected release's archive is what package makes of it by hand.
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte("replicas: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	byHand := packaged(t, "mixed", api, "-n", "shop", "-f", values, "--injector-library", lib, "--with", "log-shipper@1.0.0",
		"--with-set", "log-shipper.destination=logs.example:24224", "-d", t.TempDir())
	for _, rel := range []string{"seeded.shop", "mixed.shop", "untouched.ops"} {
		if byRelease[rel] == "" {
			t.Fatalf("no archive for %s: %v", rel, byRelease)
		}
	}
	got, want := readArchivedTemplates(t, byRelease["mixed.shop"]), readArchivedTemplates(t, byHand)
	if got != want {
		t.Errorf("helmfile package's mixed differs from package's:\n%s\nwant\n%s", got, want)
	}
	for rel, wantSidecar := range map[string]string{"seeded.shop": "name: sidecar", "mixed.shop": "name: log-shipper"} {
		if !strings.Contains(readArchivedTemplates(t, byRelease[rel]), wantSidecar) {
			t.Errorf("%s lacks %s", rel, wantSidecar)
		}
	}
	if strings.Contains(readArchivedTemplates(t, byRelease["untouched.ops"]), "sidecar") {
		t.Error("untouched was injected")
	}

	// A selector packages the releases it selects; helmfile's flags come
	// after "--".
	sel := t.TempDir()
	if r := helmfileRun(t, dir, "package", "-d", sel, "--", "-l", "name=seeded"); r.code != 0 {
		t.Fatalf("helmfile package -- -l name=seeded:\n%s", r)
	}
	if got, _ := filepath.Glob(filepath.Join(sel, "*.tgz")); len(got) != 1 {
		t.Errorf("with -l name=seeded: %v", got)
	}
	if r := helmfileRun(t, dir, "package", "-d", sel, "-l", "name=seeded"); r.code == 0 || !strings.Contains(r.stderr, `helmfile's own flags and selectors go after "--"`) {
		t.Errorf("a helmfile flag before --:\n%s", r)
	}
}

// readArchivedTemplates is every template of an archive, in name order,
// each after its name.
func readArchivedTemplates(t *testing.T, archive string) string {
	t.Helper()
	ch, err := loader.Load(archive)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, f := range ch.Templates {
		fmt.Fprintf(&b, "== %s\n%s", f.Name, f.Data)
	}
	return b.String()
}
