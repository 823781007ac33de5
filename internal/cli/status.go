package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/cli"
	"sigs.k8s.io/yaml"

	"github.com/helm-inject/helm-inject/drift"
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

// writeStructured writes v as JSON or YAML with the characters a terminal
// acts on escaped (see printable.go); false for table output.
func writeStructured(w io.Writer, format string, v any) (bool, error) {
	switch format {
	case "json":
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		if err := enc.Encode(v); err != nil {
			return true, err
		}
		_, err := w.Write(escapeJSON(buf.Bytes()))
		return true, err
	case "yaml":
		jv, err := jsonValue(v)
		if err != nil {
			return true, err
		}
		b, err := yaml.Marshal(printableValue(jv))
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

// liveFlags are status's and list's --live and what goes with it.
type liveFlags struct {
	live         bool
	ignore       []string
	detailedExit bool
}

func (l *liveFlags) add(f *pflag.FlagSet) {
	f.BoolVar(&l.live, "live", false, "also read the cluster: the objects that drifted from the release's manifest or that the release does not own (not read), and each workload's pods by template with their injectors and images")
	f.StringArrayVar(&l.ignore, "ignore-drift", nil, "with --live, a field another controller owns, not drift: [KIND[/NAME]:]/JSON/POINTER, e.g. Deployment/web:/spec/replicas (repeatable)")
	f.BoolVar(&l.detailedExit, "detailed-exitcode", false, "with --live, exit 2 when an object drifted, is missing or is not owned by the release, or pods of an older template run (1 when something could not be read)")
}

// viewer is the Live the flags ask for; nil without --live. Every rule is
// read before the cluster is asked anything.
func (l *liveFlags) viewer() (*release.Live, error) {
	if !l.live {
		if l.detailedExit || len(l.ignore) > 0 {
			return nil, errors.New("--detailed-exitcode and --ignore-drift need --live")
		}
		return nil, nil
	}
	v := &release.Live{}
	for _, s := range l.ignore {
		r, err := drift.ParseIgnore(s)
		if err != nil {
			return nil, fmt.Errorf("--ignore-drift: %w", err)
		}
		v.Ignore = append(v.Ignore, r)
	}
	return v, nil
}

// exit is --detailed-exitcode's answer for the releases shown.
func (l *liveFlags) exit(states ...*release.ReleaseState) error {
	if !l.detailedExit {
		return nil
	}
	for _, st := range states {
		if st.Live != nil && (st.Live.Drifted || st.Live.OldPods > 0) {
			return exitError{code: 2}
		}
	}
	return nil
}

func newStatusCommand(settings *cli.EnvSettings) *cobra.Command {
	var library, output string
	var lf liveFlags
	cmd := &cobra.Command{
		Use:   "status RELEASE",
		Short: "Show a release's injectors, their versions, and what they added to each workload",
		Long: `Show the injectors recorded in a release's latest revision, with the version
of each built-in injector, the newest version the library offers (OUTDATED
when newer), the program each external injector ran, per workload the
containers each built-in injector added, and every revision's injectors.
Only the Helm release (its Secret in the cluster) is read. A record
without a chart shows CHART: MISSING, as helm history does. Strings from
the record are printed with control characters escaped (\x1b, \r).

With --live the cluster is read too (get and list, nothing written): every
object of the release is compared with the manifest the release applied,
limited to the fields the manifest sets (defaults the API server adds are
not drift), and each Deployment, StatefulSet and DaemonSet shows its pods
by template: current or older, ready, the built-in injector versions and
images they run, and containers their template lacks (injected by a
webhook). A release record is a Secret anyone who may create Secrets in
its namespace can write, naming any object; so an object is read only
when its metadata, read first and alone, carries helm's ownership label
and annotations of this release (the test helm makes before it adopts an
object), in any namespace, and only when the record is stored in the
namespace it names. Any other object is shown as not owned by this
release, without its content, and counts as drift. See docs/live.md.`,
		Args: exactArgs(1, "a RELEASE name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			viewer, err := lf.viewer()
			if err != nil {
				return err
			}
			lib, cfg, err := readSetup(cmd, settings, library, settings.Namespace())
			if err != nil {
				return err
			}
			st := release.NewStatus(cfg)
			st.Library, st.Live = lib, viewer
			rs, err := st.Run(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if done, err := writeStructured(w, output, rs); done {
				if err != nil {
					return err
				}
				return lf.exit(rs)
			}
			writeStatus(w, rs)
			return lf.exit(rs)
		},
	}
	cmd.Flags().StringVar(&library, "injector-library", defaultLibrary, "the injector library, for the NEWEST and OUTDATED columns (optional)")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table, json or yaml")
	lf.add(cmd.Flags())
	return cmd
}

// writeStatus prints a release's state; every string from the record
// or the cluster goes through printable.
func writeStatus(w io.Writer, rs *release.ReleaseState) {
	p := printable
	fmt.Fprintf(w, "NAME: %s\nNAMESPACE: %s\nREVISION: %d\nSTATUS: %s\nCHART: %s\nSOURCE: %s\n\n", p(rs.Name), p(rs.Namespace), rs.Revision, p(rs.Status), p(rs.Chart), p(rs.Source))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "INJECTOR\tVERSION\tPROGRAM\tNEWEST\tOUTDATED")
	for _, in := range rs.Injectors {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p(in.Name), dash(p(in.Version)), dash(p(in.Program.Short())), dash(p(in.Newest)), yes(in.Outdated))
	}
	tw.Flush()
	if len(rs.Workloads) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "WORKLOAD\tINJECTOR\tVERSION\tADDED")
		for _, wl := range rs.Workloads {
			name := p(wl.Kind + "/" + wl.Name)
			if wl.Hook {
				name += " (hook)"
			}
			for _, e := range wl.Injectors {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", name, p(e.Name), p(e.Version), p(strings.Join(addedParts(e), ", ")))
			}
		}
		tw.Flush()
	}
	writeInjectorHistory(w, rs.History)
	if rs.Live != nil {
		writeLive(w, rs.Live, rs.Namespace)
	}
}

