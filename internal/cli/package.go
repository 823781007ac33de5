package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/cli"
	"helm.sh/helm/v4/pkg/registry"

	"github.com/helm-inject/helm-inject/chartify"
	"github.com/helm-inject/helm-inject/inject"
	"github.com/helm-inject/helm-inject/release"
)

const packageLong = `Render a chart for one release, run it through the injectors, and write
the result as a chart archive (NAME-VERSION.tgz) that helm, Argo CD and
Flux install with no plugin: its templates are the injected manifests.

It renders exactly as template does (same values, injectors, pins and
offline capabilities: --kube-version, --api-versions). The archive is
reproducible: the same inputs give the same bytes, every file dated
SOURCE_DATE_EPOCH (default: the Unix epoch).

The chart says what it is:
  - Chart.yaml's annotations record the source chart (name, version,
    digest), the values' digest, every injector with its version and
    digest, and the release name and namespace it was rendered for;
  - its values are baked in: values.schema.json refuses any value set on
    it, with a message that says so;
  - it installs only as that release name in that namespace; another
    fails with a message that says which.

The version defaults to the source chart's version with build metadata
naming the content: 1.4.2 gives 1.4.2+inject.<12 hex digits of the
archive's sha256> (helm writes "+" as "_" in an OCI tag).

--push oci://HOST/PATH pushes the archive with helm's registry client, as
helm push does (helm registry login's credentials, --plain-http,
--ca-file, --cert-file, --key-file, --insecure-skip-tls-verify, which also
apply to fetching the source chart). --sign signs it with a PGP key, as
helm package --sign does, so that helm install --verify checks it.`

// packageFlags are the flags of package: template's way to render, and
// helm package's and helm push's for the archive.
type packageFlags struct {
	tf             templateFlags
	p              release.Package
	sign           bool
	key            string
	passphraseFile string
	push           string
}

func newPackageCommand(settings *cli.EnvSettings) *cobra.Command {
	pf := &packageFlags{}
	cmd := &cobra.Command{
		Use:   "package NAME CHART",
		Short: "Write a chart with sidecars injected, for one release, as a chart archive",
		Long:  packageLong,
		Args:  exactArgs(2, "a release NAME and a CHART"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return pf.run(cmd, settings, args)
		},
	}
	pf.add(cmd.Flags())
	return cmd
}

func (pf *packageFlags) add(f *pflag.FlagSet) {
	tf := &pf.tf
	tf.chart.add(f)
	tf.injectors.add(f)
	tf.render.add(f, false)
	f.StringVar(&tf.progress, "progress", "auto", "show on stderr injectors that run long: "+progressModes)
	f.StringVar(&pf.p.InjectDir, "injector-dir", "", "working directory of injector commands (default: the current directory)")
	f.StringVar(&pf.p.KubeVersion, "kube-version", "", "Kubernetes version used for Capabilities.KubeVersion")
	f.StringSliceVarP(&tf.apiVersions, "api-versions", "a", nil, "Kubernetes api versions used for Capabilities.APIVersions")
	f.BoolVar(&pf.p.SkipSchemaValidation, "skip-schema-validation", false, "disable JSON schema validation of the source chart's values")
	f.StringVar(&tf.pinsFile, "injector-pins", "", "inject exactly the built-in injector versions this pins file names (helm-inject-pins.yaml, written by \"helm-inject argocd pin\"); a built-in injector without a pin is an error")
	f.StringVarP(&pf.p.Destination, "destination", "d", ".", "location to write the chart")
	f.StringVar(&pf.p.Version, "package-version", "", "the packaged chart's version (default: the source chart's version+inject.<digest of the content>)")
	f.BoolVar(&pf.sign, "sign", false, "use a PGP private key to sign this package, as helm package --sign")
	f.StringVar(&pf.key, "key", "", "name of the key to use when signing. Used if --sign is true")
	f.StringVar(&pf.passphraseFile, "passphrase-file", "", `location of a file which contains the passphrase for the signing key. Use "-" in order to read from stdin.`)
	f.StringVar(&pf.push, "push", "", "push the archive (and its .prov file) to this OCI registry location, as helm push: oci://HOST/PATH")
}

