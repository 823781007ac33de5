package helmfile

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	helmcli "helm.sh/helm/v4/pkg/cli"

	"github.com/helm-inject/helm-inject/internal/interrupt"
	"github.com/helm-inject/helm-inject/release"
)

// Wrapper runs the real helmfile with helm-inject as its helm binary, on
// state files whose injector fields were translated.
type Wrapper struct {
	// Helmfile is the helmfile binary; empty means $HELMFILE_BINARY or
	// "helmfile" on PATH.
	Helmfile string
	// Self is helm-inject's own executable.
	Self           string
	Stdout, Stderr io.Writer
	Stdin          io.Reader
	// Package, when not nil, makes every template call of the run a
	// package with these flags (`helm-inject helmfile package`).
	Package []string
}

// Run runs helmfile with args and returns its exit code.
func (w *Wrapper) Run(ctx context.Context, args []string) int {
	code, err := w.run(ctx, args)
	if err != nil {
		fmt.Fprintf(w.Stderr, "Error: %v\n", err)
		return 1
	}
	return code
}

func (w *Wrapper) run(ctx context.Context, args []string) (int, error) {
	helmfile, err := findProgram(w.Helmfile, "HELMFILE_BINARY", "helmfile", "set HELMFILE_BINARY")
	if err != nil {
		return 0, err
	}

	// helmfile's --helm-binary/-b names the real helm: helm-inject puts
	// itself there instead.
	args, realHelm := takeFlag(args, "--helm-binary", "-b")
	realHelm, err = findProgram(realHelm, "HELMFILE_HELM_BINARY", "helm", "pass --helm-binary")
	if err != nil {
		return 0, err
	}
	if _, err := notSelf(realHelm, "the helm binary "+realHelm+" (--helm-binary, $HELMFILE_HELM_BINARY or helm on PATH)",
		"pass the real helm with --helm-binary: helm-inject puts itself in helmfile's place for helm"); err != nil {
		return 0, err
	}

	args, state, err := stateFileArg(args)
	if err != nil {
		return 0, err
	}
	if state != "" {
		tr := &translation{}
		defer tr.cleanup()
		translate := tr.file
		if fi, err := os.Stat(state); err == nil && fi.IsDir() {
			translate = tr.dir
		}
		translated, err := translate(state)
		if err != nil {
			return 0, err
		}
		args = append([]string{"--file", translated}, args...)
	}

	plugins, err := diffPlugin(w.Self)
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(plugins)
	// The run's plan cache: the preflight diff, helmfile's diff and the
	// upgrade of a release render and inject it once. Private to this run
	// and removed with it.
	plans, err := os.MkdirTemp("", "helm-inject-plans-")
	if err != nil {
		return 0, fmt.Errorf("creating the run's plan cache: %w", err)
	}
	defer os.RemoveAll(plans)
	planKey, err := release.NewPlanKey()
	if err != nil {
		return 0, fmt.Errorf("creating the run's plan cache: %w", err)
	}
	// Only a `helmfile package` run packages, whatever the caller's
	// environment holds.
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, EnvPackage+"=") })
	env = append(env, EnvAsHelm+"=1", EnvRealHelm+"="+realHelm,
		"HELM_PLUGINS="+plugins+string(os.PathListSeparator)+helmcli.New().PluginsDirectory,
		release.EnvPlanCache+"="+plans, release.EnvPlanKey+"="+planKey)
	if w.Package != nil {
		env = append(env, EnvPackage+"="+EncodePackageFlags(w.Package))
	}
	globals, command := splitCommand(args)
	if needsPreflight(command, args[len(globals):]) {
		// helmfile syncs releases one group at a time, so a release whose
		// injector fails would stop the run after others were already
		// upgraded. A diff runs every release through the same render and
		// inject steps without writing: if it fails, nothing is applied.
		var out bytes.Buffer
		diff := slices.Concat([]string{"--helm-binary", w.Self}, globals, []string{"diff"}, preflightFlags(args[len(globals)+1:]))
		code, err := w.helmfile(ctx, helmfile, env, diff, nil, &out, &out)
		if err != nil {
			return 0, err
		}
		if code != 0 {
			_, _ = w.Stderr.Write(out.Bytes())
			fmt.Fprintf(w.Stderr, "Error: helm-inject: the preflight diff failed (exit %d); nothing was applied\n", code)
			return code, nil
		}
	}
	return w.helmfile(ctx, helmfile, env, append([]string{"--helm-binary", w.Self}, args...), w.Stdin, w.Stdout, w.Stderr)
}

