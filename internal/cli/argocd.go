package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/helm-inject/helm-inject/argocd"
	"github.com/helm-inject/helm-inject/inject"
	"github.com/helm-inject/helm-inject/internal/budget"
	"github.com/helm-inject/helm-inject/internal/confine"
	"github.com/helm-inject/helm-inject/manifest"
	"github.com/helm-inject/helm-inject/release"
)

const argocdLong = `Run helm-inject as an Argo CD Config Management Plugin (see docs/argocd.md).

Argo CD's repo-server runs "generate" in the application's folder of a copy
of the Git repository, with the application's name, destination namespace,
Kubernetes version, API versions and plugin parameters in the environment.
It prints exactly what "helm-inject template" prints for the same inputs;
Argo CD applies it. Built-in injectors take the version the application's
helm-inject-pins.yaml pins, written by "pin": the library gaining versions,
or a newer helm-inject, changes nothing until that file changes.`

func newArgocdCommand(kernel confine.Kernel) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "argocd",
		Short: "Argo CD Config Management Plugin: generate, parameters, discover, pin, provision",
		Long:  argocdLong,
	}
	cmd.AddCommand(newArgocdGenerateCommand(kernel), newArgocdParametersCommand(kernel), newArgocdDiscoverCommand(kernel), newArgocdPinCommand(), newArgocdProvisionCommand())
	return cmd
}

// commaList is a flag of comma separated values that, given again, says
// the whole list anew (pflag's string slices append instead): an
// operator's override at the end of plugin.yaml's command line replaces
// the shipped list.
type commaList struct{ to *[]string }

func (l commaList) Set(v string) error {
	*l.to = strings.Split(v, ",")
	return nil
}

func (l commaList) String() string {
	if l.to == nil {
		return ""
	}
	return strings.Join(*l.to, ",")
}

func (commaList) Type() string { return "strings" }

// addOperatorFlags adds the operator's policy flags to a plugin command:
// plugin.yaml gives them, and no request to the cmp-server can change
// them (argocd.Operator). generate and parameters, which read the
// application's chart, take the bounds of what is read; generate also
// those of the parameters and the output, and the injectors' settings.
func addOperatorFlags(cmd *cobra.Command, op *argocd.Operator, bounds, injectors bool) {
	f := cmd.Flags()
	f.Int64Var(&op.MaxMemoryMiB, argocd.FlagMaxMemory, argocd.DefaultMaxMemoryMiB, "the memory ceiling, in MiB: how much more address space the command may map once it starts reading the application (RLIMIT_AS, inherited by the injectors); a render past it fails alone, not the sidecar; 0 for none")
	f.StringVar(&op.Confine, argocd.FlagConfine, string(confine.BestEffort), "how the kernel confines the command and every program it starts: best-effort (the seccomp socket filter, and Landlock as far as the kernel goes, naming on stderr what it does not hold), required (refuse, printing nothing, where files cannot be confined or the socket filter cannot be installed) or off; "+confine.EnvMode+" may only make it stricter")
	if bounds {
		f.Int64Var(&op.Limits.Files, budget.Files.Flag(), budget.DefaultFiles, "the files and folders one render may open, each time it reaches one (after links, archive entries included)")
		f.Int64Var(&op.Limits.Bytes, budget.Bytes.Flag(), budget.DefaultBytes, "the bytes one render may read and unpack in all: files, archives by their unpacked size (nested ones too), values, set-file files and the parameters")
	}
	if !injectors {
		return
	}
	f.Int64Var(&op.Limits.ListSlots, budget.ListSlots.Flag(), budget.DefaultListSlots, "the list slots the parameters' keys may make (n+1 for each [n])")
	f.Int64Var(&op.Limits.OutputBytes, budget.OutputBytes.Flag(), budget.DefaultOutputBytes, "the bytes of manifests one render may print")
	f.Var(commaList{&op.AllowedCommands}, argocd.FlagAllowedCommands, "the programs external injectors may run, comma separated (a name on PATH or an absolute path); none when not given; given again, the last counts. "+argocd.EnvAllowedCommands+" may only narrow it")
	f.StringArrayVar(&op.Read, argocd.FlagConfineRead, nil, "a file or folder injectors may read besides the repository, such as istioctl's mesh config (repeatable)")
	f.StringVar(&op.Library, argocd.FlagLibrary, "", "the built-in injector library applications use unless they name one in their repository")
	f.StringVar(&op.InjectorsFile, argocd.FlagInjectorsFile, "", "the operator's file of named injectors")
}

