package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/helm-inject/helm-inject/helmfile"
)

const helmfileLong = `Run the real helmfile with helm-inject as its helm: releases in the state
file may carry

  injector: "istioctl kube-inject f=FILE,injectConfigFile=inject-config.yaml"
  injectors:
    - "linkerd inject,--manual,FILE"
    - inject: "my-injector FILE"
    - with: log-shipper@^1
      params: {destination: logs:24224}
      reconcile: never

helm-inject translates them into postRenderer/postRendererArgs (fields
helmfile knows), writes the translated state file (and the local files it
pulls in with bases: and helmfiles:; for a helmfile.d folder, a folder of
translated state files) beside the original under a hidden name, runs
helmfile, and removes them. helmfile then calls
helm-inject as helm: injected releases go through the inject pipeline
(upgrade, template, diff), a dependency build of a chart without
dependencies is answered as helm would (it does nothing), every other call
goes to the real helm as it is (--helm-binary, $HELMFILE_HELM_BINARY, or
helm on PATH).

Before sync, a preflight "helmfile diff" renders and injects every selected
release without writing, so a broken injector applies nothing (apply's own
diff does the same). Within one run each release is rendered and injected
once: later calls with exactly the same inputs reuse that plan.

All arguments are helmfile's: helm-inject helmfile -e staging -l name=api apply

helm-inject helmfile package packages every release of the state for
GitOps, one archive each: see its help.`

const helmfilePackageLong = `Run helmfile template on the state and package every selected release,
injected or not, as helm-inject package does: one archive per release,
for CI. Each release's name, namespace, chart, values and injector fields
are the state's; these flags apply to every release, and helmfile's own
flags and selectors go after "--":

  helm-inject helmfile package -d charts --push oci://registry.example/injected -- -e prod -l tier=web

The flags helmfile passes to helm template that choose what template
prints or check it against a cluster (include-crds, skip-tests, no-hooks,
validate, output-dir, show-only) do not apply to a package, which holds
the whole chart and renders offline.`

// addHelmfilePackageFlags defines the flags of helmfile package: package's
// flags that apply to every release of the run.
func addHelmfilePackageFlags(f *pflag.FlagSet) {
	f.StringP("destination", "d", ".", "location to write the charts")
	f.String("push", "", "push each archive (and its .prov file) to this OCI registry location, as helm push: oci://HOST/PATH")
	f.Bool("plain-http", false, "use insecure HTTP connections for the push")
	f.String("ca-file", "", "verify certificates of HTTPS-enabled registries using this CA bundle")
	f.String("cert-file", "", "identify the registry client using this SSL certificate file")
	f.String("key-file", "", "identify the registry client using this SSL key file")
	f.Bool("insecure-skip-tls-verify", false, "skip tls certificate checks for the push")
	f.Bool("sign", false, "use a PGP private key to sign each package, as helm package --sign")
	f.String("key", "", "name of the key to use when signing. Used if --sign is true")
	f.String("keyring", defaultKeyring(), "location of the keyring holding the signing key")
	f.String("passphrase-file", "", "location of a file which contains the passphrase for the signing key")
}

func newHelmfilePackageCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "package [FLAGS] [-- HELMFILE FLAGS]",
		Short: "Package every release of a helmfile state, with its injector fields, as a chart archive",
		Long:  helmfilePackageLong,
		// The flags are read by helmfilePackageFlags, which keeps what
		// follows "--" for helmfile.
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			// --help and -h, anywhere before "--", come back as
			// pflag.ErrHelp (wrapped), which cobra answers with the help.
			flags, helmfileArgs, err := helmfilePackageFlags(args)
			if err != nil {
				return err
			}
			return runHelmfile(cmd, helmfileArgs, flags)
		},
	}
	addHelmfilePackageFlags(cmd.Flags())
	return cmd
}

// helmfilePackageFlags reads helmfile package's command line: the flags
// given (as package takes them) and helmfile's arguments, which follow
// "--", with the template command.
func helmfilePackageFlags(args []string) (packageFlags, helmfileArgs []string, err error) {
	f := pflag.NewFlagSet("helmfile package", pflag.ContinueOnError)
	f.SetOutput(io.Discard)
	addHelmfilePackageFlags(f)
	if err := f.Parse(args); err != nil {
		return nil, nil, fmt.Errorf("helmfile package: %w; helmfile's own flags and selectors go after \"--\"", err)
	}
	if f.ArgsLenAtDash() < 0 && f.NArg() > 0 || f.ArgsLenAtDash() > 0 {
		return nil, nil, fmt.Errorf("helmfile package: %q is not a package flag; helmfile's own flags and selectors go after \"--\"", f.Arg(0))
	}
	f.Visit(func(fl *pflag.Flag) {
		if fl.Value.Type() == "bool" {
			packageFlags = append(packageFlags, "--"+fl.Name)
			return
		}
		packageFlags = append(packageFlags, "--"+fl.Name, fl.Value.String())
	})
	if packageFlags == nil {
		packageFlags = []string{}
	}
	return packageFlags, append(f.Args(), "template"), nil
}

func newHelmfileCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:                "helmfile [helmfile flags and command]",
		Short:              "Run helmfile with injector: and injectors: fields on releases",
		Long:               helmfileLong,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 && (args[0] == "--help" || args[0] == "-h") {
				return cmd.Help()
			}
			return runHelmfile(cmd, args, nil)
		},
	}
	cmd.AddCommand(newHelmfilePackageCommand())
	return cmd
}

// runHelmfile runs the real helmfile with args through the wrapper; with
// packageFlags (not nil), every template call packages.
func runHelmfile(cmd *cobra.Command, args, packageFlags []string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding helm-inject's own path: %w", err)
	}
	w := &helmfile.Wrapper{Self: self, Stdin: cmd.InOrStdin(), Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr(), Package: packageFlags}
	if code := w.Run(cmd.Context(), args); code != 0 {
		return exitError{code: code}
	}
	return nil
}
