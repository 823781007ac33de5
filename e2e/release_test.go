package e2e

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/helm-inject/helm-inject/internal/testenv"

	"sigs.k8s.io/yaml"
)

// TestReleaseArchives runs the real goreleaser on a copy of the repository:
// `goreleaser check`, then `goreleaser release --snapshot --clean --skip=ko`
// (ko's image needs its base image from a registry, which a test machine does
// not reach; the image's binary is the linux builds' own). It checks
// every archive and the checksums, runs the linux/amd64 binary, and installs
// the archive as a Helm plugin twice, the two ways a user without Go does:
// from the archive's URL, and from a source checkout whose install hook
// downloads the archive. Both installs then inject a release.
func TestReleaseArchives(t *testing.T) {
	goreleaser, err := testenv.Tool(cluster.ToolsBin, "goreleaser")
	if err != nil {
		t.Fatal(err)
	}
	src := repoCopy(t)
	// goreleaser reads the project's remote; a local checkout may have none.
	command{dir: src}.run(t, "git", "remote", "remove", "origin")
	command{dir: src}.mustRun(t, "git", "remote", "add", "origin", "https://github.com/helm-inject/helm-inject.git")
	// Build with this machine's Go and module cache only; cross-compiling six
	// targets on a cold build cache takes several minutes.
	c := command{dir: src, timeout: 40 * time.Minute, env: []string{"GOTOOLCHAIN=local", "GOFLAGS=-mod=readonly"}}
	c.mustRun(t, goreleaser, "check")
	build := c.mustRun(t, goreleaser, "release", "--snapshot", "--clean", "--skip=ko")
	dist := filepath.Join(src, "dist")

	// Six archives and a checksums file that covers each of them.
	want := []string{
		"helm-inject-darwin-amd64.tar.gz", "helm-inject-darwin-arm64.tar.gz",
		"helm-inject-linux-amd64.tar.gz", "helm-inject-linux-arm64.tar.gz",
		"helm-inject-windows-amd64.zip", "helm-inject-windows-arm64.zip",
	}
	sums := readChecksums(t, filepath.Join(dist, "checksums.txt"))
	if got := slices.Sorted(maps.Keys(sums)); !slices.Equal(got, want) {
		t.Fatalf("checksums.txt lists %v, want %v", got, want)
	}
	for _, name := range want {
		data, err := os.ReadFile(filepath.Join(dist, name))
		if err != nil {
			t.Fatal(err)
		}
		if h := sha256.Sum256(data); hex.EncodeToString(h[:]) != sums[name] {
			t.Errorf("%s: checksum does not match checksums.txt", name)
		}
		binary := "helm-inject"
		if strings.Contains(name, "windows") {
			binary += ".exe"
		}
		files := archiveFiles(t, filepath.Join(dist, name))
		for _, f := range []string{binary, "plugin.yaml", "README.md", "LICENSE", "install-binary.sh", "plugin.complete"} {
			if !slices.Contains(files, f) {
				t.Errorf("%s lacks %s (has %v)", name, f, files)
			}
		}
	}

	// The linux/amd64 binary carries the snapshot version and the commit.
	unpacked := t.TempDir()
	command{dir: unpacked}.mustRun(t, "tar", "-xzf", filepath.Join(dist, "helm-inject-linux-amd64.tar.gz"))
	head := strings.TrimSpace(command{dir: src}.mustRun(t, "git", "rev-parse", "HEAD").stdout)
	v := command{}.mustRun(t, filepath.Join(unpacked, "helm-inject"), "version").stdout
	if !strings.Contains(v, "-snapshot+"+head[:7]) || !strings.Contains(v, "commit "+head) {
		t.Errorf("helm-inject version of the snapshot build:\n%s\nwant version ...-snapshot+%s and commit %s\ngoreleaser:\n%s", v, head[:7], head, build.stderr)
	}

	server := httptest.NewServer(http.FileServer(http.Dir(dist)))
	defer server.Close()

	t.Run("helm plugin install from the archive URL", func(t *testing.T) {
		helmPluginRoundTrip(t, nil, server.URL+"/helm-inject-linux-amd64.tar.gz", "fromurl")
	})

	// The hook downloads over https only; curl trusts the test server's
	// certificate through CURL_CA_BUNDLE.
	secure := httptest.NewTLSServer(http.FileServer(http.Dir(dist)))
	defer secure.Close()
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: secure.Certificate().Raw})
	if err := os.WriteFile(caFile, ca, 0o600); err != nil {
		t.Fatal(err)
	}

	t.Run("source checkout without Go downloads the archive", func(t *testing.T) {
		checkout := repoCopy(t)
		env := []string{"PATH=" + pathWithout(t, "go"), "HELM_INJECT_RELEASE_URL=" + secure.URL, "CURL_CA_BUNDLE=" + caFile}
		out := helmPluginRoundTrip(t, env, checkout, "fromhook")
		if !strings.Contains(out, "downloading "+secure.URL+"/helm-inject-linux-amd64.tar.gz") {
			t.Errorf("the install hook did not download the archive:\n%s", out)
		}
	})

	t.Run("the hook refuses a plain http download unless a test allows it", func(t *testing.T) {
		dataHome := t.TempDir()
		env := []string{"HELM_DATA_HOME=" + dataHome, "HELM_PLUGINS=" + filepath.Join(dataHome, "plugins"),
			"PATH=" + pathWithout(t, "go"), "HELM_INJECT_RELEASE_URL=" + server.URL}
		r := command{env: env}.run(t, helmBin(t), "plugin", "install", repoCopy(t))
		if r.code == 0 || !strings.Contains(r.stderr+r.stdout, "refusing to download from "+server.URL+": not an https URL") {
			t.Errorf("installing over http:\n%s", r)
		}
		if _, err := os.Stat(filepath.Join(dataHome, "plugins", "inject", "bin", "helm-inject")); err == nil {
			t.Error("a binary was installed over http")
		}
		// An https server that redirects to plain http is refused too.
		redirect := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, server.URL+r.URL.Path, http.StatusFound)
		}))
		defer redirect.Close()
		redirectCA := filepath.Join(t.TempDir(), "ca.pem")
		if err := os.WriteFile(redirectCA, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: redirect.Certificate().Raw}), 0o600); err != nil {
			t.Fatal(err)
		}
		home := t.TempDir()
		redirected := []string{"HELM_DATA_HOME=" + home, "HELM_PLUGINS=" + filepath.Join(home, "plugins"),
			"PATH=" + pathWithout(t, "go"), "HELM_INJECT_RELEASE_URL=" + redirect.URL, "CURL_CA_BUNDLE=" + redirectCA}
		r = command{env: redirected}.run(t, helmBin(t), "plugin", "install", repoCopy(t))
		if r.code == 0 || !strings.Contains(r.stderr+r.stdout, "could not download "+redirect.URL) {
			t.Errorf("installing through a redirect to http:\n%s", r)
		}
		env = append(env, "HELM_INJECT_ALLOW_INSECURE_DOWNLOAD=1")
		if out := helmPluginRoundTrip(t, env[2:], repoCopy(t), "fromhttp"); !strings.Contains(out, "downloading "+server.URL) {
			t.Errorf("with HELM_INJECT_ALLOW_INSECURE_DOWNLOAD=1 the hook did not download:\n%s", out)
		}
	})

	// checksums serves the linux/amd64 archive with checksums.txt as
	// edit makes it (nil: no checksums.txt at all), and returns what
	// `helm plugin install` of a checkout without Go printed, and its code.
	checksums := func(t *testing.T, edit func(string) *string) result {
		t.Helper()
		dir := t.TempDir()
		for _, f := range []string{"helm-inject-linux-amd64.tar.gz", "checksums.txt"} {
			data, err := os.ReadFile(filepath.Join(dist, f))
			if err != nil {
				t.Fatal(err)
			}
			if f == "checksums.txt" {
				edited := edit(string(data))
				if edited == nil {
					continue
				}
				data = []byte(*edited)
			}
			if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		srv := httptest.NewTLSServer(http.FileServer(http.Dir(dir)))
		t.Cleanup(srv.Close)
		ca := filepath.Join(t.TempDir(), "ca.pem")
		if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
			t.Fatal(err)
		}
		dataHome := t.TempDir()
		c := command{env: []string{"HELM_DATA_HOME=" + dataHome, "HELM_PLUGINS=" + filepath.Join(dataHome, "plugins"),
			"PATH=" + pathWithout(t, "go"), "HELM_INJECT_RELEASE_URL=" + srv.URL, "CURL_CA_BUNDLE=" + ca}}
		r := c.run(t, helmBin(t), "plugin", "install", repoCopy(t))
		if _, err := os.Stat(filepath.Join(dataHome, "plugins", "helm-inject", "bin", "helm-inject")); err == nil {
			t.Errorf("a binary was installed:\n%s", r)
		}
		return r
	}
	t.Run("the hook refuses an archive that does not match checksums.txt", func(t *testing.T) {
		r := checksums(t, func(s string) *string {
			s = strings.Replace(s, sums["helm-inject-linux-amd64.tar.gz"], strings.Repeat("0", 64), 1)
			return &s
		})
		if r.code == 0 || !strings.Contains(r.stderr+r.stdout, "checksums.txt says '"+strings.Repeat("0", 64)+"'; not installing") {
			t.Errorf("installing a tampered archive:\n%s", r)
		}
	})
	t.Run("the hook refuses an archive checksums.txt does not list", func(t *testing.T) {
		r := checksums(t, func(s string) *string {
			var kept []string
			for _, l := range strings.Split(s, "\n") {
				if !strings.HasSuffix(l, "helm-inject-linux-amd64.tar.gz") {
					kept = append(kept, l)
				}
			}
			s = strings.Join(kept, "\n")
			return &s
		})
		if r.code == 0 || !strings.Contains(r.stderr+r.stdout, "checksums.txt says ''; not installing") {
			t.Errorf("installing an archive checksums.txt does not list:\n%s", r)
		}
	})
	t.Run("the hook refuses an archive without checksums.txt", func(t *testing.T) {
		r := checksums(t, func(string) *string { return nil })
		if r.code == 0 || !strings.Contains(r.stderr+r.stdout, "/checksums.txt to verify the archive") {
			t.Errorf("installing without checksums.txt:\n%s", r)
		}
	})

	// plugin.yaml's Windows command is the binary the zip holds at its
	// top level (the hook does not run on Windows; the zip is unpacked
	// into the plugins folder as it is).
	t.Run("the Windows command of plugin.yaml is in the zip", func(t *testing.T) {
		var manifest struct {
			PlatformCommand []struct{ OS, Command string } `json:"platformCommand"`
		}
		b, err := os.ReadFile(filepath.Join(src, "plugin.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(b, &manifest); err != nil {
			t.Fatal(err)
		}
		var windows string
		for _, c := range manifest.PlatformCommand {
			if c.OS == "windows" {
				windows = c.Command
			}
		}
		files := archiveFiles(t, filepath.Join(dist, "helm-inject-windows-amd64.zip"))
		if rel, ok := strings.CutPrefix(windows, "$HELM_PLUGIN_DIR/"); !ok || !slices.Contains(files, rel) {
			t.Errorf("plugin.yaml's windows command %q is not a file of the zip %v", windows, files)
		}
	})
}

