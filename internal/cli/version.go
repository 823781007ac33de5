package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/helm-inject/helm-inject/internal/version"
)

func newVersionCommand() *cobra.Command {
	var short bool
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the helm-inject version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info := version.Get()
			out := cmd.OutOrStdout()
			if done, err := writeStructured(out, output, info); done {
				return err
			}
			if short {
				_, err := fmt.Fprintln(out, info.Version)
				return err
			}
			_, err := fmt.Fprintln(out, info.String())
			return err
		},
	}
	cmd.Flags().BoolVar(&short, "short", false, "print the version number only")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table, json or yaml")
	return cmd
}
