package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/helm-inject/helm-inject/inject"
)

// defaultLibrary is where built-in injector definitions are looked up when
// --injector-library is not given.
const defaultLibrary = "injectors"

func newInjectorsCommand() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "injectors",
		Short: "Manage a library of versioned built-in injector definitions",
		Long: `An injector library is a folder with one file per released version of each
built-in injector (NAME/VERSION.yaml) and a lock file, injectors.lock, that
records each version's digest. A locked version is frozen: helm-inject
refuses a definition whose file changed after it was locked.`,
	}
	cmd.PersistentFlags().StringVar(&dir, "injector-library", defaultLibrary, "the injector library folder")

	cmd.AddCommand(&cobra.Command{
		Use:   "lock",
		Short: "Record the digest of every version that is not locked yet",
		Args:  cobra.NoArgs,
		RunE: withLibrary(&dir, func(cmd *cobra.Command, lib *inject.Library) error {
			added, err := lib.Lock()
			if err != nil {
				return err
			}
			for _, a := range added {
				fmt.Fprintf(cmd.OutOrStdout(), "locked %s\n", a)
			}
			if len(added) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "every version was already locked")
			}
			return nil
		}),
	}, &cobra.Command{
		Use:   "verify",
		Short: "Fail unless every version is locked and unchanged (for CI)",
		Args:  cobra.NoArgs,
		RunE: withLibrary(&dir, func(cmd *cobra.Command, lib *inject.Library) error {
			if err := lib.Verify(); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: every injector version is locked and unchanged\n", dir)
			return nil
		}),
	}, newInjectorsListCommand(&dir))
	return cmd
}

// injectorVersion is one line of injectors list.
type injectorVersion struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Locked  bool   `json:"locked"`
	File    string `json:"file"`
}

func newInjectorsListCommand(dir *string) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the injectors and versions in the library",
		Args:  cobra.NoArgs,
		RunE: withLibrary(dir, func(cmd *cobra.Command, lib *inject.Library) error {
			var all []injectorVersion
			for _, name := range lib.Names() {
				for _, d := range lib.Versions(name) {
					all = append(all, injectorVersion{Name: name, Version: d.Version, Locked: lib.Locked(d), File: d.File})
				}
			}
			w := cmd.OutOrStdout()
			if done, err := writeStructured(w, output, all); done {
				return err
			}
			for _, v := range all {
				state := "locked"
				if !v.Locked {
					state = "NOT LOCKED"
				}
				fmt.Fprintf(w, "%-20s %-10s %-10s %s\n", v.Name, v.Version, state, v.File)
			}
			return nil
		}),
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table, json or yaml")
	return cmd
}

// withLibrary runs an injectors subcommand on the library in *dir, read
// when the command runs (after its flags are parsed).
func withLibrary(dir *string, run func(*cobra.Command, *inject.Library) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		lib, err := inject.LoadLibrary(*dir)
		if err != nil {
			return err
		}
		return run(cmd, lib)
	}
}
