package inject

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"strconv"
	"strings"
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
	case "now", "ago", "unixEpoch", "durationRound", "dateModify", "date_modify", "mustDateModify", "must_date_modify":
		return "it reads the clock or computes with a time, so every run renders different bytes", true
	case "date", "dateInZone", "date_in_zone", "htmlDate", "htmlDateInZone", "toDate", "mustToDate":
		return "it reads the clock or the machine's time zone, so two runs or two machines render different bytes", true
	case "randAlphaNum", "randAlpha", "randAscii", "randNumeric", "randBytes", "randInt", "shuffle", "uuidv4":
		return "it is random, so every run renders different bytes", true
	case "genPrivateKey", "genCA", "genCAWithKey", "genSelfSignedCert", "genSelfSignedCertWithKey",
		"genSignedCert", "genSignedCertWithKey", "encryptAES", "bcrypt", "htpasswd":
		return "it uses a random key, salt or serial number, so every run renders different bytes; create secrets outside the injector", true
	}
	return "", false
}

// Bounds of a definition's execution. A definition comes from a shared
// library, so a mistake in one (or a hostile one) must not hang or exhaust
// the machine that renders it: lists are at most maxListLen items, a
// repeated or padded string at most maxStringLen bytes, and one rendered
// patch at most maxRenderBytes; the run ends with its context
// (--injector-timeout, Ctrl-C, SIGTERM).
const (
	maxListLen     = 10000
	maxStringLen   = 1 << 20
	maxRenderBytes = 4 << 20
)

func tooLong(fn string, n int, limit int) error {
	return fmt.Errorf("%s: %d is over the limit of %d in injector definitions", fn, n, limit)
}

// steps is how many elements sprig's untilStep(start, stop, step) makes:
// start, start+step, ... up to stop, stop excluded.
func steps(start, stop, step int) int {
	d := stop - start
	if step == 0 || d == 0 || (d > 0) != (step > 0) {
		return 0
	}
	if step > 0 {
		return (d + step - 1) / step
	}
	return (d + step + 1) / step
}

// seqLen is how many numbers sprig's seq makes of its parameters (as GNU
// seq: LAST, FIRST LAST or FIRST INCREMENT LAST, counting down when LAST
// is below FIRST).
func seqLen(params []int) int {
	start, stop, step := 1, 0, 1
	switch len(params) {
	case 1:
		stop = params[0]
	case 2:
		start, stop = params[0], params[1]
	case 3:
		start, step, stop = params[0], params[1], params[2]
	}
	if stop < start && step > 0 {
		step = -step
	}
	if step == 0 || (stop-start)/step < 0 {
		return 0
	}
	// Both ends included.
	return (stop-start)/step + 1
}

// boundedFuncs replace sprig's and text/template's functions that build a
// result of a size their arguments choose.
func boundedFuncs() template.FuncMap {
	sf := sprig.TxtFuncMap()
	until := sf["until"].(func(int) []int)
	untilStep := sf["untilStep"].(func(int, int, int) []int)
	seq := sf["seq"].(func(...int) string)
	indent := sf["indent"].(func(int, string) string)
	nindent := sf["nindent"].(func(int, string) string)
	return template.FuncMap{
		"until": func(n int) ([]int, error) {
			if n > maxListLen || -n > maxListLen {
				return nil, tooLong("until", n, maxListLen)
			}
			return until(n), nil
		},
		"untilStep": func(start, stop, step int) ([]int, error) {
			if n := steps(start, stop, step); n > maxListLen {
				return nil, tooLong("untilStep", n, maxListLen)
			}
			return untilStep(start, stop, step), nil
		},
		"seq": func(params ...int) (string, error) {
			if n := seqLen(params); n > maxListLen {
				return "", tooLong("seq", n, maxListLen)
			}
			return seq(params...), nil
		},
		"repeat": func(count int, str string) (string, error) {
			if count > 0 && len(str) > 0 && count > maxStringLen/len(str) {
				return "", tooLong("repeat", count*len(str), maxStringLen)
			}
			return strings.Repeat(str, max(count, 0)), nil
		},
		"indent": func(n int, s string) (string, error) {
			if n > maxListLen {
				return "", tooLong("indent", n, maxListLen)
			}
			return indent(n, s), nil
		},
		"nindent": func(n int, s string) (string, error) {
			if n > maxListLen {
				return "", tooLong("nindent", n, maxListLen)
			}
			return nindent(n, s), nil
		},
		"printf": func(format string, args ...any) (string, error) {
			for _, m := range printfWidth.FindAllStringSubmatch(format, -1) {
				for _, w := range m[1:] {
					if w == "*" {
						return "", errors.New("printf: a width or precision from an argument (*) is not allowed in injector definitions")
					}
					if n, err := strconv.Atoi(w); err == nil && n > maxListLen {
						return "", tooLong("printf width", n, maxListLen)
					}
				}
			}
			return fmt.Sprintf(format, args...), nil
		},
	}
}

// printfWidth finds the width and precision of each verb of a format.
var printfWidth = regexp.MustCompile(`%[-+# 0]*(\*|\d*)(?:\.(\*|\d*))?`)

// renderWriter collects a rendered patch, refusing to grow past
// maxRenderBytes and stopping at the end of the run (done).
type renderWriter struct {
	done <-chan struct{}
	buf  strings.Builder
}

func (w *renderWriter) Write(p []byte) (int, error) {
	select {
	case <-w.done:
		return 0, errStopped
	default:
	}
	if w.buf.Len()+len(p) > maxRenderBytes {
		return 0, fmt.Errorf("the rendered patch is over %d bytes", maxRenderBytes)
	}
	return w.buf.Write(p)
}

var errStopped = errors.New("stopped")

// execute renders the definition's template with data; a template that
// writes stops at the end of ctx. One that never writes cannot be
// interrupted: untilDone bounds the whole run.
func (d *Definition) execute(ctx context.Context, data any) (string, error) {
	w := &renderWriter{done: ctx.Done()}
	if err := d.tmpl.Execute(w, data); err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("template of %s: stopped: %w", d.Ref(), context.Cause(ctx))
		}
		return "", fmt.Errorf("template of %s: %w", d.Ref(), err)
	}
	return w.buf.String(), nil
}

// untilDone runs f and returns its error, or returns at the end of ctx
// even when f goes on: text/template cannot be interrupted, so a
// definition that calls its own templates exponentially and never writes
// is left to run in the background and its result dropped; helm-inject
// then exits with the error. what names the definition.
func untilDone(ctx context.Context, what string, f func() error) error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("template of %s: stopped: %w", what, context.Cause(ctx))
	}
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
	maps.Copy(funcs, boundedFuncs())
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
