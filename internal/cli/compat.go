package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"helm.sh/helm/v4/pkg/cli"
	"helm.sh/helm/v4/pkg/kube"

	"github.com/helm-inject/helm-inject/release"
)

// Flags that helm, helm-diff or helmfile pass but that cannot apply to a
// command are still accepted (a no-op) or refused with the replacement;
// either way the flag carries an annotation that says so, which
// docs/compatibility.md is generated from (TestCompatibilityDoc).
const compatAnnotation = "helm-inject/compat"

// noop registers a flag that is accepted and has no effect; why says why
// it cannot apply (shown in --help and docs/compatibility.md).
func noop(f *pflag.FlagSet, name, short string, value pflag.Value, why string) {
	fl := f.VarPF(value, name, short, "accepted for compatibility, no effect: "+why)
	if _, ok := value.(*boolValue); ok {
		fl.NoOptDefVal = "true"
	}
	_ = f.SetAnnotation(name, compatAnnotation, []string{"no-op: " + why})
}

// refuse registers a flag that is refused with an error naming what to
// use instead.
func refuse(f *pflag.FlagSet, name, short string, isBool bool, instead string) {
	fl := f.VarPF(refused{name: name, instead: instead, isBool: isBool}, name, short, "not supported: "+instead)
	if isBool {
		fl.NoOptDefVal = "true"
	}
	_ = f.SetAnnotation(name, compatAnnotation, []string{"refused: " + instead})
}

type refused struct {
	name, instead string
	isBool        bool
}

func (r refused) String() string { return "" }
func (r refused) Type() string {
	if r.isBool {
		return "bool"
	}
	return "string"
}
func (r refused) Set(string) error {
	return fmt.Errorf("helm-inject does not support --%s: %s", r.name, r.instead)
}

// The value types a no-op flag can take, so that it parses what helm
// would parse ("--timeout 5m", "--labels a=b", "--wait").
type boolValue bool

func (b *boolValue) String() string   { return fmt.Sprint(bool(*b)) }
func (b *boolValue) Type() string     { return "bool" }
func (b *boolValue) Set(string) error { *b = true; return nil }

func noopBool() pflag.Value { return new(boolValue) }

// noopString takes any value, as often as given.
func noopString() pflag.Value { return new(stringValue) }

type stringValue string

func (s *stringValue) String() string     { return string(*s) }
func (s *stringValue) Type() string       { return "string" }
func (s *stringValue) Set(v string) error { *s = stringValue(v); return nil }

type durationValue time.Duration

func (d *durationValue) String() string { return time.Duration(*d).String() }
func (d *durationValue) Type() string   { return "duration" }
func (d *durationValue) Set(v string) error {
	x, err := time.ParseDuration(v)
	*d = durationValue(x)
	return err
}

func noopDuration() pflag.Value { return new(durationValue) }

// renderFlags are Helm's flags that change how a chart renders, shared by
// apply, upgrade, template and diff.
type renderFlags struct {
	enableDNS        bool
	subNotes         bool
	postRenderer     string
	postRendererArgs []string
}

func (r *renderFlags) add(f *pflag.FlagSet, subNotes bool) {
	f.BoolVar(&r.enableDNS, "enable-dns", false, "enable DNS lookups when rendering templates")
	f.StringVar(&r.postRenderer, "post-renderer", "", "a program run after injection on the manifests (not hooks), as helm's --post-renderer: the name of a helm 4 postrenderer/v1 plugin, else the path of an executable or its name on PATH")
	f.StringArrayVar(&r.postRendererArgs, "post-renderer-args", nil, "an argument to the post-renderer (can specify multiple)")
	if subNotes {
		f.BoolVar(&r.subNotes, "render-subchart-notes", false, "render subchart notes along with the parent")
	}
}

// flags builds the release package's render flags; apiVersions are
// --api-versions where the command has it.
func (r *renderFlags) flags(ctx context.Context, settings *cli.EnvSettings, apiVersions []string) (release.RenderFlags, error) {
	out := release.RenderFlags{EnableDNS: r.enableDNS, SubNotes: r.subNotes, APIVersions: splitComma(apiVersions)}
	if r.postRenderer == "" {
		if len(r.postRendererArgs) > 0 {
			return out, fmt.Errorf("--post-renderer-args needs --post-renderer")
		}
		return out, nil
	}
	pr, err := release.NewPostRenderer(ctx, settings, r.postRenderer, r.postRendererArgs...)
	if err != nil {
		return out, fmt.Errorf("--post-renderer %s: %w", r.postRenderer, err)
	}
	out.PostRenderer = pr
	return out, nil
}