// helmPluginRoundTrip installs the plugin from source into a fresh Helm
// data home, injects a release with `helm inject apply`, and uninstalls the
// plugin. It returns what `helm plugin install` printed.
func helmPluginRoundTrip(t *testing.T, env []string, source, release string) string {
	t.Helper()
	ns := namespace(t)
	dataHome := t.TempDir()
	c := command{env: append([]string{"HELM_DATA_HOME=" + dataHome, "HELM_PLUGINS=" + filepath.Join(dataHome, "plugins")}, env...)}
	out := c.mustRun(t, helmBin(t), "plugin", "install", source)
	if !strings.Contains(out.stdout, "Installed plugin: inject") {
		t.Errorf("helm plugin install:\n%s", out)
	}
	c.mustRun(t, helmBin(t), "inject", "apply", release, filepath.Join(repoRoot(t), apiChart), "-n", ns,
		"--injector", "sidecar-injector f=FILE")
	w := workloads(t, mustHelm(t, "get", "manifest", release, "-n", ns).stdout)["Deployment/"+release]
	if !contains(w.containers, "sidecar") {
		t.Errorf("helm inject apply: containers %v", w.containers)
	}
	c.mustRun(t, helmBin(t), "plugin", "uninstall", "inject")
	return out.stdout + out.stderr
}

