package cli

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// testFunc is one Test function of the repository and its source.
type testFunc struct {
	name, file, body string
}

// repoTests reads every Test function of the repository's _test.go files.
// A test's source includes the helpers of its package that it calls
// directly, so a table-driven test that hands its flags to a helper counts.
func repoTests(t *testing.T) []testFunc {
	t.Helper()
	root := filepath.Join("..", "..")
	type pkgFunc struct {
		testFunc
		calls []string
	}
	byDir := map[string][]pkgFunc{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".cache" || d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, p, src, 0)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil || fn.Recv != nil {
				continue
			}
			body := string(src[fset.Position(fn.Body.Pos()).Offset:fset.Position(fn.Body.End()).Offset])
			var calls []string
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if c, ok := n.(*ast.CallExpr); ok {
					if id, ok := c.Fun.(*ast.Ident); ok {
						calls = append(calls, id.Name)
					}
				}
				return true
			})
			dir := filepath.Dir(p)
			byDir[dir] = append(byDir[dir], pkgFunc{testFunc{name: fn.Name.Name, file: filepath.ToSlash(rel), body: body}, calls})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var tests []testFunc
	for _, funcs := range byDir {
		bodies := map[string]string{}
		for _, f := range funcs {
			bodies[f.name] = f.body
		}
		for _, f := range funcs {
			if !strings.HasPrefix(f.name, "Test") {
				continue
			}
			tf := f.testFunc
			for _, c := range f.calls {
				if !strings.HasPrefix(c, "Test") {
					tf.body += bodies[c]
				}
			}
			tests = append(tests, tf)
		}
	}
	return tests
}

// claimCommand is a command whose flags the claims table covers, and the
// words a test that runs it contains.
type claimCommand struct {
	path  string
	words []string
}

// flagPattern matches a test's source that passes the flag: --name
// (alone, or =value) or its shorthand, inside a string literal.
func flagPattern(f *pflag.Flag) *regexp.Regexp {
	pat := `["\s]--` + regexp.QuoteMeta(f.Name) + `(["=\s]|$)`
	if f.Shorthand != "" {
		pat += `|"-` + regexp.QuoteMeta(f.Shorthand) + `"`
	}
	return regexp.MustCompile(pat)
}

// runsCommand reports whether a test's source runs one of the command's
// spellings ("apply", "diff", ...).
func runsCommand(body string, words []string) bool {
	for _, w := range words {
		if strings.Contains(body, `"`+w+`"`) || strings.Contains(body, `"`+w+` `) {
			return true
		}
	}
	return len(words) == 0
}

// claimRows is the generated flag table: per command and flag, the tests
// that pass that flag to that command.
func claimRows(t *testing.T) (string, []string) {
	t.Helper()
	root := newRootCommand(strings.NewReader(""), io.Discard, io.Discard)
	tests := repoTests(t)
	var b bytes.Buffer
	var unproven []string
	row := func(cmdName string, words []string, f *pflag.Flag) {
		var by []string
		used := flagPattern(f)
		for _, tf := range tests {
			// The cheap test first: the regular expression runs over the
			// tests of this command only.
			if runsCommand(tf.body, words) && used.MatchString(tf.body) {
				by = append(by, fmt.Sprintf("`%s` %s", tf.name, tf.file))
			}
		}
		slices.Sort(by)
		proof := strings.Join(by, "<br>")
		if len(by) == 0 {
			proof = "**no test yet**"
			unproven = append(unproven, cmdName+" --"+f.Name)
		}
		fmt.Fprintf(&b, "| %s | `--%s` | %s |\n", cmdName, f.Name, proof)
	}
	b.WriteString("| command | flag | tests that pass it |\n|---|---|---|\n")
	root.PersistentFlags().VisitAll(func(f *pflag.Flag) { row("(every command)", nil, f) })
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		name := strings.TrimPrefix(c.CommandPath(), "helm-inject ")
		// upgrade is apply under Helm's name, diff upgrade is diff: a test
		// of either spelling covers both.
		words := []string{c.Name()}
		switch name {
		case "apply", "upgrade":
			words = []string{"apply", "upgrade"}
		case "diff", "diff upgrade":
			words = []string{"diff"}
		}
		c.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) { row(name, words, f) })
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	for _, c := range root.Commands() {
		walk(c)
	}
	return b.String(), unproven
}

