package cli

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

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

All arguments are helmfile's: helm-inject helmfile -e staging -l name=api apply`

func newHelmfileCommand() *cobra.Command {
	return &cobra.Command{
		Use:                "helmfile [helmfile flags and command]",
		Short:              "Run helmfile with injector: and injectors: fields on releases",
		Long:               helmfileLong,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 && (args[0] == "--help" || args[0] == "-h") {
				return cmd.Help()
			}
			self, err := os.Executable()
			if err != nil {
				return fmt.Errorf("finding helm-inject's own path: %w", err)
			}
			w := &helmfile.Wrapper{Self: self, Stdin: cmd.InOrStdin(), Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr()}
			if code := w.Run(cmd.Context(), args); code != 0 {
				return exitError{code: code}
			}
			return nil
		},
	}
}
