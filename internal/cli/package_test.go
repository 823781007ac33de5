package cli

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"

	"github.com/helm-inject/helm-inject/internal/testfs"
)

// packageOnly runs package into a new folder and returns the archive.
func packageOnly(t *testing.T, args ...string) (archive, stderr string, code int) {
	t.Helper()
	dir := t.TempDir()
	_, errOut, code := runCLI(t, append(append([]string{"package"}, args...), "-d", dir)...)
	archives, _ := filepath.Glob(filepath.Join(dir, "*.tgz"))
	if code == 0 && len(archives) != 1 {
		t.Fatalf("package wrote %v", archives)
	}
	if code != 0 {
		if len(archives) != 0 {
			t.Errorf("a failed package left %v", archives)
		}
		return "", errOut, code
	}
	return archives[0], errOut, code
}

// archiveTimes are the modification times of an archive's entries.
func archiveTimes(t *testing.T, archive string) map[string]time.Time {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	out := map[string]time.Time{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = h.ModTime
	}
}

// TestPackageSourceDateEpoch: every file of the archive is dated
// SOURCE_DATE_EPOCH, the epoch without it; a value that is not a number
// of seconds is refused before anything is rendered.
func TestPackageSourceDateEpoch(t *testing.T) {
	for _, tt := range []struct {
		env  string
		want time.Time
	}{
		{"", time.Unix(0, 0)},
		{"0", time.Unix(0, 0)}, // the epoch itself is a date, not a refusal
		{"1700000000", time.Unix(1700000000, 0)},
	} {
		t.Setenv("SOURCE_DATE_EPOCH", tt.env)
		archive, errOut, code := packageOnly(t, "web", apiChart, "--package-version", "1.0.0")
		if code != 0 {
			t.Fatalf("SOURCE_DATE_EPOCH=%s: %s", tt.env, errOut)
		}
		times := archiveTimes(t, archive)
		if len(times) == 0 {
			t.Fatal("an empty archive")
		}
		for name, got := range times {
			if !got.Equal(tt.want) {
				t.Errorf("SOURCE_DATE_EPOCH=%q: %s dated %s, want %s", tt.env, name, got, tt.want)
			}
		}
	}
	for _, bad := range []string{"yesterday", "-5", "1.5"} {
		t.Setenv("SOURCE_DATE_EPOCH", bad)
		_, errOut, code := packageOnly(t, "web", apiChart)
		if code != 1 || !strings.Contains(errOut, "SOURCE_DATE_EPOCH="+bad+": want seconds since the Unix epoch") {
			t.Errorf("SOURCE_DATE_EPOCH=%s: exit %d, %s", bad, code, errOut)
		}
	}
}

// TestPackageRefusesBeforeRendering: flags that cannot work are refused
// with the release named, before the chart is rendered (an injector that
// would fail is never run).
func TestPackageRefusesBeforeRendering(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--sign"}, `release "web": --sign needs --key`},
		{[]string{"--push", "https://registry.example/charts"}, `release "web": --push https://registry.example/charts: give an OCI registry location, oci://HOST/PATH`},
		{[]string{"--progress", "loud"}, `unknown --progress "loud"`},
		{[]string{"--injector-pins", "/nonexistent/pins.yaml"}, `release "web": reading the injector pins`},
	} {
		_, errOut, code := packageOnly(t, append([]string{"web", apiChart, "--inject", "/nonexistent/injector"}, tt.args...)...)
		if code != 1 || !strings.Contains(errOut, tt.want) || strings.Contains(errOut, "/nonexistent/injector") {
			t.Errorf("%v: exit %d, %s; want %q", tt.args, code, errOut, tt.want)
		}
	}
	_, errOut, code := packageOnly(t, "web", apiChart, "--package-version", "v2")
	if code != 1 || !strings.Contains(errOut, `release "web": version "v2" is not a semantic version`) {
		t.Errorf("--package-version v2: exit %d, %s", code, errOut)
	}
}

// TestPackageProgress: --progress takes template's values.
func TestPackageProgress(t *testing.T) {
	for _, mode := range []string{"auto", "plain", "none"} {
		if _, errOut, code := packageOnly(t, "web", apiChart, "--progress", mode); code != 0 {
			t.Errorf("--progress %s: %s", mode, errOut)
		}
	}
}