// diffPluginVersion is the helm-diff version helm-inject's diff stands in
// for: helmfile reads the diff plugin's version before it passes
// --take-ownership (3.11), --suppress-output-line-regex (3.9) or
// --insecure-skip-tls-verify (3.8.1) to diff.
const diffPluginVersion = "3.15.10"

// diffPlugin writes, into a private temporary folder put first on
// HELM_PLUGINS, a plugin.yaml named diff whose command is helm-inject's own
// diff. helmfile finds the helm-diff version it checks there; the shim
// answers every diff call itself, so no helm-diff needs to be installed,
// and a `helm diff` the real helm runs reaches helm-inject too. The user's
// plugins stay on the list after it.
func diffPlugin(self string) (string, error) {
	dir, err := os.MkdirTemp("", "helm-inject-plugins-")
	if err != nil {
		return "", fmt.Errorf("writing the diff plugin: %w", err)
	}
	manifest := fmt.Sprintf("name: diff\nversion: %q\nusage: helm-inject's diff (helm-inject diff upgrade)\ndescription: helm-inject answers helmfile's diff calls itself\nignoreFlags: false\ncommand: %q\n",
		diffPluginVersion, self+" diff")
	if err := os.Mkdir(filepath.Join(dir, "diff"), 0o700); err == nil {
		err = os.WriteFile(filepath.Join(dir, "diff", "plugin.yaml"), []byte(manifest), 0o600)
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("writing the diff plugin: %w", err)
	}
	return dir, nil
}

func (w *Wrapper) helmfile(ctx context.Context, bin string, env, args []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	// Ctrl-C or SIGTERM is passed on: helmfile interrupts its helm calls,
	// waits for them and removes its temporary values files.
	cmd := interrupt.Command(ctx, interrupt.HelmfileGrace, bin, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.Env = env
	err := cmd.Run()
	if code, ran := interrupt.ExitCode(cmd); ran {
		return code, nil
	}
	return 0, fmt.Errorf("running %s: %w", bin, err)
}

// needsPreflight says whether a helmfile command needs the wrapper's
// preflight diff. sync does. apply diffs every selected release itself and
// stops before any upgrade if a diff fails, so its own diff is the
// preflight (and fills the run's plan cache), unless --skip-diff-on-install
// leaves new releases out of it.
func needsPreflight(command string, args []string) bool {
	switch command {
	case "sync":
		return true
	case "apply":
		return slices.ContainsFunc(args, func(a string) bool {
			return a == "--skip-diff-on-install" || a == "--skip-diff-on-install=true"
		})
	}
	return false
}

// diffValueFlags and diffBoolFlags are the flags of helmfile's sync and
// apply that its diff takes too and that change what is rendered or which
// releases run: the preflight diff gets them, so that it renders exactly
// what the sync will (and the run's plan cache serves the sync).
var (
	diffValueFlags = []string{"--set", "--values", "--args", "--concurrency", "--post-renderer", "--post-renderer-args"}
	diffBoolFlags  = []string{"--validate", "--skip-needs", "--include-needs", "--include-transitive-needs",
		"--enforce-needs-are-installed", "--reuse-values", "--reset-values", "--take-ownership", "--no-hooks"}
)

// helmfileBoolFlags are helmfile's global flags without a value that the
// preflight diff must be given too. Global flags may also follow the
// command (`helmfile sync -e prod -l name=web`, cobra's persistent flags):
// the preflight must select the same releases, environment and cluster as
// the command. --interactive is left out: the preflight asks nothing.
var helmfileBoolFlags = []string{"--allow-failed-releases", "--allow-no-matching-release", "--color", "--no-color",
	"--debug", "--disable-force-update", "--enable-live-output", "--enforce-plugin-verification", "--oci-plain-http",
	"--otel-tracing", "-q", "--quiet", "--sequential-helmfiles", "--skip-deps", "--skip-refresh",
	"--strip-args-values-on-exit-error"}

// preflightFlags picks, from what follows a sync's or apply's command
// name, the flags its preflight diff must be given: the command's flags
// that diff shares and that change what is rendered or which releases run,
// and helmfile's global flags.
func preflightFlags(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		name, _, hasValue := strings.Cut(args[i], "=")
		value := slices.Contains(diffValueFlags, name) || helmfileValueFlag(name)
		boolean := slices.Contains(diffBoolFlags, name) || slices.Contains(helmfileBoolFlags, name)
		switch {
		case value && hasValue, boolean:
			out = append(out, args[i])
		case value && i+1 < len(args):
			out = append(out, args[i], args[i+1])
			i++
		}
	}
	return out
}