func newArgocdGenerateCommand(kernel confine.Kernel) *cobra.Command {
	var op argocd.Operator
	cmd := &cobra.Command{
		Use:   "generate",
		Short: "Print the application's manifests with sidecars injected (the plugin's generate command)",
		Long: `Print the application's manifests with sidecars injected, for Argo CD.

Reads ARGOCD_APP_NAME (the release name, without Argo CD's "<namespace>_"
prefix, unless the release-name parameter gives one),
ARGOCD_APP_NAMESPACE, ARGOCD_APP_SOURCE_PATH, KUBE_VERSION,
KUBE_API_VERSIONS and the plugin parameters (ARGOCD_APP_PARAMETERS, and
ARGOCD_ENV_* entries). Under Argo CD's cmp-server, the repository is the
folder it unpacked the request into (so it works when the repo-server
sends only an application's manifest-generate-paths). Every file is read
through one os.Root of that repository, so no path, link or ".." leads
out of it; parameters become typed values (a key with an unescaped "="
or "," is refused), never command-line flags. A chart dependency missing
from charts/ is loaded from its file:// folder in the repository, in
memory; nothing is downloaded or fetched. Only objects go to stdout; on any
error nothing is printed there and the exit code is not zero, so Argo CD
never prunes an application because of a failed render.

Before it reads anything of the application, generate sets its memory
ceiling and confines itself and every injector it runs: a seccomp filter
refuses every socket, unix sockets included, on any kernel; Linux
Landlock lets them read only the repository, the operator's library and
named-injectors file, the --confine-read files and a few system files;
execute only the allowed injector programs; write only a private
temporary folder; signal no process outside the render. One budget
bounds what the render reads, unpacks and prints (--max-files,
--max-read-bytes, --max-list-slots, --max-output-bytes).

The plugin's operator gives the policy on this command line, in the
sidecar's plugin.yaml: --confine, --allowed-commands, --confine-read,
--injector-library and --operator-injectors. No variable can loosen it,
since Argo CD's cmp-server puts a request's variables after its own:
HELM_INJECT_CONFINE may only make --confine stricter, and
HELM_INJECT_ALLOWED_COMMANDS may only narrow --allowed-commands.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out, err := argocdGenerate(cmd, kernel, op)
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	addOperatorFlags(cmd, &op, true, true)
	return cmd
}

// argocdGenerate renders the application in the current folder and
// returns the whole output, so that nothing reaches stdout unless all of
// it is there. The application's inputs never pass through the command
// line's flags: argocd.Prepare builds them as typed values from files
// read through the repository's root, and they go straight to the
// template action.
func argocdGenerate(cmd *cobra.Command, kernel confine.Kernel, op argocd.Operator) ([]byte, error) {
	pol, err := op.Policy(os.LookupEnv)
	if err != nil {
		return nil, err
	}
	req, err := argocd.ReadRequest(os.Environ())
	if err != nil {
		return nil, err
	}
	appDir, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	// Everything above is the operator's (plugin.yaml's command line and
	// the sidecar's files) or Argo CD's; from here on the application's
	// files are read, so the process confines itself first.
	cleanup, err := confineApplication(kernel, req, appDir, pol, cmd.ErrOrStderr())
	if err != nil {
		return nil, err
	}
	defer cleanup()
	in, err := req.Prepare(appDir, pol)
	if err != nil {
		return nil, err
	}
	rep, err := progressReporter("auto", cmd.ErrOrStderr())
	if err != nil {
		return nil, err
	}
	in.Template.Injectors.Slow = rep.Slow
	r, err := in.Template.Run(cmd.Context(), in.Release, in.Source, in.Values)
	if err != nil {
		return nil, fmt.Errorf("application %s: %w", req.Release, err)
	}
	// Argo CD cannot read a document without apiVersion or kind (its
	// manifest generation fails, naming no template), nor sync one
	// without a name: refused here as helm's install refuses them,
	// naming the template.
	if err := release.CheckObjects(in.Release, in.Template.Namespace, r.Documents, false); err != nil {
		return nil, fmt.Errorf("application %s: %w", req.Release, err)
	}
	var out bytes.Buffer
	if err := release.WriteManifests(&out, r, in.Print); err != nil {
		return nil, err
	}
	if err := in.Budget.CheckOutput(out.Len()); err != nil {
		return nil, fmt.Errorf("application %s: %w", req.Release, err)
	}
	if !slices.ContainsFunc(manifest.Split(out.String()), func(doc string) bool {
		d, err := manifest.Parse("", doc)
		return err == nil && !d.Empty()
	}) {
		return nil, fmt.Errorf("application %s: the chart rendered no objects; refusing to print nothing (Argo CD would prune every resource)", req.Release)
	}
	return out.Bytes(), nil
}

// confineApplication sets the memory ceiling and confines the process for
// a render of the application req in appDir (see confineRender): its
// repository, and what the operator's policy lets injectors read and run.
// Errors name the application, when it has a name yet (parameters runs
// before it does).
func confineApplication(kernel confine.Kernel, req *argocd.Request, appDir string, pol argocd.Policy, stderr io.Writer) (func(), error) {
	repo, err := req.Repository(appDir)
	if err != nil {
		return nil, err
	}
	named := func(err error) error {
		if req.Release == "" {
			return err
		}
		return fmt.Errorf("application %s: %w", req.Release, err)
	}
	if err := confine.LimitMemory(pol.MaxMemory); err != nil {
		return nil, named(err)
	}
	cleanup, err := confineRender(kernel, pol.Mode, pol.Confinement(repo), stderr)
	if err != nil {
		return nil, named(err)
	}
	return cleanup, nil
}

func newArgocdParametersCommand(kernel confine.Kernel) *cobra.Command {
	var op argocd.Operator
	cmd := &cobra.Command{
		Use:   "parameters",
		Short: "Print the plugin's parameters for the application, as JSON (the plugin's dynamic parameters command)",
		Long: `Print, as the JSON Argo CD reads from a plugin's dynamic parameters
command, the "chart-values" parameter: the chart's own values, flattened
to helm's set paths such as a.b and list[0] (in the application's folder,
with the chart the "chart" parameter names), for a person to read in Argo
CD's UI. generate ignores
it; values are changed with "set". The other parameters are announced
statically in plugin.yaml. It answers for an application that has no name
yet (Argo CD's New App panel asks before there is one).

It loads the application's chart, so it confines itself as generate does
(--confine) before it reads it: it reads only the repository.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			pol, err := op.Policy(os.LookupEnv)
			if err != nil {
				return err
			}
			req, err := argocd.ReadRequest(os.Environ())
			if err != nil {
				return err
			}
			appDir, err := os.Getwd()
			if err != nil {
				return err
			}
			// Its policy has no injector: it reads the repository only.
			cleanup, err := confineApplication(kernel, req, appDir, pol, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer cleanup()
			ann, err := req.Announce(appDir, pol.Limits)
			if err != nil {
				return err
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent("", "  ")
			return enc.Encode(ann)
		},
	}
	addOperatorFlags(cmd, &op, true, false)
	return cmd
}

func newArgocdDiscoverCommand(kernel confine.Kernel) *cobra.Command {
	var op argocd.Operator
	cmd := &cobra.Command{
		Use:   "discover",
		Short: "Say whether the plugin renders the application (the plugin's discovery command)",
		Long: `Print "helm-inject" when the plugin renders the application in the current
folder, nothing otherwise (Argo CD's discover.find.command: any output is a
match). Argo CD runs it even for an application that names the plugin.

It matches a folder with a helm-inject-pins.yaml, and an application with a
plugin section (named or not) whose parameters are all helm-inject's, or
that gives none. A plugin section with a parameter helm-inject does not
have is another plugin's.

It confines itself as generate does (--confine) before it looks: it reads
only the application's folder.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			pol, err := op.Policy(os.LookupEnv)
			if err != nil {
				return err
			}
			dir, err := os.Getwd()
			if err != nil {
				return err
			}
			real, err := filepath.EvalSymlinks(dir)
			if err != nil {
				return err
			}
			cleanup, err := confineRender(kernel, pol.Mode, confine.Policy{Read: []string{real}}, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer cleanup()
			if argocd.Discover(dir, os.Environ()) {
				_, err = fmt.Fprintln(cmd.OutOrStdout(), argocd.PluginName)
			}
			return err
		},
	}
	addOperatorFlags(cmd, &op, false, false)
	return cmd
}

func newArgocdProvisionCommand() *cobra.Command {
	var library, tools string
	cmd := &cobra.Command{
		Use:   "provision DEST",
		Short: "Fill the plugin sidecar's volume: this helm-inject, the tools and the checked injector library (the init container)",
		Long: `Fill DEST, the volume the plugin's sidecar runs from, as the init container
of deploy/argocd does when the repo-server's pod starts:

  DEST/bin/helm-inject   this helm-inject executable
  DEST/bin/NAME          every program in --tools (istioctl, linkerd)
  DEST/injectors         the injector library of --library, or an empty one

The library is checked before it is copied: a version that is not locked,
a locked version whose file changed, or a locked version whose file was
removed is an error, so the pod does not start rather than every
application pinned to that version failing.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			self, err := os.Executable()
			if err != nil {
				return err
			}
			return argocd.Provision(args[0], self, library, tools)
		},
	}
	cmd.Flags().StringVar(&library, "library", "", "the injector library to check and copy to DEST/injectors")
	cmd.Flags().StringVar(&tools, "tools", "", "a folder of programs to copy to DEST/bin (injectors such as istioctl)")
	return cmd
}