// TestPackageEnableDNS: --enable-dns lets the chart resolve host names,
// as helm's flag does; without it getHostByName gives nothing.
func TestPackageEnableDNS(t *testing.T) {
	chart := filepath.Join(t.TempDir(), "dns")
	testfs.Write(t, chart, map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: dns\nversion: 0.1.0\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dns\ndata:\n  localhost: {{ getHostByName \"localhost\" | quote }}\n",
	})
	for _, verb := range renderVerbs() {
		out, errOut, code := rendered(t, verb, "web", chart)
		if code != 0 || !strings.Contains(out, `localhost: ""`) {
			t.Errorf("%s without --enable-dns: exit %d:\n%s%s", verb, code, out, errOut)
		}
		out, errOut, code = rendered(t, verb, "web", chart, "--enable-dns")
		if code != 0 || !strings.Contains(out, `localhost: "127.0.0.1"`) && !strings.Contains(out, `localhost: "::1"`) {
			t.Errorf("%s --enable-dns: exit %d:\n%s%s", verb, code, out, errOut)
		}
	}
}

// TestPackageInjectorPins: with --injector-pins the pinned version is
// packaged (and recorded), not the newest the constraint allows.
func TestPackageInjectorPins(t *testing.T) {
	pins := filepath.Join(t.TempDir(), "helm-inject-pins.yaml")
	// The digest the library's lock file holds for log-shipper 1.0.0.
	lock, err := os.ReadFile("../../examples/injectors/injectors.lock")
	if err != nil {
		t.Fatal(err)
	}
	var digest string
	for _, l := range strings.Split(string(lock), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "log-shipper" && f[1] == "1.0.0" {
			digest = f[2]
		}
	}
	if err := os.WriteFile(pins, []byte("injectors:\n  log-shipper:\n    version: 1.0.0\n    digest: "+digest+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"web", apiChart, "--injector-library", "../../examples/injectors", "--with", "log-shipper@^1", "--with-set", "log-shipper.destination=logs:24224"}
	for _, tt := range []struct {
		extra []string
		want  string
	}{
		{nil, `"version":"1.1.0"`},
		{[]string{"--injector-pins", pins}, `"version":"1.0.0"`},
	} {
		archive, errOut, code := packageOnly(t, append(slicesClone(args), tt.extra...)...)
		if code != 0 {
			t.Fatalf("%v: %s", tt.extra, errOut)
		}
		chartYAML := readArchived(t, archive, "api/Chart.yaml")
		if !strings.Contains(chartYAML, tt.want) {
			t.Errorf("%v: Chart.yaml records no %s:\n%s", tt.extra, tt.want, chartYAML)
		}
	}
}

// readArchived is one file of an archive.
func readArchived(t *testing.T, archive, name string) string {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("%s has no %s: %v", archive, name, err)
		}
		if h.Name == name {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
	}
}

// TestPackageSignsWithAPassphrase: --sign with a key its --passphrase-file
// unlocks writes a provenance file that helm's --verify accepts with the
// public key; a wrong passphrase writes nothing.
func TestPackageSignsWithAPassphrase(t *testing.T) {
	dir := t.TempDir()
	e, err := openpgp.NewEntity("release signer", "", "signer@example.com", nil)
	if err != nil {
		t.Fatal(err)
	}
	var pub, sec bytes.Buffer
	if err := e.Serialize(&pub); err != nil {
		t.Fatal(err)
	}
	if err := e.EncryptPrivateKeys([]byte("open sesame"), nil); err != nil {
		t.Fatal(err)
	}
	if err := e.SerializePrivateWithoutSigning(&sec, nil); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"pubring.gpg": pub.String(), "secring.gpg": sec.String(), "good": "open sesame\n", "bad": "guess\n"}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	sign := []string{"web", apiChart, "--package-version", "1.0.0", "--sign", "--key", "release signer", "--keyring", filepath.Join(dir, "secring.gpg")}
	if _, errOut, code := packageOnly(t, append(slicesClone(sign), "--passphrase-file", filepath.Join(dir, "bad"))...); code != 1 || !strings.Contains(errOut, `signing`) {
		t.Errorf("a wrong passphrase: exit %d, %s", code, errOut)
	}
	archive, errOut, code := packageOnly(t, append(slicesClone(sign), "--passphrase-file", filepath.Join(dir, "good"))...)
	if code != 0 {
		t.Fatalf("signing: %s", errOut)
	}
	if _, err := os.Stat(archive + ".prov"); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(t, "template", "web", archive, "--verify", "--keyring", filepath.Join(dir, "pubring.gpg"))
	if code != 0 || !strings.Contains(out, "kind: Deployment") {
		t.Errorf("template --verify of the signed archive: exit %d: %s", code, errOut)
	}
	if err := os.WriteFile(archive+".prov", []byte("-----BEGIN PGP SIGNED MESSAGE-----\nnot signed\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runCLI(t, "template", "web", archive, "--verify", "--keyring", filepath.Join(dir, "pubring.gpg")); code == 0 {
		t.Errorf("template --verify accepted a broken provenance: %s", errOut)
	}
}

// TestPushFlags: push reaches a registry with helm push's TLS and
// credential flags, each of which this server needs (a client
// certificate, its CA, basic auth); it is not an OCI registry, so the
// push fails after the connection, not at it.
func TestPushFlags(t *testing.T) {
	url, ca, cert, key := chartServer(t)
	// No credentials of helm registry login's.
	t.Setenv("HELM_REGISTRY_CONFIG", filepath.Join(t.TempDir(), "config.json"))
	archive, errOut, code := packageOnly(t, "web", apiChart, "--package-version", "1.0.0")
	if code != 0 {
		t.Fatal(errOut)
	}
	remote := "oci://" + strings.TrimPrefix(url, "https://") + "/charts"
	full := []string{"push", archive, remote, "--ca-file", ca, "--cert-file", cert, "--key-file", key, "--username", "robot", "--password", "s3cret"}
	without := func(drop ...string) []string {
		var out []string
		for i := 0; i < len(full); i++ {
			if strings.HasPrefix(full[i], "--") && (contains(drop, full[i])) {
				i++
				continue
			}
			out = append(out, full[i])
		}
		return out
	}
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"all flags", full, "404"},
		{"--insecure-skip-tls-verify instead of --ca-file", append(without("--ca-file"), "--insecure-skip-tls-verify"), "404"},
		{"without --ca-file", without("--ca-file"), "certificate"},
		{"without --cert-file and --key-file", without("--cert-file", "--key-file"), "certificate"},
		{"another --password", append(without("--password"), "--password", "guess"), "401"},
		{"without --username and --password", without("--username", "--password"), "basic credential not found"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := runCLI(t, tt.args...)
			if code == 0 || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, want %q in:\n%s", code, tt.want, errOut)
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestPushRefusesOtherCharts: push takes only an archive package wrote,
// and an OCI location; both are checked before the registry is reached.
func TestPushRefusesOtherCharts(t *testing.T) {
	dir := t.TempDir()
	testfs.Write(t, filepath.Join(dir, "plain"), map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: plain\nversion: 1.0.0\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\n",
	})
	ch, err := loader.Load(filepath.Join(dir, "plain"))
	if err != nil {
		t.Fatal(err)
	}
	archive, err := chartutil.Save(ch, dir)
	if err != nil {
		t.Fatal(err)
	}
	ours, errOut, code := packageOnly(t, "web", apiChart, "--package-version", "1.0.0")
	if code != 0 {
		t.Fatal(errOut)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{archive, "oci://127.0.0.1:1/charts"}, "chart plain 1.0.0 was not written by helm-inject package (its Chart.yaml has no helm-inject.io/release annotation); push it with helm push"},
		{[]string{ours, "https://127.0.0.1:1/charts"}, "https://127.0.0.1:1/charts: give an OCI registry location, oci://HOST/PATH"},
	} {
		_, errOut, code := runCLI(t, append([]string{"push"}, tt.args...)...)
		if code != 1 || !strings.Contains(errOut, tt.want) {
			t.Errorf("push %v: exit %d, %s; want %q", tt.args, code, errOut, tt.want)
		}
	}
}