// TestClaimsTable keeps docs/claims.md's flag table true: every flag of
// every command has a row, each naming the tests that pass the flag to
// that command (run with -update after adding a flag or a test), and a
// flag that no test passes fails the test.
func TestClaimsTable(t *testing.T) {
	table, unproven := claimRows(t)
	checkGenerated(t, "claims.md", "TestClaimsTable",
		"<!-- flag table: generated by go test ./internal/cli -run TestClaimsTable -update -->\n", "<!-- end of flag table -->\n", table)
	if len(unproven) > 0 {
		t.Errorf("flags no test passes to their command (add a test, or drop the flag): %s", strings.Join(unproven, ", "))
	}
}

// TestClaimsGuarantees: every test the hand-written guarantee table of
// docs/claims.md names exists.
func TestClaimsGuarantees(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "claims.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, guarantees, ok := strings.Cut(string(data), "## Guarantees")
	if !ok {
		t.Fatal("docs/claims.md has no Guarantees section")
	}
	guarantees, _, _ = strings.Cut(guarantees, "\n## ")
	have := map[string]bool{}
	for _, tf := range repoTests(t) {
		have[tf.name] = true
	}
	// Each row names the mutation its test kills (hack/claims-mutations.sh
	// applies it), or says it has none.
	mutation := regexp.MustCompile("^`[^`]+` `[^`]+` → `[^`]*`, `go test [^`]+`$")
	for _, row := range strings.Split(guarantees, "\n") {
		if !strings.HasPrefix(row, "| ") || strings.HasPrefix(row, "| guarantee") {
			continue
		}
		// A cell's own "|" is written "\\|", never " | ".
		row = strings.TrimSuffix(strings.TrimSpace(row), "|")
		last := strings.TrimSpace(row[strings.LastIndex(row, " | ")+3:])
		if last != "untested" && !mutation.MatchString(last) {
			t.Errorf("docs/claims.md: the row %q names no mutation (`FILE` `CODE` → `MUTANT`, `go test ...`) and is not marked untested", row)
		}
	}
	named := regexp.MustCompile("`((?:Test|Fuzz)[A-Za-z0-9_]+)`").FindAllStringSubmatch(guarantees, -1)
	if len(named) < 10 {
		t.Fatalf("the Guarantees section names %d tests; it should name the test of each guarantee", len(named))
	}
	for _, m := range named {
		if !have[m[1]] && !strings.HasPrefix(m[1], "Fuzz") {
			t.Errorf("docs/claims.md names %s, which is no test of this repository", m[1])
		}
	}
}

// TestDocumentedCommandLines: every `helm-inject ...` command line in the
// code blocks of README.md and docs/ names a command that exists and only flags it has
// (so each is in the flag table); quoted injector arguments are skipped.
func TestDocumentedCommandLines(t *testing.T) {
	root := newRootCommand(strings.NewReader(""), io.Discard, io.Discard)
	files, _ := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	files = append(files, filepath.Join("..", "..", "README.md"))
	quoted := regexp.MustCompile(`"[^"]*"|'[^']*'`)
	checked := 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		fenced := false
		for n, line := range strings.Split(string(data), "\n") {
			line = strings.TrimSpace(line)
			if strings.HasPrefix(line, "```") {
				fenced = !fenced
			}
			if !fenced || !strings.HasPrefix(line, "helm-inject ") {
				continue
			}
			line, _, _ = strings.Cut(line, "#")
			words := strings.Fields(quoted.ReplaceAllString(line, "X"))
			cmd, rest, err := root.Find(words[1:])
			if err != nil || cmd == root {
				t.Errorf("%s:%d: %q names no command", file, n+1, line)
				continue
			}
			if cmd.Name() == "helmfile" {
				continue // helmfile's own flags follow
			}
			for _, w := range rest {
				if w == "--" && cmd.DisableFlagParsing {
					break // another program's flags follow (helmfile package)
				}
				if !strings.HasPrefix(w, "-") || w == "-" || w == "--" {
					continue
				}
				name := strings.TrimLeft(strings.SplitN(w, "=", 2)[0], "-")
				var f *pflag.Flag
				if strings.HasPrefix(w, "--") {
					f = cmd.Flags().Lookup(name)
				} else {
					f = cmd.Flags().ShorthandLookup(name[:1])
				}
				if f == nil {
					t.Errorf("%s:%d: helm-inject %s has no flag %s (in %q)", file, n+1, cmd.Name(), w, line)
				}
				checked++
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d documented flags found: is the command line pattern still right?", checked)
	}
}
