package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/cli"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/helm-inject/helm-inject/inject"
	"github.com/helm-inject/helm-inject/release"
)

// Shell completion. cobra writes the scripts (helm-inject completion
// bash|zsh|fish|powershell) and answers them through its hidden __complete
// command; this file adds what only helm-inject knows: release names and
// namespaces from the cluster (as helm completes them), contexts from the
// kubeconfig, built-in injectors from the library, --reconcile's values.
// The Helm plugin's plugin.complete hands `helm inject <TAB>` to the same
// __complete, so both complete alike.

// completionTimeout bounds a cluster lookup made for completion: a shell
// waiting on an unreachable cluster is worse than no suggestions.
const completionTimeout = 5 * time.Second

// addCompletions registers the dynamic completions on the command tree.
func addCompletions(root *cobra.Command, settings *cli.EnvSettings) {
	_ = root.RegisterFlagCompletionFunc("namespace", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return completeNamespaces(settings)
	})
	_ = root.RegisterFlagCompletionFunc("kube-context", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return completeContexts(settings)
	})
	for _, cmd := range root.Commands() {
		switch cmd.Name() {
		case "apply", "upgrade", "status":
			cmd.ValidArgsFunction = releaseThenChart(settings)
		case "diff":
			for _, sub := range cmd.Commands() {
				sub.ValidArgsFunction = releaseThenChart(settings)
			}
		}
		walk(cmd, func(c *cobra.Command) {
			if c.Flags().Lookup("with") != nil {
				_ = c.RegisterFlagCompletionFunc("with", completeWith)
			}
			if c.Flags().Lookup("reconcile") != nil {
				_ = c.RegisterFlagCompletionFunc("reconcile", cobra.FixedCompletions([]string{
					string(inject.ReconcileAlways) + "\tmove to the version the constraint resolves to now",
					string(inject.ReconcileNever) + "\tkeep the version the release has",
					string(inject.ReconcileWithChart) + "\tmove only when the release changes anyway",
				}, cobra.ShellCompDirectiveNoFileComp))
			}
			if c.Flags().Lookup("progress") != nil {
				_ = c.RegisterFlagCompletionFunc("progress", cobra.FixedCompletions([]string{"auto", "plain", "none"}, cobra.ShellCompDirectiveNoFileComp))
			}
			if f := c.Flags().Lookup("output"); f != nil {
				_ = c.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(outputFormats(f.DefValue), cobra.ShellCompDirectiveNoFileComp))
			}
		})
	}
}

func walk(cmd *cobra.Command, fn func(*cobra.Command)) {
	fn(cmd)
	for _, c := range cmd.Commands() {
		walk(c, fn)
	}
}

// releaseThenChart completes a release name first (from the cluster), then,
// for commands that take one, a chart: a path, so the shell's own file
// completion.
func releaseThenChart(settings *cli.EnvSettings) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			if cmd.Name() == "status" {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return nil, cobra.ShellCompDirectiveDefault
		}
		return completeReleases(settings, toComplete)
	}
}

// completeReleases lists the releases of the namespace whose names start
// with prefix, as helm completes them (every status, newest revision).
func completeReleases(settings *cli.EnvSettings, prefix string) ([]string, cobra.ShellCompDirective) {
	cfg, err := release.NewConfiguration(settings, settings.Namespace(), nil)
	if err != nil {
		return nil, cobra.ShellCompDirectiveError | cobra.ShellCompDirectiveNoFileComp
	}
	list := action.NewList(cfg)
	list.All = true
	list.SetStateMask()
	rels, err := withTimeout(func() ([]string, error) {
		found, err := list.Run()
		if err != nil {
			return nil, err
		}
		rs, err := release.V1Releases(found)
		var names []string
		for _, r := range rs {
			if strings.HasPrefix(r.Name, prefix) {
				names = append(names, r.Name+"\t"+r.Chart.Metadata.Name+"-"+r.Chart.Metadata.Version+" -> "+r.Info.Status.String())
			}
		}
		return names, err
	})
	if err != nil {
		cobra.CompDebugln("listing releases: "+err.Error(), settings.Debug)
		return nil, cobra.ShellCompDirectiveError | cobra.ShellCompDirectiveNoFileComp
	}
	return rels, cobra.ShellCompDirectiveNoFileComp
}

// namespaceNames lists the cluster's namespaces, giving up after
// completionTimeout.
func namespaceNames(settings *cli.EnvSettings) ([]string, error) {
	rc, err := settings.RESTClientGetter().ToRESTConfig()
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), completionTimeout)
	defer cancel()
	nss, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, ns := range nss.Items {
		names = append(names, ns.Name)
	}
	return names, nil
}

// completeNamespaces lists the cluster's namespaces.
func completeNamespaces(settings *cli.EnvSettings) ([]string, cobra.ShellCompDirective) {
	names, err := namespaceNames(settings)
	if err != nil {
		cobra.CompDebugln("listing namespaces: "+err.Error(), settings.Debug)
		return nil, cobra.ShellCompDirectiveError | cobra.ShellCompDirectiveNoFileComp
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// completeContexts lists the kubeconfig's contexts.
func completeContexts(settings *cli.EnvSettings) ([]string, cobra.ShellCompDirective) {
	raw, err := settings.RESTClientGetter().ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError | cobra.ShellCompDirectiveNoFileComp
	}
	var names []string
	for name, c := range raw.Contexts {
		names = append(names, name+"\tcluster "+c.Cluster)
	}
	slices.Sort(names)
	return names, cobra.ShellCompDirectiveNoFileComp
}

// completeWith lists the library's built-in injectors: NAME (the newest
// version) and NAME@VERSION for each version, newest first.
func completeWith(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	dir := defaultLibrary
	if f := cmd.Flags().Lookup("injector-library"); f != nil {
		dir = f.Value.String()
	}
	lib, err := inject.LoadLibrary(dir)
	if err != nil {
		cobra.CompDebugln(err.Error(), false)
		return nil, cobra.ShellCompDirectiveError | cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, name := range lib.Names() {
		versions := lib.Versions(name)
		newest := versions[len(versions)-1]
		out = append(out, name+"\t"+describe(newest, "newest"))
		for _, d := range slices.Backward(versions) {
			out = append(out, d.Ref()+"\t"+describe(d, ""))
		}
	}
	out = slices.DeleteFunc(out, func(s string) bool { return !strings.HasPrefix(s, toComplete) })
	return out, cobra.ShellCompDirectiveNoFileComp
}

func describe(d *inject.Definition, note string) string {
	s := d.Description
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if note != "" {
		if s == "" {
			return fmt.Sprintf("%s (%s)", d.Version, note)
		}
		return fmt.Sprintf("%s (%s): %s", d.Version, note, s)
	}
	return s
}

// outputFormats are the --output values of a command, by the flag's
// default: the result commands print table, json or yaml; diff prints a
// diff, names only or json.
func outputFormats(def string) []string {
	if def == "diff" {
		return []string{"diff", "simple", "json"}
	}
	return []string{"table", "json", "yaml"}
}

// withTimeout runs fn, giving up after completionTimeout: helm's list
// takes no context to bound it with.
func withTimeout(fn func() ([]string, error)) ([]string, error) {
	type result struct {
		v   []string
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := fn()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-time.After(completionTimeout):
		return nil, fmt.Errorf("no answer from the cluster in %s", completionTimeout)
	}
}