// TestHelmfilePackageFlags: `helmfile package` takes package's flags for
// every release, and helmfile's after "--"; helmfile's template is run.
func TestHelmfilePackageFlags(t *testing.T) {
	pkg, hf, err := helmfilePackageFlags([]string{"-d", "charts", "--push", "oci://r/x", "--plain-http", "--ca-file", "ca.pem", "--cert-file", "c.pem",
		"--key-file", "k.pem", "--insecure-skip-tls-verify", "--sign", "--key", "CI", "--keyring", "ring.gpg", "--passphrase-file", "pass", "--", "-e", "prod", "-l", "tier=web"})
	if err != nil {
		t.Fatal(err)
	}
	// pflag visits flags in name order.
	want := []string{"--ca-file", "ca.pem", "--cert-file", "c.pem", "--destination", "charts", "--insecure-skip-tls-verify", "--key", "CI",
		"--key-file", "k.pem", "--keyring", "ring.gpg", "--passphrase-file", "pass", "--plain-http", "--push", "oci://r/x", "--sign"}
	if strings.Join(pkg, " ") != strings.Join(want, " ") {
		t.Errorf("package flags %q, want %q", pkg, want)
	}
	if strings.Join(hf, " ") != "-e prod -l tier=web template" {
		t.Errorf("helmfile args %q", hf)
	}
	if pkg, hf, err := helmfilePackageFlags(nil); err != nil || pkg == nil || len(pkg) != 0 || strings.Join(hf, " ") != "template" {
		t.Errorf("no flags: %q %q %v; want an empty (not nil) list and template", pkg, hf, err)
	}
	for _, args := range [][]string{{"-e", "prod"}, {"sync"}, {"-d", "x", "sync", "--", "-e", "prod"}} {
		if _, _, err := helmfilePackageFlags(args); err == nil || !strings.Contains(err.Error(), `helmfile's own flags and selectors go after "--"`) {
			t.Errorf("%q: %v", args, err)
		}
	}
}

