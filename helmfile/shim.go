// Package helmfile connects helm-inject to helmfile. helmfile runs
// helm-inject as its helm binary (the "shim"): a call for a release whose
// post-renderer is helm-inject (upgrade, template, diff upgrade) runs the
// inject pipeline, with the post-renderer arguments as injector flags; a
// `dependency build` with nothing to build is answered as helm would (it
// does nothing), and so is helmfile's `helm list` of one release inside a
// `helm-inject helmfile` run (list.go); every other call goes to the real
// helm unchanged (same arguments, same output, same exit code). The
// wrapper (`helm-inject helmfile ...`) translates `injector:` and
// `injectors:` release fields into that form and runs the real helmfile.
package helmfile

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/helm-inject/helm-inject/internal/interrupt"
)

// Environment variables of the shim.
const (
	// EnvAsHelm makes helm-inject behave as helm (set by the wrapper for
	// the helmfile it runs).
	EnvAsHelm = "HELM_INJECT_AS_HELM"
	// EnvRealHelm is the helm binary the shim hands other calls to.
	EnvRealHelm = "HELM_INJECT_HELM"
)

// Marker is the post-renderer name that selects helm-inject's pipeline:
// `postRenderer: helm-inject` (a path ending in helm-inject also counts).
const Marker = "helm-inject"

// globalValueFlag reports helm's global flags that take a value as the
// next argument; helmfile puts some of them before the verb.
func globalValueFlag(f string) bool {
	switch f {
	case "--kubeconfig", "--kube-context", "--namespace", "-n",
		"--kube-apiserver", "--kube-as-user", "--kube-as-group", "--kube-token",
		"--kube-ca-file", "--kube-tls-server-name", "--registry-config",
		"--repository-cache", "--repository-config", "--burst-limit", "--qps":
		return true
	}
	return false
}

// Call is one helm invocation as helmfile made it.
type Call struct {
	Args []string
	// Verb is the helm subcommand ("upgrade", "template", "diff", ...).
	Verb string
	// Injected is true when the call's post-renderer is helm-inject.
	Injected bool
	// InjectArgs are the post-renderer arguments: helm-inject's injector
	// flags.
	InjectArgs []string
	// Rest is Args without the post-renderer flags.
	Rest []string
}

// ParseCall reads a helm argument list. The post-renderer flags are the
// carrier of helm-inject's injector flags only when the post-renderer is
// helm-inject; another post-renderer's flags stay in Rest, in order, so
// helm (or helm-inject's diff) runs it as given.
func ParseCall(args []string) Call {
	c := Call{Args: args}
	var postRender []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--post-renderer" && i+1 < len(args):
			c.Injected = c.Injected || isMarker(args[i+1])
			postRender = append(postRender, a, args[i+1])
			i++
			continue
		case strings.HasPrefix(a, "--post-renderer="):
			c.Injected = c.Injected || isMarker(strings.TrimPrefix(a, "--post-renderer="))
			postRender = append(postRender, a)
			continue
		case a == "--post-renderer-args" && i+1 < len(args):
			c.InjectArgs = append(c.InjectArgs, args[i+1])
			postRender = append(postRender, a, args[i+1])
			i++
			continue
		case strings.HasPrefix(a, "--post-renderer-args="):
			c.InjectArgs = append(c.InjectArgs, strings.TrimPrefix(a, "--post-renderer-args="))
			postRender = append(postRender, a)
			continue
		}
		if c.Verb == "" && !strings.HasPrefix(a, "-") {
			c.Verb = a
		} else if c.Verb == "" && globalValueFlag(a) && i+1 < len(args) {
			c.Rest = append(c.Rest, a, args[i+1])
			i++
			continue
		}
		c.Rest = append(c.Rest, a)
	}
	if !c.Injected {
		c.InjectArgs = nil
		c.Rest = append(c.Rest, postRender...)
	}
	return c
}

func isMarker(p string) bool {
	base := filepath.Base(p)
	return base == Marker || base == Marker+".exe"
}

// Runner runs helm-inject's own command line in-process.
type Runner func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int