func addedParts(e inject.StatusEntry) []string {
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
	return added
}

// writeLive prints the live view: drift per object with paths and causes,
// the objects the release does not own, pods by template, pods per
// injector version. An object outside the release's namespace ns is shown
// with its namespace.
func writeLive(w io.Writer, l *release.LiveState, ns string) {
	p := printable
	fmt.Fprintf(w, "\nLIVE: %s\n", liveSummary(l))
	if len(l.Objects) > 0 {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "OBJECT\tDRIFT\tCAUSE")
		for _, o := range l.Objects {
			name := p(o.Kind + "/" + o.Name)
			if o.Namespace != "" && o.Namespace != ns {
				name += " (namespace " + p(o.Namespace) + ")"
			}
			switch {
			case o.NotOwned:
				fmt.Fprintf(tw, "%s\t(the whole object)\tnot owned by this release (not read)\n", name)
			case o.Missing:
				fmt.Fprintf(tw, "%s\t(the whole object)\tdeleted from the cluster\n", name)
			}
			for _, d := range o.Differences {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", name, p(differenceText(d)), p(d.Cause))
			}
		}
		tw.Flush()
	}
	if len(l.Workloads) > 0 {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "WORKLOAD\tTEMPLATE\tPODS\tREADY\tINJECTORS\tCONTAINERS\tNOT IN TEMPLATE")
		for _, wl := range l.Workloads {
			name := p(wl.Kind + "/" + wl.Name)
			if len(wl.Templates) == 0 {
				fmt.Fprintf(tw, "%s\t-\t0\t0\t-\t-\t-\n", name)
			}
			for _, t := range wl.Templates {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\n", name, p(templateLabel(t)), t.Pods, t.Ready,
					dash(p(strings.Join(t.Injectors, ", "))), dash(p(strings.Join(t.Containers, ", "))), p(notInTemplate(t.NotInTemplate)))
			}
		}
		tw.Flush()
	}
	if len(l.InjectorPods) > 0 {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "INJECTOR VERSION\tPODS")
		for _, k := range slices.Sorted(maps.Keys(l.InjectorPods)) {
			fmt.Fprintf(tw, "%s\t%d\n", p(k), l.InjectorPods[k])
		}
		tw.Flush()
	}
}

func liveSummary(l *release.LiveState) string {
	var parts []string
	notOwned := 0
	for _, o := range l.Objects {
		if o.NotOwned {
			notOwned++
		}
	}
	if n := len(l.Objects) - notOwned; n > 0 {
		parts = append(parts, fmt.Sprintf("%d %s drifted", n, plural(n, "object", "objects")))
	}
	if notOwned > 0 {
		parts = append(parts, fmt.Sprintf("%d %s not owned by this release", notOwned, plural(notOwned, "object", "objects")))
	}
	if l.OldPods > 0 {
		parts = append(parts, fmt.Sprintf("%d %s of an older template", l.OldPods, plural(l.OldPods, "pod", "pods")))
	}
	if len(parts) == 0 {
		return "in sync (no drift, every pod from its workload's current template)"
	}
	return strings.Join(parts, "; ")
}

