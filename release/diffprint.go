package release

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"
	"gopkg.in/yaml.v3"

	"github.com/helm-inject/helm-inject/inject"
)

// DiffOutput is the format WriteDiff prints.
type DiffOutput string

const (
	DiffOutputDiff   DiffOutput = "diff"
	DiffOutputSimple DiffOutput = "simple"
	DiffOutputJSON   DiffOutput = "json"
)

// DiffPrintOptions are helm-diff's display flags.
type DiffPrintOptions struct {
	Output DiffOutput
	// Context is the number of unchanged lines around each change.
	Context int
	Color   bool
	// ShowSecrets prints Secret data; by default values are masked.
	ShowSecrets bool
	// SuppressSecrets leaves Secrets out entirely.
	SuppressSecrets bool
	// NoHooks leaves hooks out, and test hooks are left out unless
	// IncludeTests, as helm-diff does by default.
	NoHooks, IncludeTests bool
	// Suppress leaves resources of these kinds out (helm-diff's
	// --suppress).
	Suppress []string
	// SuppressLines leaves out changed lines that match one of these
	// (--suppress-output-line-regex).
	SuppressLines []*regexp.Regexp
	// StripTrailingCR ignores carriage returns at the ends of lines.
	StripTrailingCR bool
}

// shown reports whether the options print a change.
func (o DiffPrintOptions) shown(c Change) bool {
	switch {
	case c.Hook && o.NoHooks,
		c.Test && !o.IncludeTests,
		isSecret(c) && o.SuppressSecrets,
		slices.Contains(o.Suppress, c.ID.Kind):
		return false
	}
	return true
}

const (
	colorRed   = "\x1b[31m"
	colorGreen = "\x1b[32m"
	colorCyan  = "\x1b[36m"
	colorBold  = "\x1b[1m"
	colorReset = "\x1b[0m"
)

// WriteDiff prints a diff result. Nothing is printed when nothing changes.
// The options only choose what is shown: changes they hide still count
// (HasChanges, --detailed-exitcode), because apply would still make a
// revision; a last line says how many were hidden.
func WriteDiff(w io.Writer, r *DiffResult, o DiffPrintOptions) error {
	changes := make([]Change, 0, len(r.Changes))
	hidden := 0
	for _, c := range r.Changes {
		if o.StripTrailingCR {
			c.Before, c.After = stripCR(c.Before), stripCR(c.After)
			if c.Type == Changed && c.Before == c.After {
				hidden++
				continue
			}
		}
		if !o.shown(c) {
			hidden++
			continue
		}
		if isSecret(c) && !o.ShowSecrets {
			c.Before, c.After = maskSecretPair(c.Before, c.After)
		}
		changes = append(changes, c)
	}
	switch o.Output {
	case DiffOutputJSON:
		return writeDiffJSON(w, r, changes)
	case DiffOutputSimple, DiffOutputDiff, "":
	default:
		return fmt.Errorf("unknown --output %q (want diff, simple or json)", o.Output)
	}
	paint := func(color, s string) string {
		if !o.Color {
			return s
		}
		return color + s + colorReset
	}
	var b bytes.Buffer
	for _, line := range r.Reasons {
		fmt.Fprintln(&b, paint(colorBold, line))
	}
	for _, line := range r.Drift {
		fmt.Fprintln(&b, paint(colorBold, "drift: "+line))
	}
	for _, c := range changes {
		header := fmt.Sprintf("%s, %s, %s (%s) has %s:", c.ID.Namespace, c.ID.Name, c.ID.Kind, c.ID.APIVersion, verb(c.Type))
		if c.Hook {
			header += " (hook)"
		}
		fmt.Fprintln(&b, paint(colorCyan, header))
		if o.Output == DiffOutputSimple {
			continue
		}
		if err := writeUnified(&b, c.Before, c.After, o.Context, o.SuppressLines, paint); err != nil {
			return err
		}
	}
	if hidden > 0 {
		fmt.Fprintf(&b, "(%d more resource change(s) not shown: hooks, tests without --include-tests, --suppress or --suppress-secrets; apply would still make a new revision)\n", hidden)
	}
	_, err := w.Write(b.Bytes())
	return err
}

