package inject

import (
	"fmt"
	"text/template"
	"text/template/parse"

	"github.com/Masterminds/sprig/v3"
)

// removedFunc reports whether a sprig function is withheld from injector
// definitions, and why. A definition often comes from a shared library
// and runs on CI machines that hold credentials, so a template may not
// read the machine (env, expandenv), reach the network (getHostByName) or
// depend on the clock or a random source: the same definition and
// parameters give the same bytes wherever helm-inject runs, which the
// recorded digest and idempotent re-injection rely on. Helm removes env and
// expandenv from chart templates and stubs getHostByName; this is stricter.
func removedFunc(name string) (reason string, removed bool) {
	switch name {
	case "env", "expandenv":
		return "it reads the environment of the machine running helm-inject; declare a parameter and pass the value", true
	case "getHostByName":
		return "it makes a DNS lookup, so the result depends on where helm-inject runs; pass the address as a parameter", true
	case "now", "ago":
		return "it reads the clock, so every run renders different bytes", true
	case "randAlphaNum", "randAlpha", "randAscii", "randNumeric", "randBytes", "randInt", "shuffle", "uuidv4":
		return "it is random, so every run renders different bytes", true
	case "genPrivateKey", "genCA", "genCAWithKey", "genSelfSignedCert", "genSelfSignedCertWithKey",
		"genSignedCert", "genSignedCertWithKey", "encryptAES", "bcrypt", "htpasswd":
		return "it uses a random key, salt or serial number, so every run renders different bytes; create secrets outside the injector", true
	}
	return "", false
}

// RemovedFuncs lists the sprig functions injector templates cannot call.
func RemovedFuncs() []string {
	var names []string
	for name := range sprig.TxtFuncMap() {
		if _, removed := removedFunc(name); removed {
			names = append(names, name)
		}
	}
	return names
}

// parseTemplate parses a definition's template with sprig's text functions
// but the removed ones. A call of a removed function is refused here, with its line and the reason, rather than as
// text/template's bare "function not defined".
func parseTemplate(name, text string) (*template.Template, error) {
	// Sprig's text functions, the removed ones replaced by stubs: defined
	// only so that parsing gets far enough for checkRemoved to say why a
	// call is refused; checkRemoved rejects every use.
	funcs := sprig.TxtFuncMap()
	for f := range funcs {
		if _, removed := removedFunc(f); removed {
			funcs[f] = func(...any) (any, error) { return nil, fmt.Errorf("%s is not available", f) }
		}
	}
	t, err := template.New(name).Funcs(funcs).Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, err
	}
	for _, tt := range t.Templates() {
		if tt.Tree == nil {
			continue
		}
		if err := checkRemoved(tt.Tree, tt.Tree.Root); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// checkRemoved walks a parse tree for identifiers naming removed functions.
func checkRemoved(tree *parse.Tree, n parse.Node) error {
	var children []parse.Node
	switch n := n.(type) {
	case *parse.IdentifierNode:
		if reason, removed := removedFunc(n.Ident); removed {
			loc, _ := tree.ErrorContext(n)
			return fmt.Errorf("%s: function %q is not available in injector definitions: %s", loc, n.Ident, reason)
		}
	case *parse.ListNode:
		children = append(children, n.Nodes...)
	case *parse.ActionNode:
		children = append(children, n.Pipe)
	case *parse.PipeNode:
		for _, c := range n.Cmds {
			children = append(children, c)
		}
	case *parse.CommandNode:
		children = append(children, n.Args...)
	case *parse.ChainNode:
		children = append(children, n.Node)
	case *parse.IfNode:
		children = append(children, n.Pipe, n.List, n.ElseList)
	case *parse.RangeNode:
		children = append(children, n.Pipe, n.List, n.ElseList)
	case *parse.WithNode:
		children = append(children, n.Pipe, n.List, n.ElseList)
	case *parse.TemplateNode:
		children = append(children, n.Pipe)
	}
	for _, c := range children {
		if c == nil || isNilNode(c) {
			continue
		}
		if err := checkRemoved(tree, c); err != nil {
			return err
		}
	}
	return nil
}

// isNilNode catches typed nil pointers (an if without else has a nil
// *ListNode ElseList).
func isNilNode(n parse.Node) bool {
	switch n := n.(type) {
	case *parse.ListNode:
		return n == nil
	case *parse.PipeNode:
		return n == nil
	}
	return false
}
