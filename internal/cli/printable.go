package cli

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Strings a release record holds (a chart's name and version, its
// source, a status, an injector's name, the names in its manifest) are
// written by whoever could write the record: a Secret in the release's
// namespace. Printed raw, an escape sequence in one of them moves the
// cursor, rewrites what came before or fakes a line of the table. So
// every such string reaches the terminal through printable, and JSON and
// YAML through writeStructured's escaping.

// printable is s with every character that is not graphic (control
// characters: ESC, \r, \n, \t, DEL and the C1 controls; format characters
// such as bidirectional overrides and zero-width spaces) and every byte
// that is not UTF-8 written as Go writes it in a quoted string (\x1b, \r,
// \u202e, \xff), without the quotes. Ordinary text, spaces, quotes and
// backslashes included, is unchanged.
func printable(s string) string {
	if utf8.ValidString(s) && !strings.ContainsFunc(s, notGraphic) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case notGraphic(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
		i += n
	}
	return b.String()
}

func notGraphic(r rune) bool { return !strconv.IsGraphic(r) }

// printableText is printable for a message of several lines (an error):
// newlines and tabs stay.
func printableText(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		parts := strings.Split(l, "\t")
		for j := range parts {
			parts[j] = printable(parts[j])
		}
		lines[i] = strings.Join(parts, "\t")
	}
	return strings.Join(lines, "\n")
}

// escapeJSON rewrites the characters that encoding/json leaves raw and a
// terminal may act on (DEL, the C1 controls, format characters) as \u
// escapes: JSON structure is ASCII, so they only occur inside strings,
// where an escape stands for the same character. The document's value is
// unchanged.
func escapeJSON(b []byte) []byte {
	s := string(b)
	if !strings.ContainsFunc(s, escapedInJSON) {
		return b
	}
	var out strings.Builder
	for _, r := range s {
		if !escapedInJSON(r) {
			out.WriteRune(r)
			continue
		}
		if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
			fmt.Fprintf(&out, `\u%04x\u%04x`, r1, r2)
			continue
		}
		fmt.Fprintf(&out, `\u%04x`, r)
	}
	return []byte(out.String())
}

// escapedInJSON is a character that encoding/json writes raw and that is
// not graphic; the whitespace of the indentation is neither.
func escapedInJSON(r rune) bool {
	return r >= utf8.RuneSelf && notGraphic(r) || r == 0x7f
}

// printableValue is a JSON document's value with printable applied to
// every string and key, for YAML: its encoder refuses DEL and the C1
// controls and writes format characters raw. Newlines stay newlines (YAML
// writes a multi-line string as a block), and the C0 controls are left
// to the encoder, which escapes them.
func printableValue(v any) any {
	switch v := v.(type) {
	case string:
		return printableYAML(v)
	case []any:
		for i := range v {
			v[i] = printableValue(v[i])
		}
		return v
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[printableYAML(k)] = printableValue(e)
		}
		return out
	}
	return v
}

func printableYAML(s string) string {
	if !strings.ContainsFunc(s, escapedInJSON) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if escapedInJSON(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// jsonValue is v as encoding/json sees it: maps, slices, strings, numbers
// (kept exact), booleans and nil.
func jsonValue(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, err
	}
	return out, nil
}