func stripCR(s string) string { return strings.ReplaceAll(s, "\r\n", "\n") }

func verb(t ChangeType) string {
	switch t {
	case Added:
		return "been added"
	case Removed:
		return "been removed"
	}
	return "changed"
}

// injectorChanges describes how the recorded injectors change: a built-in
// injector's version ("injector log-shipper: 1.0.0 → 1.1.0"), or an
// injector added or removed.
func injectorChanges(before, after []inject.Record) []string {
	old := map[string]inject.Record{}
	for _, r := range before {
		old[r.Name] = r
	}
	var lines []string
	seen := map[string]bool{}
	for _, r := range after {
		seen[r.Name] = true
		o, ok := old[r.Name]
		switch {
		case !ok:
			lines = append(lines, fmt.Sprintf("injector %s: added%s", r.Name, versionSuffix(r)))
		case o.Version != r.Version:
			lines = append(lines, fmt.Sprintf("injector %s: %s → %s", r.Name, o.Version, r.Version))
		case o.Digest != r.Digest && r.Version != "":
			lines = append(lines, fmt.Sprintf("injector %s: %s with other parameters", r.Name, r.Version))
			// An external injector's digest covers its whole output, which
			// changes with any resource; the resource diffs show that.
		case r.Program != nil && o.Program == nil:
			lines = append(lines, fmt.Sprintf("injector %s: program %s recorded (the deployed revision does not name its program)", r.Name, r.Program.Short()))
		case r.Program != nil && *r.Program != *o.Program:
			lines = append(lines, programChange(r.Name, o.Program, r.Program))
		}
	}
	for _, r := range before {
		if !seen[r.Name] {
			lines = append(lines, fmt.Sprintf("injector %s: removed%s", r.Name, versionSuffix(r)))
		}
	}
	return lines
}

// programChange says how an external injector's program changed: another
// build or version ("istioctl 1.27.1 (sha256:…) → istioctl 1.28.0
// (sha256:…)"), or the same file at another path.
func programChange(name string, before, after *inject.Program) string {
	if before.SHA256 == after.SHA256 && before.Version == after.Version {
		return fmt.Sprintf("injector %s: program %s → %s (the same file)", name, before.Path, after.Path)
	}
	return fmt.Sprintf("injector %s: program %s → %s", name, before.Short(), after.Short())
}

func versionSuffix(r inject.Record) string {
	if r.Version == "" {
		return ""
	}
	return " (" + r.Version + ")"
}

// writeUnified prints a unified diff of two documents without file headers.
func writeUnified(w io.Writer, before, after string, context int, suppress []*regexp.Regexp, paint func(string, string) string) error {
	if before != "" {
		before += "\n"
	}
	if after != "" {
		after += "\n"
	}
	if context < 0 {
		context = 0
	}
	text, err := udiff.ToUnified("before", "after", before, udiff.Lines(before, after), context)
	if err != nil {
		return err
	}
	for _, line := range strings.SplitAfter(text, "\n") {
		changed := strings.HasPrefix(line, "-") || strings.HasPrefix(line, "+")
		switch {
		case line == "", strings.HasPrefix(line, "--- "), strings.HasPrefix(line, "+++ "):
		case changed && slices.ContainsFunc(suppress, func(re *regexp.Regexp) bool { return re.MatchString(line[1:]) }):
		case strings.HasPrefix(line, "-"):
			fmt.Fprint(w, paint(colorRed, strings.TrimSuffix(line, "\n"))+"\n")
		case strings.HasPrefix(line, "+"):
			fmt.Fprint(w, paint(colorGreen, strings.TrimSuffix(line, "\n"))+"\n")
		case strings.HasPrefix(line, "\\"):
			// "\ No newline at end of file": our documents always end in one.
		default:
			fmt.Fprint(w, line)
		}
	}
	return nil
}