// TestHelmfilePackageCommand: `helmfile package` parses its own flags (so
// cobra's are off): --help and -h, alone or after other flags, print its
// help, and a helmfile flag
// before "--" is refused before helmfile is looked for.
func TestHelmfilePackageCommand(t *testing.T) {
	for _, help := range [][]string{{"--help"}, {"-h"}, {"-d", "charts", "--help"}} {
		out, errOut, code := runCLI(t, append([]string{"helmfile", "package"}, help...)...)
		if code != 0 || !strings.Contains(out, "Usage:") || !strings.Contains(out, "--push") {
			t.Errorf("helmfile package %s: exit %d, %s\n%s", help, code, errOut, out)
		}
	}
	t.Setenv("PATH", t.TempDir()) // no helmfile to run
	_, errOut, code := runCLI(t, "helmfile", "package", "-e", "prod")
	if code != 1 || !strings.Contains(errOut, `helmfile package: unknown shorthand flag: 'e' in -e; helmfile's own flags and selectors go after "--"`) {
		t.Errorf("helmfile package -e prod: exit %d, %s", code, errOut)
	}
}

// TestPackagePushFailureNamesTheRelease: a push that cannot reach its
// registry fails the command with the release's name; the archive it
// reported saving stays, for a later `helm-inject push`.
func TestPackagePushFailureNamesTheRelease(t *testing.T) {
	dir := t.TempDir()
	out, errOut, code := runCLI(t, "package", "web", apiChart, "--package-version", "1.0.0", "-d", dir, "--push", "oci://127.0.0.1:1/charts")
	if code != 1 || !strings.Contains(errOut, `release "web": `) || !strings.Contains(errOut, "127.0.0.1:1") {
		t.Errorf("push to a closed port: exit %d, %s", code, errOut)
	}
	archives, _ := filepath.Glob(filepath.Join(dir, "*.tgz"))
	if len(archives) != 1 || !strings.Contains(out, "Successfully packaged chart and saved it to: "+archives[0]) {
		t.Errorf("archives %v after %q", archives, out)
	}
}