func differenceText(d drift.Difference) string {
	switch {
	case d.Kind == drift.Added:
		return d.Path + " added"
	case d.Kind == drift.Removed:
		return d.Path + " removed (release: " + dash(d.Want) + ")"
	case d.Want == "" && d.Got == "":
		return d.Path + " changed (value hidden)"
	}
	return fmt.Sprintf("%s: %s → %s", d.Path, d.Want, d.Got)
}

func templateLabel(t release.PodTemplate) string {
	s := t.Name
	if t.Revision > 0 {
		s += fmt.Sprintf(" (revision %d)", t.Revision)
	}
	if t.Current {
		return s + " current"
	}
	return s + " OLDER"
}

func notInTemplate(names []string) string {
	if len(names) == 0 {
		return "-"
	}
	return strings.Join(names, ", ") + " (injected by a webhook?)"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func newListCommand(settings *cli.EnvSettings) *cobra.Command {
	var library, output string
	var all bool
	var lf liveFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the releases helm-inject manages, with their injectors and versions",
		Long: `List the releases helm-inject manages (the ones whose chart it built), with
each release's injectors: name@version for a built-in one, the spec and the
program it ran for an external one, and OUTDATED when the library has a
newer version. With --live a LIVE column says whether each release's
objects drifted, how many the release does not own (not read) and how many
pods of older templates run (see status --live).

A release that cannot be read (its injector records do not decode; with
--live, a kind the cluster no longer serves, a permission the cluster
refuses, a record that names a namespace it is not stored in) is listed
with the reason in its row's INJECTORS column (its error field in -o json
and -o yaml), the others are read on, and list exits 1 after printing them all, with or
without --detailed-exitcode. Strings from release records are printed with
control characters escaped (\x1b, \r).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			viewer, err := lf.viewer()
			if err != nil {
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
			ls.AllNamespaces, ls.Library, ls.Live = all, lib, viewer
			ls.Explain = func(err error) error { return release.ExplainClusterError(err, settings) }
			rels, err := ls.Run(cmd.Context())
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if done, err := writeStructured(w, output, rels); done {
				if err != nil {
					return err
				}
				return listExit(lf, rels)
			}
			if err := writeList(w, rels, lf.live); err != nil {
				return err
			}
			return listExit(lf, rels)
		},
	}
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "list releases in every namespace")
	cmd.Flags().StringVar(&library, "injector-library", defaultLibrary, "the injector library, for the OUTDATED column (optional)")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table, json or yaml")
	lf.add(cmd.Flags())
	return cmd
}

// writeList prints one row per release; a release that could not be read
// shows why in its INJECTORS column, and - in OUTDATED and LIVE.
func writeList(w io.Writer, rels []*release.ReleaseState, live bool) error {
	p := printable
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	header := "NAME\tNAMESPACE\tREVISION\tSTATUS\tCHART\tINJECTORS\tOUTDATED"
	if live {
		header += "\tLIVE"
	}
	fmt.Fprintln(tw, header)
	for _, r := range rels {
		var inj []string
		for _, in := range r.Injectors {
			inj = append(inj, injectorSummary(in.Name, in.Version, in.Program))
		}
		injectors, outdated, liveCol := p(strings.Join(inj, ", ")), yes(r.Outdated), "-"
		switch {
		case r.Error != "":
			injectors, outdated = "cannot read: "+p(r.Error), "-"
		case r.Live != nil:
			liveCol = liveSummary(r.Live)
		}
		line := fmt.Sprintf("%s\t%s\t%d\t%s\t%s\t%s\t%s", p(r.Name), p(r.Namespace), r.Revision, p(r.Status), p(r.Chart), injectors, outdated)
		if live {
			line += "\t" + liveCol
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}

// listExit is list's exit: 1 when a release could not be read (after
// every release is printed; an error beats drift), else
// --detailed-exitcode's answer.
func listExit(lf liveFlags, rels []*release.ReleaseState) error {
	failed := 0
	for _, r := range rels {
		if r.Error != "" {
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("could not read %d of %d %s; %s why", failed, len(rels), plural(len(rels), "release", "releases"),
			plural(failed, "its row says", "their rows say"))
	}
	return lf.exit(rels...)
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
		fmt.Fprintf(tw, "%d\t%s\t%s\n", h.Revision, printable(h.Status), dash(printable(strings.Join(inj, ", "))))
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