type jsonChange struct {
	Change     ChangeType `json:"change"`
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Namespace  string     `json:"namespace"`
	Name       string     `json:"name"`
	Hook       bool       `json:"hook"`
	Before     string     `json:"before,omitempty"`
	After      string     `json:"after,omitempty"`
}

func writeDiffJSON(w io.Writer, r *DiffResult, changes []Change) error {
	out := struct {
		Release         string          `json:"release"`
		Installed       bool            `json:"installed"`
		NewRevision     bool            `json:"newRevision"`
		Reasons         []string        `json:"reasons"`
		InjectorsBefore []inject.Record `json:"injectorsBefore"`
		InjectorsAfter  []inject.Record `json:"injectorsAfter"`
		Changes         []jsonChange    `json:"changes"`
		Drift           []string        `json:"drift,omitempty"`
	}{Release: r.Release, Installed: r.Installed, NewRevision: r.HasChanges(), Reasons: append([]string{}, r.Reasons...), InjectorsBefore: r.InjectorsBefore, InjectorsAfter: r.InjectorsAfter, Changes: []jsonChange{}, Drift: r.Drift}
	for _, c := range changes {
		out.Changes = append(out.Changes, jsonChange{
			Change: c.Type, APIVersion: c.ID.APIVersion, Kind: c.ID.Kind, Namespace: c.ID.Namespace, Name: c.ID.Name,
			Hook: c.Hook, Before: c.Before, After: c.After,
		})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func isSecret(c Change) bool { return isSecretID(c.ID) }

// maskSecretPair hides the values of a Secret's data and stringData while
// still showing which keys change: an unchanged value reads
// "REDACTED # (N bytes)", a changed one "-------- # (N bytes)" before and
// "++++++++ # (N bytes)" after, as helm-diff prints them.
func maskSecretPair(before, after string) (string, string) {
	bv, bn := secretValues(before)
	av, an := secretValues(after)
	mask := func(doc *yaml.Node, own, other map[string]string, changed string) string {
		if doc == nil {
			return ""
		}
		for _, field := range []string{"data", "stringData"} {
			m := mapValue(doc.Content[0], field)
			if m == nil {
				continue
			}
			for i := 0; i+1 < len(m.Content); i += 2 {
				k, v := field+"."+m.Content[i].Value, m.Content[i+1]
				n := len(own[k])
				marker := "REDACTED"
				if o, ok := other[k]; !ok || o != own[k] {
					marker = changed
				}
				*v = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: fmt.Sprintf("%s # (%d bytes)", marker, n)}
			}
		}
		var b bytes.Buffer
		enc := yaml.NewEncoder(&b)
		enc.SetIndent(2)
		if err := enc.Encode(doc); err != nil {
			return "# (the Secret could not be shown masked)"
		}
		return strings.TrimSpace(b.String())
	}
	return mask(bn, bv, av, "--------"), mask(an, av, bv, "++++++++")
}

// secretValues parses a Secret and returns its decoded values by
// "data.KEY" / "stringData.KEY", and the parsed document.
func secretValues(doc string) (map[string]string, *yaml.Node) {
	if doc == "" {
		return nil, nil
	}
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(doc), &n); err != nil || len(n.Content) == 0 {
		return nil, nil
	}
	vals := map[string]string{}
	for _, field := range []string{"data", "stringData"} {
		m := mapValue(n.Content[0], field)
		if m == nil {
			continue
		}
		for i := 0; i+1 < len(m.Content); i += 2 {
			v := m.Content[i+1].Value
			if field == "data" {
				if dec, err := base64.StdEncoding.DecodeString(v); err == nil {
					v = string(dec)
				}
			}
			vals[field+"."+m.Content[i].Value] = v
		}
	}
	return vals, &n
}

func mapValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key && m.Content[i+1].Kind == yaml.MappingNode {
			return m.Content[i+1]
		}
	}
	return nil
}
