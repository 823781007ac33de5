package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/cli"
	"sigs.k8s.io/yaml"

	"github.com/helm-inject/helm-inject/inject"
	"github.com/helm-inject/helm-inject/release"
)

// readSetup loads the library when its folder exists (status and list work
// without one; they then cannot say what is outdated) and connects to the
// cluster's release storage in namespace ("" for every namespace, as helm
// list -A does).
func readSetup(cmd *cobra.Command, settings *cli.EnvSettings, library, namespace string) (*inject.Library, *action.Configuration, error) {
	var lib *inject.Library
	if _, err := os.Stat(library); !errors.Is(err, os.ErrNotExist) {
		var lerr error
		if lib, lerr = inject.LoadLibrary(library); lerr != nil {
			return nil, nil, lerr
		}
	}
	cfg, err := release.NewConfiguration(settings, namespace, debugLog(settings, cmd.ErrOrStderr()))
	return lib, cfg, err
}

// checkOutput refuses an unknown -o before anything runs.
func checkOutput(format string) error {
	_, err := writeStructured(io.Discard, format, nil)
	if format == "json" || format == "yaml" {
		return nil
	}
	return err
}

func writeStructured(w io.Writer, format string, v any) (bool, error) {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return true, enc.Encode(v)
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return true, err
		}
		_, err = w.Write(b)
		return true, err
	case "table", "":
		return false, nil
	}
	return true, fmt.Errorf("unknown output format %q (want table, json or yaml)", format)
}

func newStatusCommand(settings *cli.EnvSettings) *cobra.Command {
	var library, output string
	cmd := &cobra.Command{
		Use:   "status RELEASE",
		Short: "Show a release's injectors, their versions, and what they added to each workload",
		Long: `Show the injectors recorded in a release's latest revision, with the version
of each built-in injector, the newest version the library offers (OUTDATED
when newer), and per workload the containers each built-in injector added.
Only the Helm release (its Secret in the cluster) is read.`,
		Args: exactArgs(1, "a RELEASE name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			lib, cfg, err := readSetup(cmd, settings, library, settings.Namespace())
			if err != nil {
				return err
			}
			st := release.NewStatus(cfg)
			st.Library = lib
			rs, err := st.Run(args[0])
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if done, err := writeStructured(w, output, rs); done {
				return err
			}
			fmt.Fprintf(w, "NAME: %s\nNAMESPACE: %s\nREVISION: %d\nSTATUS: %s\nCHART: %s\nSOURCE: %s\n\n", rs.Name, rs.Namespace, rs.Revision, rs.Status, rs.Chart, rs.Source)
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "INJECTOR\tVERSION\tPROGRAM\tNEWEST\tOUTDATED")
			for _, in := range rs.Injectors {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", in.Name, dash(in.Version), dash(in.Program.Short()), dash(in.Newest), yes(in.Outdated))
			}
			tw.Flush()
			writeInjectorHistory(w, rs.History)
			if len(rs.Workloads) > 0 {
				fmt.Fprintln(w)
				tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "WORKLOAD\tINJECTOR\tVERSION\tADDED")
				for _, wl := range rs.Workloads {
					name := wl.Kind + "/" + wl.Name
					if wl.Hook {
						name += " (hook)"
					}
					for _, e := range wl.Injectors {
						var added []string
						for _, c := range e.Containers {
							added = append(added, "container "+c)
						}
						for _, c := range e.InitContainers {
							added = append(added, "init container "+c)
						}
						for _, v := range e.Volumes {
							added = append(added, "volume "+v)
						}
						fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", name, e.Name, e.Version, strings.Join(added, ", "))
					}
				}
				tw.Flush()
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&library, "injector-library", defaultLibrary, "the injector library, for the NEWEST and OUTDATED columns (optional)")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table, json or yaml")
	return cmd
}

func newListCommand(settings *cli.EnvSettings) *cobra.Command {
	var library, output string
	var all bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the releases helm-inject manages, with their injectors and versions",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			// Like helm list -A: release storage of every namespace.
			namespace := settings.Namespace()
			if all {
				namespace = ""
			}
			lib, cfg, err := readSetup(cmd, settings, library, namespace)
			if err != nil {
				return err
			}
			ls := release.NewList(cfg)
			ls.AllNamespaces = all
			ls.Library = lib
			rels, err := ls.Run()
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if done, err := writeStructured(w, output, rels); done {
				return err
			}
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tNAMESPACE\tREVISION\tSTATUS\tCHART\tINJECTORS\tOUTDATED")
			for _, r := range rels {
				var inj []string
				for _, in := range r.Injectors {
					inj = append(inj, injectorSummary(in.Name, in.Version, in.Program))
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\n", r.Name, r.Namespace, r.Revision, r.Status, r.Chart, strings.Join(inj, ", "), yes(r.Outdated))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "list releases in every namespace")
	cmd.Flags().StringVar(&library, "injector-library", defaultLibrary, "the injector library, for the OUTDATED column (optional)")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table, json or yaml")
	return cmd
}

// injectorSummary is one injector in a line: name@version for a built-in
// one, the spec and its program for an external one.
func injectorSummary(name, version string, program *inject.Program) string {
	s := name
	if version != "" {
		s += "@" + version
	}
	if program != nil {
		s += " [" + program.Short() + "]"
	}
	return s
}

// writeInjectorHistory prints what each revision recorded, so that a
// program or version change shows where it happened.
func writeInjectorHistory(w io.Writer, history []release.RevisionInjectors) {
	if len(history) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "REVISION\tSTATUS\tINJECTORS")
	for _, h := range history {
		var inj []string
		for _, r := range h.Injectors {
			inj = append(inj, injectorSummary(r.Name, r.Version, r.Program))
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\n", h.Revision, h.Status, dash(strings.Join(inj, ", ")))
	}
	tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func yes(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
