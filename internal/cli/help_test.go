package cli

import (
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// otherPrograms are tools whose command lines help texts quote: their
// flags are theirs, not helm-inject's.
var otherPrograms = []string{"helm", "helmfile", "kubectl", "istioctl", "linkerd", "argocd", "go", "brew"}

var (
	flagToken = regexp.MustCompile(`(^|[\s("'` + "`" + `\[])(--[a-z0-9][a-z0-9-]*)`)
	// commandLine is a command line quoted in help: an indented example
	// (maybe after "$ "), or in backticks or double quotes; prose such as
	// "run helm-inject as helm" is not one.
	commandLine = regexp.MustCompile(`(?:^\s+(?:\$ )?|` + "[`\"]" + `)helm[- ]inject((?: [a-z][a-z0-9-]*)+)`)
	wordToken   = regexp.MustCompile(`[A-Za-z0-9./~-][A-Za-z0-9./=:;-]*|\S`)
	subcommand  = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
)

// TestHelpMentionsOnlyWhatExists: every command a help text names
// (helm-inject X Y, helm inject X) exists, and every --flag it names is a
// flag of the command it is written for (the helm-inject command line it
// follows on the same line, else the command whose help it is), unless it
// belongs to another program's command line (helm upgrade --install).
func TestHelpMentionsOnlyWhatExists(t *testing.T) {
	root := newRootCommand(strings.NewReader(""), io.Discard, io.Discard)
	root.InitDefaultCompletionCmd()
	root.InitDefaultHelpCmd()
	var checked int
	walk(root, func(cmd *cobra.Command) {
		for _, text := range []string{cmd.Short, cmd.Long, cmd.Example} {
			// A command line continued with a backslash is one line.
			text = strings.ReplaceAll(text, "\\\n", " ")
			for _, line := range strings.Split(text, "\n") {
				checked++
				for _, problem := range helpLineProblems(root, cmd, line) {
					t.Errorf("%s: help says %q: %s", cmd.CommandPath(), strings.TrimSpace(line), problem)
				}
			}
		}
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			for _, problem := range helpLineProblems(root, cmd, f.Usage) {
				t.Errorf("%s --%s: usage says %q: %s", cmd.CommandPath(), f.Name, f.Usage, problem)
			}
		})
	})
	if checked < 100 {
		t.Fatalf("only %d help lines checked: the walk misses commands", checked)
	}
}

// helpLineProblems lists what line names that does not exist, reading it as
// help of cmd.
func helpLineProblems(root, cmd *cobra.Command, line string) []string {
	var problems []string
	for _, m := range commandLine.FindAllStringSubmatch(line, -1) {
		if _, ok := lookupCommand(root, strings.Fields(m[1])); !ok {
			problems = append(problems, "no command helm-inject"+m[1])
		}
	}
	for _, m := range flagToken.FindAllStringSubmatchIndex(line, -1) {
		name := line[m[4]+2 : m[5]]
		if strings.Count(line[:m[4]], `"`)%2 == 1 {
			continue // inside a quoted argument, such as an injector's command line
		}
		owner := ownerOf(root, cmd, line[:m[4]])
		if owner == nil {
			continue // another program's flag
		}
		if owner.Flags().Lookup(name) == nil && owner.InheritedFlags().Lookup(name) == nil && owner.PersistentFlags().Lookup(name) == nil {
			problems = append(problems, "no flag --"+name+" on "+owner.CommandPath())
		}
	}
	return problems
}

// ownerOf is the command a flag belongs to, from the text before it on its
// line: the last program named there (helm-inject SUBCOMMAND, or another
// program, which gives nil), else cmd.
func ownerOf(root, cmd *cobra.Command, before string) *cobra.Command {
	words := wordToken.FindAllString(before, -1)
	for i := len(words) - 1; i >= 0; i-- {
		w := words[i]
		if strings.HasSuffix(w, ".") || strings.HasSuffix(w, ";") || strings.HasSuffix(w, ":") {
			break // the end of another sentence
		}
		if w == "helm-inject" && i > 0 && strings.HasPrefix(words[i-1], "-") {
			continue // a flag's value (--post-renderer helm-inject)
		}
		if w == "helm-inject" || (w == "helm" && i+1 < len(words) && words[i+1] == "inject") {
			start := i + 1
			if w == "helm" {
				start++
			}
			var path []string
			for _, p := range words[start:] {
				if strings.HasPrefix(p, "-") || !subcommand.MatchString(p) {
					break
				}
				path = append(path, p)
			}
			for len(path) > 0 {
				if c, ok := lookupCommand(root, path); ok {
					return c
				}
				path = path[:len(path)-1]
			}
			return root
		}
		for _, p := range otherPrograms {
			if w == p {
				return nil
			}
		}
	}
	return cmd
}

// lookupCommand finds the command path names; words after it are its
// arguments.
func lookupCommand(root *cobra.Command, path []string) (*cobra.Command, bool) {
	c, _, err := root.Find(path)
	return c, err == nil && c != root
}
