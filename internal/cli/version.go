package cli

import (
	"encoding/json"
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
			switch {
			case output == "json":
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(info)
			case output != "":
				return fmt.Errorf("unknown output format %q (want json)", output)
			case short:
				_, err := fmt.Fprintln(out, info.Version)
				return err
			default:
				_, err := fmt.Fprintln(out, info.String())
				return err
			}
		},
	}
	cmd.Flags().BoolVar(&short, "short", false, "print the version number only")
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: json")
	return cmd
}