// dryRunValue is helm's --dry-run: "--dry-run" alone or "=client"/"=true"
// simulate without a cluster write, "=server" also lets lookups reach the
// cluster, "=none"/"=false" is no dry run.
type dryRunValue struct{ mode *string }

func (d dryRunValue) String() string { return *d.mode }
func (d dryRunValue) Type() string   { return "string" }
func (d dryRunValue) Set(v string) error {
	switch v {
	case "", "none", "false":
		*d.mode = ""
	case "client", "true":
		*d.mode = "client"
	case "server":
		*d.mode = "server"
	default:
		return fmt.Errorf("invalid dry-run %q: want none, client or server", v)
	}
	return nil
}

func addDryRun(f *pflag.FlagSet, mode *string, usage string) {
	f.VarPF(dryRunValue{mode}, "dry-run", "", usage).NoOptDefVal = "client"
}

// waitValue is helm 4's --wait: "--wait" alone is the watcher (kstatus),
// "=watcher", "=legacy" (helm 3's polling) or "=hookOnly" (the default:
// only hooks are waited for); helm 3's "=true"/"=false" are the watcher
// and hookOnly.
type waitValue struct{ strategy *kube.WaitStrategy }

func (w waitValue) String() string {
	if *w.strategy == "" {
		return string(kube.HookOnlyStrategy)
	}
	return string(*w.strategy)
}
func (w waitValue) Type() string { return "string" }
func (w waitValue) Set(v string) error {
	switch v {
	case string(kube.StatusWatcherStrategy), "true":
		*w.strategy = kube.StatusWatcherStrategy
	case string(kube.LegacyStrategy):
		*w.strategy = kube.LegacyStrategy
	case string(kube.HookOnlyStrategy), "false":
		*w.strategy = kube.HookOnlyStrategy
	default:
		return fmt.Errorf("invalid wait strategy %q: want watcher, legacy or hookOnly", v)
	}
	return nil
}

func addWait(f *pflag.FlagSet, strategy *kube.WaitStrategy) {
	f.VarPF(waitValue{strategy}, "wait", "", "wait until the release's resources are ready (up to --timeout): --wait alone or =watcher (kstatus, as helm 4), =legacy (helm 3's polling), =hookOnly (the default: only hooks)").NoOptDefVal = string(kube.StatusWatcherStrategy)
}

// serverSideValue is helm 4's --server-side: true, false or auto (the
// default: an install applies server-side, an upgrade as the release's last
// revision did); "--server-side" alone is true.
type serverSideValue struct{ mode *string }

func (s serverSideValue) String() string {
	if *s.mode == "" {
		return "auto"
	}
	return *s.mode
}
func (s serverSideValue) Type() string { return "string" }
func (s serverSideValue) Set(v string) error {
	switch v {
	case "true", "false", "auto":
		*s.mode = v
		return nil
	}
	return fmt.Errorf("invalid server-side %q: want true, false or auto", v)
}

// joinServerSide reads "--server-side VALUE" as "--server-side=VALUE"
// when VALUE is true, false or auto: helm 4's upgrade (and helmfile, which
// passes "--server-side" and its value as two arguments) spells it so,
// while helm 4's install takes "--server-side" alone as true. pflag cannot
// have both (a flag with a value for "alone" never takes the next
// argument), so the two words are joined before parsing; nothing after
// "--" is touched.
func joinServerSide(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		if a == "--server-side" && i+1 < len(args) {
			switch v := args[i+1]; v {
			case "true", "false", "auto":
				out = append(out, a+"="+v)
				i++
				continue
			}
		}
		out = append(out, a)
	}
	return out
}

// serverSideUsage is --server-side's help on apply; diff's says what it
// compares.
const serverSideUsage = "apply objects with server-side apply: true, false, or auto (an install applies server-side, an upgrade as the release's last revision did), as helm 4; true or false on a release the other method deployed applies it again even when nothing else changed"

func addServerSide(f *pflag.FlagSet, mode *string, usage string) {
	f.VarPF(serverSideValue{mode}, "server-side", "", usage).NoOptDefVal = "true"
}
