package e2e

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	shellwords "github.com/mattn/go-shellwords"
)

// helmSuiteDifferences are the cases of Helm's own template suite where
// helm-inject's output or exit code is allowed to differ from the helm 4
// CLI's, each with its reason. docs/compatibility.md shows the same table
// ("Helm's template suite"); a case that becomes equal must leave it.
// Update both with every Helm bump.
var helmSuiteDifferences = map[string]string{
	"TestTemplateCmd/19 chart with template with invalid yaml (--debug)": "with --debug, helm prints the raw render of a chart whose output is not YAML before the error, its files in Go's map order; helm-inject prints only the error, which names the template, the line and the YAML error (exit code 1 both)",
	"testcharts/upgradetest": "a folder with no Chart.yaml: helm refuses it; helm-inject renders a folder of plain manifests as a chart (README, section Use)",
}

// helmSuiteCase is one command of Helm's suite, run by helm 4 and by
// helm-inject in Helm's pkg/cmd folder.
type helmSuiteCase struct {
	name string
	args []string
}

// TestHelmTemplateSuite runs every case of Helm's TestTemplateCmd
// (pkg/cmd/template_test.go) and renders every chart of its
// pkg/cmd/testdata/testcharts, from the Helm version go.mod names (read
// from the module cache), with the helm 4 CLI and with helm-inject
// template, and requires the same stdout and exit code, byte for byte,
// except for the cases of helmSuiteDifferences.
func TestHelmTemplateSuite(t *testing.T) {
	dir := helmModuleDir(t, "pkg", "cmd")
	cases := templateCmdCases(t, filepath.Join(dir, "template_test.go"))
	if len(cases) < 20 {
		t.Fatalf("read only %d cases from Helm's template_test.go: has its form changed?", len(cases))
	}
	charts, err := os.ReadDir(filepath.Join(dir, "testdata", "testcharts"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range charts {
		if strings.HasSuffix(c.Name(), ".prov") {
			continue
		}
		cases = append(cases, helmSuiteCase{
			name: "testcharts/" + c.Name(),
			args: []string{"template", "suite", "testdata/testcharts/" + c.Name()},
		})
	}

	checkDifferencesDocumented(t)

	h4 := command{dir: dir}
	equal := 0
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := h4.run(t, helm4Bin(t), c.args...)
			got := command{dir: dir}.run(t, filepath.Join(binDir, "helm-inject"), c.args...)
			same := got.code == want.code && got.stdout == want.stdout
			reason, allowed := helmSuiteDifferences[c.name]
			switch {
			case same && allowed:
				t.Errorf("now equal to helm 4's output: remove it from helmSuiteDifferences and docs/compatibility.md (%s)", reason)
			case same:
				equal++
			case allowed:
				t.Logf("differs, as allowed: %s", reason)
			case got.code != want.code:
				t.Errorf("%s: helm 4 exits %d, helm-inject %d\nhelm 4:\n%s\nhelm-inject:\n%s", strings.Join(c.args, " "), want.code, got.code, want, got)
			default:
				t.Errorf("%s: stdout differs from helm 4's:\n%s", strings.Join(c.args, " "), firstDifference(want.stdout, got.stdout))
			}
		})
	}
	t.Logf("%d of %d cases equal to helm 4's output and exit code", equal, len(cases))
}

// helmModuleDir is a folder of the Helm module go.mod requires, in the
// module cache.
func helmModuleDir(t *testing.T, elem ...string) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "helm.sh/helm/v4").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		// go list prints no Dir before the module is downloaded.
		out, err = exec.Command("go", "mod", "download", "-json", "helm.sh/helm/v4").Output()
		if err != nil {
			t.Fatalf("finding helm.sh/helm/v4 in the module cache: %v", err)
		}
		i := strings.Index(string(out), `"Dir": "`)
		if i < 0 {
			t.Fatalf("go mod download printed no Dir:\n%s", out)
		}
		rest := string(out)[i+len(`"Dir": "`):]
		out = []byte(rest[:strings.Index(rest, `"`)])
	}
	return filepath.Join(append([]string{strings.TrimSpace(string(out))}, elem...)...)
}