// Shim answers one helm call: the inject pipeline for an injected upgrade
// or template, helm-inject's own diff for every `diff upgrade` (so helmfile
// diff and apply need no helm-diff plugin; a release without injectors is
// diffed as plain helm would render it), nothing for a `dependency build`
// of a chart without dependencies (what helm would do), helm's own list
// table for helmfile's list of one release, the real helm for anything
// else.
func Shim(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, run Runner) int {
	c := ParseCall(args)
	if v, ok := os.LookupEnv(EnvPackage); ok && c.Verb == "template" {
		// A `helmfile package` run: every release is packaged, injected
		// or not.
		flags, err := DecodePackageFlags(v)
		if err == nil {
			args, err = PackageArgs(c, flags)
		}
		if err != nil {
			fmt.Fprintf(stderr, "Error: %v\n", err)
			return 1
		}
		return run(ctx, args, stdin, stdout, stderr)
	}
	if c.Verb == "diff" || (c.Injected && (c.Verb == "upgrade" || c.Verb == "template")) {
		return run(ctx, append(c.Rest, c.InjectArgs...), stdin, stdout, stderr)
	}
	if nothingToBuild(c) || answerList(c, stdout) {
		return 0
	}
	helm, err := RealHelm()
	depth, _ := strconv.Atoi(os.Getenv(envPassThroughDepth))
	if err == nil && depth >= maxPassThroughDepth {
		err = fmt.Errorf("helm-inject handed this call to %s %d times in a row: %s runs helm-inject again (a copy or a script); set %s to the real helm binary", helm, depth, helm, EnvRealHelm)
	}
	if err != nil {
		fmt.Fprintf(stderr, "Error: %v\n", err)
		return 1
	}
	// Ctrl-C or SIGTERM is passed on: helm marks an interrupted
	// revision failed instead of leaving it pending.
	cmd := interrupt.Command(ctx, interrupt.HelmGrace, helm, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	var version bytes.Buffer
	if c.Verb == "version" {
		cmd.Stdout = io.MultiWriter(stdout, &version)
	}
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", envPassThroughDepth, depth+1))
	err = cmd.Run()
	if code, ran := interrupt.ExitCode(cmd); ran {
		if code == 0 && c.Verb == "version" {
			recordHelmVersion(version.Bytes())
		}
		return code
	}
	fmt.Fprintf(stderr, "Error: running %s: %v\n", helm, err)
	return 1
}

// envPassThroughDepth counts how many shims in a row handed a call to
// "the real helm": more than maxPassThroughDepth means the real helm is
// helm-inject after all (a copy, or a script that runs it), which the
// same-file check cannot see, and the chain is stopped.
const (
	envPassThroughDepth = "HELM_INJECT_PASS_THROUGH_DEPTH"
	maxPassThroughDepth = 3
)

// RealHelm finds the helm binary the shim hands calls to: $HELM_INJECT_HELM,
// else "helm" on PATH. Neither may be helm-inject itself, which would
// start itself without end.
func RealHelm() (string, error) {
	if p := os.Getenv(EnvRealHelm); p != "" {
		return notSelf(p, EnvRealHelm+"="+p, "set "+EnvRealHelm+" to the real helm binary")
	}
	p, err := exec.LookPath("helm")
	if err != nil {
		return "", fmt.Errorf("no helm binary for the calls helm-inject does not handle: set %s or put helm on PATH", EnvRealHelm)
	}
	return notSelf(p, "helm on PATH ("+p+")", "set "+EnvRealHelm+" to the real helm binary")
}

// notSelf returns the helm binary p (a path, or a name looked up on PATH)
// unless it is helm-inject's own executable; what says where p came from,
// fix what to do instead.
func notSelf(p, what, fix string) (string, error) {
	resolved := p
	if !strings.ContainsRune(p, filepath.Separator) {
		if lp, err := exec.LookPath(p); err == nil {
			resolved = lp
		}
	}
	self, err := os.Executable()
	if err == nil && same(resolved, self) {
		return "", fmt.Errorf("%s is helm-inject itself, which would hand helm calls to itself without end; %s", what, fix)
	}
	return p, nil
}

func same(a, b string) bool {
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}
