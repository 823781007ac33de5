package cli

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"

	"github.com/ProtonMail/go-crypto/openpgp"
	"helm.sh/helm/v4/pkg/cli"
	"helm.sh/helm/v4/pkg/getter"
	"helm.sh/helm/v4/pkg/provenance"
	repo "helm.sh/helm/v4/pkg/repo/v1"
	sigsyaml "sigs.k8s.io/yaml"
)

// writePEM writes a PEM block to a file in dir and returns its path.
func writePEM(t *testing.T, dir, name, typ string, der []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// chartServer serves a chart repository over TLS that wants basic auth
// and a client certificate. Its index points the chart archives at
// "localhost" while the repository is asked as 127.0.0.1, so credentials
// reach the archive only with --pass-credentials. It holds demo 1.0.0 and
// the pre-release 2.0.0-rc.1; each archive has a provenance file that no
// key signed.
func chartServer(t *testing.T) (url, caFile, certFile, keyFile string) {
	t.Helper()
	dir := t.TempDir()
	charts := filepath.Join(dir, "charts")
	for _, v := range []string{"1.0.0", "2.0.0-rc.1"} {
		ch := &chart.Chart{
			Metadata:  &chart.Metadata{APIVersion: "v2", Name: "demo", Version: v},
			Templates: []*common.File{{Name: "templates/cm.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\ndata:\n  version: {{ .Chart.Version | quote }}\n")}},
		}
		p, err := chartutil.Save(ch, charts)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p+".prov", []byte("-----BEGIN PGP SIGNED MESSAGE-----\nnot signed\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// A client certificate the server requires.
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "client"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	clientCert, _ := x509.ParseCertificate(der)
	certFile = writePEM(t, dir, "client.pem", "CERTIFICATE", der)
	kb, _ := x509.MarshalECPrivateKey(key)
	keyFile = writePEM(t, dir, "client-key.pem", "EC PRIVATE KEY", kb)

	files := http.FileServer(http.Dir(charts))
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "robot" || p != "s3cret" {
			// As a registry says it: an OCI client sends credentials
			// only when challenged.
			w.Header().Set("WWW-Authenticate", `Basic realm="charts"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		files.ServeHTTP(w, r)
	}))
	pool := x509.NewCertPool()
	pool.AddCert(clientCert)
	// The server's own certificate, for both names it is asked by.
	skey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	stmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "charts"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	sder, err := x509.CreateCertificate(rand.Reader, stmpl, stmpl, &skey.PublicKey, skey)
	if err != nil {
		t.Fatal(err)
	}
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool,
		Certificates: []tls.Certificate{{Certificate: [][]byte{sder}, PrivateKey: skey}}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	caFile = writePEM(t, dir, "ca.pem", "CERTIFICATE", sder)
	url = srv.URL
	idx, err := repo.IndexDirectory(charts, strings.Replace(url, "127.0.0.1", "localhost", 1))
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.WriteFile(filepath.Join(charts, "index.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	return url, caFile, certFile, keyFile
}

// TestTemplateChartDownloadFlags: template fetches a chart with helm's
// repository flags, each of which the download needs: --repo, --ca-file
// (or --insecure-skip-tls-verify), --cert-file and --key-file, --username
// and --password, --pass-credentials, --version and --devel.
func TestTemplateChartDownloadFlags(t *testing.T) {
	url, ca, cert, key := chartServer(t)
	home := t.TempDir()
	t.Setenv("HELM_CACHE_HOME", filepath.Join(home, "cache"))
	t.Setenv("HELM_CONFIG_HOME", filepath.Join(home, "config"))
	t.Setenv("HELM_DATA_HOME", filepath.Join(home, "data"))
	full := []string{"template", "r", "demo", "--repo", url, "--ca-file", ca, "--cert-file", cert, "--key-file", key,
		"--username", "robot", "--password", "s3cret", "--pass-credentials"}
	// without drops flags (each with its value, but --pass-credentials).
	without := func(flags ...string) []string {
		var out []string
		for i := 0; i < len(full); i++ {
			if slices.Contains(flags, full[i]) {
				if full[i] != "--pass-credentials" {
					i++
				}
				continue
			}
			out = append(out, full[i])
		}
		return out
	}
	tests := []struct {
		name string
		args []string
		want string // in stdout, or in stderr when the run fails
		ok   bool
	}{
		{"all flags", full, `version: "1.0.0"`, true},
		{"--version", append(slicesClone(full), "--version", "1.0.0"), `version: "1.0.0"`, true},
		{"--devel", append(slicesClone(full), "--devel"), `version: "2.0.0-rc.1"`, true},
		{"--insecure-skip-tls-verify instead of --ca-file", append(without("--ca-file"), "--insecure-skip-tls-verify"), `version: "1.0.0"`, true},
		{"without --ca-file", without("--ca-file"), "certificate", false},
		{"without --cert-file and --key-file", without("--cert-file", "--key-file"), "certificate", false},
		{"without --password", without("--password"), "401", false},
		{"without --pass-credentials", without("--pass-credentials"), "401", false},
		// helm 4's downloader fetches the provenance file without the
		// client certificate this server wants: --verify refuses the
		// chart there (TestTemplateVerifiesWithTheKeyring shows --verify
		// and --keyring on a repository that lets it).
		{"--verify", append(slicesClone(full), "--verify", "--keyring", filepath.Join(home, "missing.gpg")), `failed to fetch provenance "https://localhost`, false},
	}
	// package fetches its chart as template does.
	for _, verb := range renderVerbs() {
		for _, tt := range tests {
			t.Run(verb+" "+tt.name, func(t *testing.T) {
				out, errOut, code := rendered(t, verb, tt.args[1:]...)
				if (code == 0) != tt.ok {
					t.Fatalf("exit %d, want success %v:\n%s%s", code, tt.ok, out, errOut)
				}
				if got := out + errOut; !strings.Contains(got, tt.want) {
					t.Errorf("want %q in:\n%s", tt.want, got)
				}
			})
		}
	}

	// A repository added to a --repository-config file, its index cached
	// in --repository-cache, as helm repo add and helm template use them.
	reposFile := filepath.Join(home, "elsewhere", "repositories.yaml")
	cache := filepath.Join(home, "elsewhere", "cache")
	entry := &repo.Entry{Name: "fixtures", URL: url, CAFile: ca, CertFile: cert, KeyFile: key, Username: "robot", Password: "s3cret", PassCredentialsAll: true}
	f := repo.NewFile()
	f.Update(entry)
	if err := f.WriteFile(reposFile, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(cache, 0o700); err != nil {
		t.Fatal(err)
	}
	// The index is what helm repo update writes into the cache.
	r, err := repo.NewChartRepository(entry, getter.All(cli.New()))
	if err != nil {
		t.Fatal(err)
	}
	r.CachePath = cache
	if _, err := r.DownloadIndexFile(); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(t, "template", "r", "fixtures/demo", "--repository-config", reposFile, "--repository-cache", cache)
	if code != 0 || !strings.Contains(out, `version: "1.0.0"`) {
		t.Errorf("--repository-config and --repository-cache: exit %d: %s", code, errOut)
	}
	if _, errOut, code := runCLI(t, "template", "r", "fixtures/demo", "--repository-cache", cache); code == 0 || !strings.Contains(errOut, "fixtures") {
		t.Errorf("without --repository-config the repository was found: exit %d: %s", code, errOut)
	}
}

// signedChartServer serves, over plain HTTP, a repository whose chart demo
// 1.0.0 is signed by a new key; it returns the repository's URL, a keyring
// with that key's public half, and a keyring with another key only.
func signedChartServer(t *testing.T) (url, goodRing, otherRing string) {
	t.Helper()
	dir := t.TempDir()
	charts := filepath.Join(dir, "charts")
	ch := &chart.Chart{
		Metadata:  &chart.Metadata{APIVersion: "v2", Name: "demo", Version: "1.0.0"},
		Templates: []*common.File{{Name: "templates/cm.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\n")}},
	}
	archive, err := chartutil.Save(ch, charts)
	if err != nil {
		t.Fatal(err)
	}
	ring := func(name string) (*openpgp.Entity, string) {
		e, err := openpgp.NewEntity(name, "", name+"@example.com", nil)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := e.Serialize(&b); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name+".gpg")
		if err := os.WriteFile(p, b.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		return e, p
	}
	signer, goodRing := ring("signer")
	_, otherRing = ring("stranger")
	data, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	meta, err := sigsyaml.Marshal(ch.Metadata)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := (&provenance.Signatory{Entity: signer, KeyRing: openpgp.EntityList{signer}}).ClearSign(data, filepath.Base(archive), meta)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(archive+".prov", []byte(sig), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(charts)))
	t.Cleanup(srv.Close)
	idx, err := repo.IndexDirectory(charts, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.WriteFile(filepath.Join(charts, "index.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	return srv.URL, goodRing, otherRing
}

// TestTemplateVerifiesWithTheKeyring: --verify checks the chart's
// provenance against the keys of --keyring: the signer's keyring passes,
// a keyring without the signer's key refuses the chart, and so does a
// keyring file that is not there.
func TestTemplateVerifiesWithTheKeyring(t *testing.T) {
	url, good, other := signedChartServer(t)
	home := t.TempDir()
	t.Setenv("HELM_CACHE_HOME", filepath.Join(home, "cache"))
	t.Setenv("HELM_CONFIG_HOME", filepath.Join(home, "config"))
	t.Setenv("HELM_DATA_HOME", filepath.Join(home, "data"))
	for _, tt := range []struct {
		name, keyring, want string
		ok                  bool
	}{
		{"the signer's key", good, "name: demo", true},
		{"another key", other, "openpgp: signature made by unknown entity", false},
		{"no keyring file", filepath.Join(home, "missing.gpg"), "missing.gpg", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := runCLI(t, "template", "r", "demo", "--repo", url, "--verify", "--keyring", tt.keyring)
			if (code == 0) != tt.ok || !strings.Contains(out+errOut, tt.want) {
				t.Errorf("exit %d, want success %v and %q in:\n%s%s", code, tt.ok, tt.want, out, errOut)
			}
		})
	}
	// Without --verify the keyring is not read.
	if out, errOut, code := runCLI(t, "template", "r", "demo", "--repo", url, "--keyring", other); code != 0 {
		t.Errorf("without --verify: exit %d\n%s%s", code, out, errOut)
	}
}

// TestTLSConfig: a client certificate is used only with both its files; a
// CA bundle becomes the roots; --insecure-skip-tls-verify is kept.
func TestTLSConfig(t *testing.T) {
	_, ca, cert, key := chartServer(t)
	tc, err := tlsConfig(cert, key, ca, false)
	if err != nil || len(tc.Certificates) != 1 || tc.RootCAs == nil || tc.InsecureSkipVerify {
		t.Errorf("cert, key and CA: %+v, %v", tc, err)
	}
	for _, pair := range [][2]string{{cert, ""}, {"", key}} {
		if tc, err := tlsConfig(pair[0], pair[1], "", true); err != nil || len(tc.Certificates) != 0 || tc.RootCAs != nil || !tc.InsecureSkipVerify {
			t.Errorf("cert %q, key %q: %+v, %v; want no client certificate", pair[0], pair[1], tc, err)
		}
	}
	if _, err := tlsConfig("", "", filepath.Join(t.TempDir(), "none.pem"), false); err == nil || !strings.Contains(err.Error(), "reading CA bundle") {
		t.Errorf("a missing CA bundle: %v", err)
	}
}

// TestRegistryClient: an OCI registry client is made with the TLS flags,
// and a broken one is an error.
func TestRegistryClient(t *testing.T) {
	_, ca, _, _ := chartServer(t)
	c := &chartFlags{}
	c.path.CaFile = ca
	if rc, err := c.registryClient(cli.New(), io.Discard); err != nil || rc == nil {
		t.Errorf("with a CA bundle: %v, %v", rc, err)
	}
	c.path.CaFile = filepath.Join(t.TempDir(), "none.pem")
	if _, err := c.registryClient(cli.New(), io.Discard); err == nil || !strings.Contains(err.Error(), "reading CA bundle") {
		t.Errorf("with a missing CA bundle: %v", err)
	}
}

// TestRegistryClientCredentials: the OCI client sends --username and
// --password to a registry that asks for them, and trusts a --ca-file's
// certificate.
func TestRegistryClientCredentials(t *testing.T) {
	var got []string
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok {
			w.Header().Set("WWW-Authenticate", `Basic realm="charts"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		got = append(got, u+":"+p)
		http.NotFound(w, r)
	})
	plain := httptest.NewServer(handler)
	t.Cleanup(plain.Close)
	for _, tt := range []struct{ user, password string }{{"robot", "s3cret"}} {
		got = nil
		c := &chartFlags{}
		c.path.Username, c.path.Password, c.path.PlainHTTP = tt.user, tt.password, true
		rc, err := c.registryClient(cli.New(), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = rc.Tags(strings.TrimPrefix(plain.URL, "http://") + "/charts/web")
		if want := tt.user + ":" + tt.password; !slices.Contains(got, want) {
			t.Errorf("--username %q --password %q: the registry saw %v", tt.user, tt.password, got)
		}
	}

	// Over TLS with the registry's own certificate as the CA bundle.
	tlsSrv := httptest.NewTLSServer(handler)
	t.Cleanup(tlsSrv.Close)
	ca := writePEM(t, t.TempDir(), "ca.pem", "CERTIFICATE", tlsSrv.Certificate().Raw)
	got = nil
	c := &chartFlags{}
	c.path.Username, c.path.Password, c.path.CaFile = "robot", "s3cret", ca
	rc, err := c.registryClient(cli.New(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	_, err = rc.Tags(strings.TrimPrefix(tlsSrv.URL, "https://") + "/charts/web")
	if len(got) == 0 || (err != nil && strings.Contains(err.Error(), "certificate")) {
		t.Errorf("with --ca-file, the registry was not reached over TLS: %v (saw %v)", err, got)
	}
}