func (pf *packageFlags) run(cmd *cobra.Command, settings *cli.EnvSettings, args []string) error {
	name, ref := args[0], args[1]
	tf, p := &pf.tf, &pf.p
	fail := func(err error) error { return fmt.Errorf("release %q: %w", name, err) }
	// Everything that can be refused is checked before rendering.
	if pf.sign && pf.key == "" {
		return fail(errors.New("--sign needs --key, the name of the signing key in --keyring"))
	}
	if pf.push != "" && !registry.IsOCI(pf.push) {
		return fail(fmt.Errorf("--push %s: give an OCI registry location, oci://HOST/PATH", pf.push))
	}
	var err error
	if p.Time, err = sourceDateEpoch(os.Getenv("SOURCE_DATE_EPOCH")); err != nil {
		return fail(err)
	}
	rep, err := progressReporter(tf.progress, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	if p.Injectors, err = tf.injectors.declared(); err != nil {
		return fail(err)
	}
	p.Injectors.Slow = rep.Slow
	if p.Render, err = tf.render.flags(cmd.Context(), settings, tf.apiVersions); err != nil {
		return fail(err)
	}
	if tf.pinsFile != "" {
		if p.Pins, err = inject.ReadPins(tf.pinsFile); err != nil {
			return fail(err)
		}
	}
	p.Namespace = settings.Namespace()
	src, vals, err := tf.chart.load(cmd.Context(), settings, ref, cmd.ErrOrStderr())
	if err != nil {
		return fail(err)
	}
	path, _, err := p.Run(cmd.Context(), name, src, vals)
	if err != nil {
		return err
	}
	if pf.sign {
		signer := action.NewPackage()
		signer.Sign, signer.Key, signer.Keyring, signer.PassphraseFile = true, pf.key, tf.chart.path.Keyring, pf.passphraseFile
		if err := signer.Clearsign(path); err != nil {
			os.Remove(path)
			return fail(fmt.Errorf("signing %s with key %q of %s: %w", path, pf.key, tf.chart.path.Keyring, err))
		}
	}
	fmt.Fprintf(cmd.OutOrStdout(), "Successfully packaged chart and saved it to: %s\n", path)
	if pf.push == "" {
		return nil
	}
	if err := pushArchive(cmd, settings, &tf.chart, path, pf.push); err != nil {
		return fail(err)
	}
	return nil
}

// sourceDateEpoch is the time of SOURCE_DATE_EPOCH (seconds since the
// Unix epoch, the reproducible-builds convention); zero when unset.
func sourceDateEpoch(v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	s, err := strconv.ParseInt(v, 10, 64)
	if err != nil || s < 0 {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%s: want seconds since the Unix epoch", v)
	}
	return time.Unix(s, 0).UTC(), nil
}

// pushArchive pushes a packaged chart (and its .prov file, when there is
// one beside it) with helm's own push action and a registry client built
// as the helm CLI builds it.
func pushArchive(cmd *cobra.Command, settings *cli.EnvSettings, c *chartFlags, archive, remote string) error {
	// The client says what it pushed ("Pushed: REF", "Digest: ..."), on
	// stdout, as helm push does.
	rc, err := c.registryClient(settings, cmd.OutOrStdout())
	if err != nil {
		return err
	}
	push := action.NewPushWithOpts(
		action.WithPushConfig(&action.Configuration{RegistryClient: rc}),
		action.WithTLSClientConfig(c.path.CertFile, c.path.KeyFile, c.path.CaFile),
		action.WithInsecureSkipTLSVerify(c.path.InsecureSkipTLSVerify),
		action.WithPlainHTTP(c.path.PlainHTTP),
		action.WithPushOptWriter(cmd.OutOrStdout()),
	)
	push.Settings = settings
	out, err := push.Run(archive, remote)
	io.WriteString(cmd.OutOrStdout(), out)
	if err != nil {
		return fmt.Errorf("pushing %s to %s: %w", archive, remote, err)
	}
	return nil
}

const pushLong = `Push a chart archive that helm-inject package wrote (and its .prov
file, when there is one beside it) to an OCI registry, with helm's own
registry client: the same as helm push, with helm registry login's
credentials. An archive helm-inject did not write is refused: push it with
helm push.`

func newPushCommand(settings *cli.EnvSettings) *cobra.Command {
	c := &chartFlags{}
	cmd := &cobra.Command{
		Use:   "push ARCHIVE oci://HOST/PATH",
		Short: "Push a chart helm-inject package wrote to an OCI registry",
		Long:  pushLong,
		Args:  exactArgs(2, "a chart ARCHIVE and a registry location"),
		RunE: func(cmd *cobra.Command, args []string) error {
			archive, remote := args[0], args[1]
			if !registry.IsOCI(remote) {
				return fmt.Errorf("%s: give an OCI registry location, oci://HOST/PATH", remote)
			}
			ch, err := loader.Load(archive)
			if err != nil {
				return fmt.Errorf("%s: %w", archive, err)
			}
			if _, ok := ch.Metadata.Annotations[chartify.AnnotationRelease]; !ok {
				return fmt.Errorf("%s: chart %s %s was not written by helm-inject package (its Chart.yaml has no %s annotation); push it with helm push",
					archive, ch.Name(), ch.Metadata.Version, chartify.AnnotationRelease)
			}
			return pushArchive(cmd, settings, c, archive, remote)
		},
	}
	f := cmd.Flags()
	f.StringVar(&c.path.CertFile, "cert-file", "", "identify registry client using this SSL certificate file")
	f.StringVar(&c.path.KeyFile, "key-file", "", "identify registry client using this SSL key file")
	f.StringVar(&c.path.CaFile, "ca-file", "", "verify certificates of HTTPS-enabled servers using this CA bundle")
	f.BoolVar(&c.path.InsecureSkipTLSVerify, "insecure-skip-tls-verify", false, "skip tls certificate checks for the chart upload")
	f.BoolVar(&c.path.PlainHTTP, "plain-http", false, "use insecure HTTP connections for the chart upload")
	f.StringVar(&c.path.Username, "username", "", "chart repository username where to locate the requested chart")
	f.StringVar(&c.path.Password, "password", "", "chart repository password where to locate the requested chart")
	return cmd
}
