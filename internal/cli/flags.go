package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"helm.sh/helm/v4/pkg/action"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/cli"
	"helm.sh/helm/v4/pkg/cli/values"
	"helm.sh/helm/v4/pkg/downloader"
	"helm.sh/helm/v4/pkg/getter"
	"helm.sh/helm/v4/pkg/registry"
	"helm.sh/helm/v4/pkg/strvals"

	"github.com/helm-inject/helm-inject/chartify"
	"github.com/helm-inject/helm-inject/inject"
	"github.com/helm-inject/helm-inject/release"
)

// chartFlags are Helm's flags for finding a chart and setting its values.
type chartFlags struct {
	values    values.Options
	path      action.ChartPathOptions
	devel     bool
	depUpdate bool
	// offline loads a local chart without an OCI registry client (which
	// reads the registry's credentials): a confined render.
	offline bool
}

func (c *chartFlags) add(f *pflag.FlagSet) {
	f.StringSliceVarP(&c.values.ValueFiles, "values", "f", nil, "specify values in a YAML file or a URL (can specify multiple)")
	f.StringArrayVar(&c.values.Values, "set", nil, "set values on the command line (can specify multiple or separate values with commas: key1=val1,key2=val2)")
	f.StringArrayVar(&c.values.StringValues, "set-string", nil, "set STRING values on the command line (can specify multiple or separate values with commas: key1=val1,key2=val2)")
	f.StringArrayVar(&c.values.FileValues, "set-file", nil, "set values from respective files specified via the command line (can specify multiple or separate values with commas: key1=path1,key2=path2)")
	f.StringArrayVar(&c.values.JSONValues, "set-json", nil, "set JSON values on the command line (can specify multiple or separate values with commas: key1=jsonval1,key2=jsonval2)")
	f.StringArrayVar(&c.values.LiteralValues, "set-literal", nil, "set a literal STRING value on the command line")
	f.StringVar(&c.path.Version, "version", "", "a version constraint for the chart version to use (e.g. 1.1.1 or ^2.0.0); default: the latest")
	f.BoolVar(&c.devel, "devel", false, "use development versions, too. Equivalent to version '>0.0.0-0'. If --version is set, this is ignored")
	f.StringVar(&c.path.RepoURL, "repo", "", "chart repository url where to locate the requested chart")
	f.StringVar(&c.path.Username, "username", "", "chart repository username where to locate the requested chart")
	f.StringVar(&c.path.Password, "password", "", "chart repository password where to locate the requested chart")
	f.StringVar(&c.path.CertFile, "cert-file", "", "identify HTTPS client using this SSL certificate file")
	f.StringVar(&c.path.KeyFile, "key-file", "", "identify HTTPS client using this SSL key file")
	f.StringVar(&c.path.CaFile, "ca-file", "", "verify certificates of HTTPS-enabled servers using this CA bundle")
	f.BoolVar(&c.path.InsecureSkipTLSVerify, "insecure-skip-tls-verify", false, "skip tls certificate checks for the chart download")
	f.BoolVar(&c.path.PlainHTTP, "plain-http", false, "use insecure HTTP connections for the chart download")
	f.BoolVar(&c.path.PassCredentialsAll, "pass-credentials", false, "pass credentials to all domains")
	f.BoolVar(&c.path.Verify, "verify", false, "verify the package before using it")
	f.StringVar(&c.path.Keyring, "keyring", defaultKeyring(), "location of public keys used for verification")
	f.BoolVar(&c.depUpdate, "dependency-update", false, "for a chart folder, update its dependencies if they are missing before rendering (as helm)")
}

// updateDependencies runs helm's dependency update on a chart folder
// (--dependency-update); chartify.Load calls it when dependencies are
// missing.
func (c *chartFlags) updateDependencies(settings *cli.EnvSettings, rc *registry.Client, out io.Writer) func(string) error {
	if !c.depUpdate {
		return nil
	}
	return func(dir string) error {
		man := &downloader.Manager{
			Out: out, ChartPath: dir, Keyring: c.path.Keyring,
			Getters: getter.All(settings), RegistryClient: rc,
			RepositoryConfig: settings.RepositoryConfig, RepositoryCache: settings.RepositoryCache,
			Debug: settings.Debug,
		}
		return man.Update()
	}
}

func defaultKeyring() string {
	if v, ok := os.LookupEnv("GNUPGHOME"); ok {
		return filepath.Join(v, "pubring.gpg")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".gnupg", "pubring.gpg")
}