// templateCmdCases reads the cases of TestTemplateCmd from Helm's source:
// each element's name and cmd, cmd evaluated as the Go expression it is
// (string literals, the file's string variables, fmt.Sprintf,
// filepath.Join and +) and split as Helm's test splits it (shellwords).
func templateCmdCases(t *testing.T, file string) []helmSuiteCase {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]ast.Expr{}
	var list *ast.CompositeLit
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.ValueSpec:
			for i, name := range n.Names {
				if i < len(n.Values) {
					vars[name.Name] = n.Values[i]
				}
			}
		case *ast.AssignStmt:
			if id, ok := n.Lhs[0].(*ast.Ident); ok && len(n.Lhs) == 1 && len(n.Rhs) == 1 {
				vars[id.Name] = n.Rhs[0]
			}
		case *ast.FuncDecl:
			if n.Name.Name != "TestTemplateCmd" {
				return false
			}
		case *ast.CompositeLit:
			if at, ok := n.Type.(*ast.ArrayType); ok && list == nil {
				if id, ok := at.Elt.(*ast.Ident); ok && id.Name == "cmdTestCase" {
					list = n
				}
			}
		}
		return true
	})
	if list == nil {
		t.Fatalf("%s: no []cmdTestCase in TestTemplateCmd", file)
	}
	var eval func(e ast.Expr) (string, error)
	eval = func(e ast.Expr) (string, error) {
		switch e := e.(type) {
		case *ast.BasicLit:
			return strconv.Unquote(e.Value)
		case *ast.Ident:
			if v, ok := vars[e.Name]; ok {
				return eval(v)
			}
		case *ast.BinaryExpr:
			if e.Op == token.ADD {
				a, err := eval(e.X)
				if err != nil {
					return "", err
				}
				b, err := eval(e.Y)
				return a + b, err
			}
		case *ast.CallExpr:
			var args []string
			for _, a := range e.Args {
				s, err := eval(a)
				if err != nil {
					return "", err
				}
				args = append(args, s)
			}
			sel, _ := e.Fun.(*ast.SelectorExpr)
			if sel == nil {
				break
			}
			pkg, _ := sel.X.(*ast.Ident)
			switch {
			case pkg != nil && pkg.Name == "fmt" && sel.Sel.Name == "Sprintf" && len(args) > 0:
				rest := make([]any, len(args)-1)
				for i, a := range args[1:] {
					rest[i] = a
				}
				return fmt.Sprintf(args[0], rest...), nil
			case pkg != nil && pkg.Name == "filepath" && sel.Sel.Name == "Join":
				return filepath.Join(args...), nil
			}
		}
		return "", fmt.Errorf("%s: an expression this reader does not evaluate", fset.Position(e.Pos()))
	}
	var cases []helmSuiteCase
	for _, el := range list.Elts {
		lit, ok := el.(*ast.CompositeLit)
		if !ok {
			t.Fatalf("%s: a case that is not a literal", fset.Position(el.Pos()))
		}
		var c helmSuiteCase
		for _, kv := range lit.Elts {
			kv := kv.(*ast.KeyValueExpr)
			key := kv.Key.(*ast.Ident).Name
			if key != "name" && key != "cmd" {
				continue
			}
			s, err := eval(kv.Value)
			if err != nil {
				t.Fatal(err)
			}
			if key == "name" {
				c.name = s
				continue
			}
			if c.args, err = shellwords.Parse(s); err != nil {
				t.Fatalf("%s: %v", fset.Position(kv.Pos()), err)
			}
		}
		// Names repeat in Helm's table; subtests are told apart by number.
		c.name = fmt.Sprintf("TestTemplateCmd/%02d %s", len(cases)+1, c.name)
		cases = append(cases, c)
	}
	return cases
}

// checkDifferencesDocumented holds docs/compatibility.md's table of the
// suite's differences to helmSuiteDifferences, row for row.
func checkDifferencesDocumented(t *testing.T) {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "compatibility.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), "<!-- helm suite differences:")
	if !ok {
		t.Fatal("docs/compatibility.md has no table of the helm suite's differences")
	}
	documented := map[string]string{}
	for _, line := range strings.Split(table, "\n")[1:] {
		if !strings.HasPrefix(line, "| `") {
			if len(documented) > 0 {
				break
			}
			continue
		}
		name, reason, _ := strings.Cut(strings.TrimPrefix(line, "| `"), "` | ")
		documented[name] = strings.TrimSuffix(reason, " |")
	}
	for name, reason := range helmSuiteDifferences {
		if documented[name] != reason {
			t.Errorf("docs/compatibility.md's table gives %q for %q; the test's table gives %q", documented[name], name, reason)
		}
	}
	for name := range documented {
		if _, ok := helmSuiteDifferences[name]; !ok {
			t.Errorf("docs/compatibility.md lists %q, which the test's table does not", name)
		}
	}
}