func newArgocdPinCommand() *cobra.Command {
	var with []string
	var library string
	var update bool
	cmd := &cobra.Command{
		Use:   "pin DIR...",
		Short: "Pin the built-in injector versions of applications (writes DIR/helm-inject-pins.yaml)",
		Long: `Write, in each application folder DIR, helm-inject-pins.yaml: the version of
each built-in injector that Argo CD's generate injects there.

--with NAME@CONSTRAINT pins NAME: a pin that already satisfies the
constraint is kept, otherwise the newest version the constraint allows is
pinned. --update moves pins to the newest version their constraint allows:
those --with names, or, without --with, every pin of DIR. Only the folders
given change; review and commit them.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, dirs []string) error {
			lib, err := inject.LoadLibrary(library)
			if err != nil {
				return err
			}
			var refs []*inject.TemplateRef
			for _, w := range with {
				ref, err := inject.ParseTemplateRef(lib, w, nil)
				if err != nil {
					return fmt.Errorf("--with %w", err)
				}
				refs = append(refs, ref)
			}
			if len(refs) == 0 && !update {
				return errors.New("say what to pin: --with NAME@CONSTRAINT, or --update to move every pin of DIR")
			}
			for _, dir := range dirs {
				if err := pinDir(cmd, lib, dir, refs, update); err != nil {
					return fmt.Errorf("%s: %w", dir, err)
				}
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&with, "with", nil, "a built-in injector to pin, NAME or NAME@VERSION-CONSTRAINT (repeatable)")
	cmd.Flags().StringVar(&library, "injector-library", defaultLibrary, "the injector library the versions are chosen from")
	cmd.Flags().BoolVar(&update, "update", false, "move pins to the newest version their constraint allows")
	return cmd
}

// pinDir writes dir's pins file when the pins change, and says what
// changed.
func pinDir(cmd *cobra.Command, lib *inject.Library, dir string, refs []*inject.TemplateRef, update bool) error {
	path := filepath.Join(dir, inject.PinsFileName)
	old, err := inject.ReadPins(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	pins, err := old.Pin(lib, refs, update)
	if err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	changed := false
	for _, name := range slices.Sorted(maps.Keys(pins)) {
		was, had := old[name]
		now := pins[name]
		switch {
		case !had:
			fmt.Fprintf(w, "%s: pinned %s@%s\n", dir, name, now.Version)
		case was.Version != now.Version:
			fmt.Fprintf(w, "%s: %s %s -> %s\n", dir, name, was.Version, now.Version)
		case was.Constraint != now.Constraint:
			fmt.Fprintf(w, "%s: %s@%s constraint %q -> %q\n", dir, name, now.Version, was.Constraint, now.Constraint)
		case was == now:
			continue
		default:
			fmt.Fprintf(w, "%s: %s@%s pinned again (its definition's digest)\n", dir, name, now.Version)
		}
		changed = true
	}
	if !changed && old != nil {
		fmt.Fprintf(w, "%s: unchanged\n", dir)
		return nil
	}
	b, err := pins.Encode()
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