// splitCommand splits helmfile arguments into the global flags before the
// command and the command's name.
func splitCommand(args []string) (globals []string, command string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			return args[:i], a
		}
		if !strings.Contains(a, "=") && helmfileValueFlag(a) {
			i++
		}
	}
	return args, ""
}

// helmfileValueFlag reports helmfile's global flags that take a value.
func helmfileValueFlag(f string) bool {
	switch f {
	case "-e", "--environment", "-l", "--selector", "-f", "--file", "-b", "--helm-binary",
		"--state-values-set", "--state-values-set-string", "--state-values-file",
		"--kube-context", "-n", "--namespace", "-c", "--chart", "--log-level",
		"--kubeconfig", "-k", "--kustomize-binary", "--repo-retries", "--helmfile-version":
		return true
	}
	return false
}

// findProgram returns the program given, else the one $env names, else
// name found on PATH.
func findProgram(given, env, name, hint string) (string, error) {
	if given == "" {
		given = os.Getenv(env)
	}
	if given != "" {
		return given, nil
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%s not found on PATH (or %s)", name, hint)
	}
	return p, nil
}

// takeFlag removes a flag with a value (--long V, --long=V, -short V) from
// args and returns the other arguments and the flag's last value.
func takeFlag(args []string, long, short string) ([]string, string) {
	var out []string
	value := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case (a == long || a == short) && i+1 < len(args):
			value = args[i+1]
			i++
		case strings.HasPrefix(a, long+"="):
			value = strings.TrimPrefix(a, long+"=")
		default:
			out = append(out, a)
		}
	}
	return out, value
}

// stateFileArg removes --file/-f from args and returns the state to
// translate, a file or a folder of state files: the one given, or
// helmfile's default in the current folder (helmfile.yaml[.gotmpl], else
// the helmfile.d folder). It returns "" when there is none, and helmfile
// says what it misses.
func stateFileArg(args []string) ([]string, string, error) {
	out, file := takeFlag(args, "--file", "-f")
	if file == "" {
		// What helmfile reads when -f is not given.
		for _, f := range []string{"helmfile.yaml", "helmfile.yaml.gotmpl", "helmfile.yml", "helmfile.yml.gotmpl", "helmfile.d"} {
			if _, err := os.Stat(f); err == nil {
				file = f
				break
			}
		}
	}
	if file == "" {
		return out, "", nil
	}
	if _, err := os.Stat(file); err != nil {
		return nil, "", fmt.Errorf("state file: %w", err)
	}
	return out, file, nil
}