// load resolves the chart reference and merges the user's values.
func (c *chartFlags) load(ctx context.Context, settings *cli.EnvSettings, ref string, stderr io.Writer) (release.Source, map[string]any, error) {
	var rc *registry.Client
	if !c.offline {
		var err error
		if rc, err = c.registryClient(settings, stderr); err != nil {
			return release.Source{}, nil, err
		}
	}
	// Helm's chart downloads take no context; a stalled repository must
	// not make Ctrl-C or SIGTERM wait, so the load is abandoned (it writes
	// only to Helm's cache) when ctx ends.
	type loaded struct {
		ch  *chart.Chart
		err error
	}
	done := make(chan loaded, 1)
	go func() {
		ch, _, err := chartify.Load(ref, chartify.LoadOptions{
			PathOptions: c.path, Devel: c.devel, Settings: settings, RegistryClient: rc,
			UpdateDependencies: c.updateDependencies(settings, rc, stderr),
		})
		done <- loaded{ch, err}
	}()
	var ch *chart.Chart
	select {
	case <-ctx.Done():
		return release.Source{}, nil, fmt.Errorf("chart %s: interrupted while loading it: %w", ref, context.Cause(ctx))
	case l := <-done:
		if l.err != nil {
			return release.Source{}, nil, l.err
		}
		ch = l.ch
	}
	vals, err := c.values.MergeValues(getter.All(settings))
	if err != nil {
		return release.Source{}, nil, fmt.Errorf("reading values: %w", err)
	}
	return release.Source{Ref: ref, Chart: ch}, vals, nil
}

// registryClient builds an OCI registry client as the helm CLI does.
func (c *chartFlags) registryClient(settings *cli.EnvSettings, stderr io.Writer) (*registry.Client, error) {
	opts := []registry.ClientOption{
		registry.ClientOptDebug(settings.Debug),
		registry.ClientOptEnableCache(true),
		registry.ClientOptWriter(stderr),
		registry.ClientOptCredentialsFile(settings.RegistryConfig),
	}
	if c.path.Username != "" || c.path.Password != "" {
		opts = append(opts, registry.ClientOptBasicAuth(c.path.Username, c.path.Password))
	}
	if c.path.PlainHTTP {
		opts = append(opts, registry.ClientOptPlainHTTP())
	}
	if c.path.CertFile != "" || c.path.CaFile != "" || c.path.InsecureSkipTLSVerify {
		tc, err := tlsConfig(c.path.CertFile, c.path.KeyFile, c.path.CaFile, c.path.InsecureSkipTLSVerify)
		if err != nil {
			return nil, err
		}
		opts = append(opts, registry.ClientOptHTTPClient(&http.Client{
			Transport: &http.Transport{TLSClientConfig: tc, Proxy: http.ProxyFromEnvironment},
		}))
	}
	rc, err := registry.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("creating the OCI registry client: %w", err)
	}
	return rc, nil
}

func tlsConfig(certFile, keyFile, caFile string, insecure bool) (*tls.Config, error) {
	tc := &tls.Config{InsecureSkipVerify: insecure, MinVersion: tls.VersionTLS12} //nolint:gosec // the user asked for it
	if certFile != "" && keyFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("loading client certificate %s: %w", certFile, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("reading CA bundle: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA bundle %s holds no certificate", caFile)
		}
		tc.RootCAs = pool
	}
	return tc, nil
}

// injectorFlag is one --injector, --inject or --with occurrence; all three
// flags append to one list so the injectors run in the order given.
type injectorFlag struct {
	kind string // "injector" (helm-x spec), "inject" (command line), "with" (built-in)
	text string
}

type injectorList struct {
	items *[]injectorFlag
	kind  string
}

func (l injectorList) String() string { return "" }
func (l injectorList) Type() string   { return "stringArray" }
func (l injectorList) Set(s string) error {
	*l.items = append(*l.items, injectorFlag{kind: l.kind, text: s})
	return nil
}

// injectFlags declare the injectors of a release.
type injectFlags struct {
	items    []injectorFlag
	withSet  []string
	versions []string
	// recordsPrograms is set where a revision records each external
	// injector's program (apply, upgrade, diff).
	recordsPrograms bool
	library         string
	timeout         time.Duration
	skipHooks       bool
	skipTests       bool
}

func (i *injectFlags) add(f *pflag.FlagSet) {
	f.Var(injectorList{&i.items, "injector"}, "injector", "an injector in helm-x form, e.g. \"istioctl kube-inject f=FILE,injectConfigFile=inject-config.yaml\" (repeatable; runs in order)")
	f.Var(injectorList{&i.items, "inject"}, "inject", "an injector command line, e.g. \"my-injector --label 'a b' FILE\"; without FILE it reads stdin and writes stdout (repeatable; runs in order)")
	f.Var(injectorList{&i.items, "with"}, "with", "a built-in injector from the library, NAME or NAME@VERSION-CONSTRAINT, e.g. log-shipper@^1 (repeatable; runs in order)")
	f.StringArrayVar(&i.withSet, "with-set", nil, "a parameter of a built-in injector: NAME.PARAM=VALUE, e.g. log-shipper.destination=logs:24224 (repeatable)")
	f.StringVar(&i.library, "injector-library", defaultLibrary, "the folder of built-in injector definitions (NAME/VERSION.yaml and injectors.lock)")
	f.DurationVar(&i.timeout, "injector-timeout", inject.DefaultTimeout, "kill an injector that runs longer than this")
	f.BoolVar(&i.skipHooks, "skip-inject-hooks", false, "do not give hook resources (pre-install jobs, test pods, ...) to the injectors")
	f.BoolVar(&i.skipTests, "skip-inject-tests", false, "do not give `helm test` hooks to the injectors")
}