// pathWithout returns $PATH (with binDir first) minus every folder that has
// an executable called name: a machine without that program.
func pathWithout(t *testing.T, name string) string {
	t.Helper()
	var keep []string
	for _, dir := range filepath.SplitList(binDir + string(os.PathListSeparator) + os.Getenv("PATH")) {
		if fi, err := os.Stat(filepath.Join(dir, name)); err == nil && !fi.IsDir() {
			continue
		}
		keep = append(keep, dir)
	}
	return strings.Join(keep, string(os.PathListSeparator))
}

func readChecksums(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sums := map[string]string{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		sum, name, ok := strings.Cut(s.Text(), "  ")
		if !ok {
			t.Fatalf("%s: malformed line %q", path, s.Text())
		}
		sums[name] = sum
	}
	return sums
}

// archiveFiles lists the regular files in a .tar.gz or .zip archive.
func archiveFiles(t *testing.T, path string) []string {
	t.Helper()
	var files []string
	if strings.HasSuffix(path, ".zip") {
		z, err := zip.OpenReader(path)
		if err != nil {
			t.Fatal(err)
		}
		defer z.Close()
		for _, f := range z.File {
			if !f.FileInfo().IsDir() {
				files = append(files, f.Name)
			}
		}
		return files
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if h.Typeflag == tar.TypeReg {
			files = append(files, h.Name)
		}
	}
}