// libraryUsed is the library folder when a built-in injector is given,
// else "".
func (i *injectFlags) libraryUsed() string {
	for _, it := range i.items {
		if it.kind == "with" {
			return i.library
		}
	}
	return ""
}

// declared parses every injector, and loads the library for built-in
// ones, before anything runs.
func (i *injectFlags) declared() (*inject.Declared, error) {
	p := &inject.Declared{Timeout: i.timeout, SkipHooks: i.skipHooks, SkipTests: i.skipTests}
	if i.recordsPrograms {
		p.IdentifyPrograms, p.Digests = true, inject.DefaultDigestCache()
	}
	params, err := parseWithSet(i.withSet)
	if err != nil {
		return nil, err
	}
	versions, err := parseInjectorVersions(i.versions)
	if err != nil {
		return nil, err
	}
	var lib *inject.Library
	// used are the --with names; versioned the programs an
	// --injector-version names that an --injector or --inject runs.
	used, versioned := map[string]bool{}, map[string]bool{}
	for _, it := range i.items {
		switch it.kind {
		case "with":
			if lib == nil {
				if lib, err = inject.LoadLibrary(i.library); err != nil {
					return nil, fmt.Errorf("--with %s: %w", it.text, err)
				}
			}
			ref, err := inject.ParseTemplateRef(lib, it.text, nil)
			if err != nil {
				return nil, fmt.Errorf("--with %w", err)
			}
			if used[ref.Injector] {
				return nil, fmt.Errorf("--with %s: injector %s is given twice", it.text, ref.Injector)
			}
			used[ref.Injector] = true
			ref.Params = params[ref.Injector]
			p.Specs = append(p.Specs, ref)
		default:
			var c *inject.Command
			if it.kind == "inject" {
				c, err = inject.ParseCommand(it.text)
			} else {
				c, err = inject.ParseSpec(it.text)
			}
			if err != nil {
				return nil, fmt.Errorf("--%s: %w", it.kind, err)
			}
			if v, ok := versions[filepath.Base(c.Argv[0])]; ok {
				c.VersionArgv = v
				versioned[filepath.Base(c.Argv[0])] = true
			}
			p.Specs = append(p.Specs, c)
		}
	}
	for name := range params {
		if !used[name] {
			return nil, fmt.Errorf("--with-set %s...: no --with %s", name, name)
		}
	}
	for program := range versions {
		if !versioned[program] {
			return nil, fmt.Errorf("--injector-version %s=...: no --injector or --inject runs %s", program, program)
		}
	}
	return p, nil
}

// parseInjectorVersions reads PROGRAM=COMMAND flags into the version
// command of each program (by file name).
func parseInjectorVersions(flags []string) (map[string][]string, error) {
	out := map[string][]string{}
	for _, f := range flags {
		program, line, ok := strings.Cut(f, "=")
		if !ok || program == "" || strings.TrimSpace(line) == "" {
			return nil, fmt.Errorf("--injector-version %q: want PROGRAM=COMMAND, e.g. istioctl=istioctl version --remote=false", f)
		}
		c, err := inject.ParseCommand(line)
		if err != nil {
			return nil, fmt.Errorf("--injector-version %s: %w", program, err)
		}
		out[program] = c.Argv
	}
	return out, nil
}

// parseWithSet reads NAME.PARAM=VALUE flags into parameters per injector,
// with the typing rules of --set.
func parseWithSet(flags []string) (map[string]map[string]any, error) {
	out := map[string]map[string]any{}
	for _, f := range flags {
		name, rest, ok := strings.Cut(f, ".")
		if !ok || name == "" || !strings.Contains(rest, "=") {
			return nil, fmt.Errorf("--with-set %q: want NAME.PARAM=VALUE", f)
		}
		if out[name] == nil {
			out[name] = map[string]any{}
		}
		if err := strvals.ParseInto(rest, out[name]); err != nil {
			return nil, fmt.Errorf("--with-set %q: %w", f, err)
		}
	}
	return out, nil
}

// splitComma splits a comma-separated flag value, dropping empty parts.
func splitComma(values []string) []string {
	var out []string
	for _, v := range values {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}
