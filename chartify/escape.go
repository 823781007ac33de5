package chartify

import "strings"

// Escape returns template text that Helm's engine renders back to s, byte
// for byte: every "{{" and "}}" becomes an action that prints it. Rendered
// manifests may legitimately contain template delimiters (a ConfigMap that
// carries a Go template, for example), and the temporary chart must not
// evaluate them a second time.
func Escape(s string) string {
	if !strings.Contains(s, "{{") && !strings.Contains(s, "}}") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 32)
	for i := 0; i < len(s); i++ {
		if i+1 < len(s) && s[i] == s[i+1] && (s[i] == '{' || s[i] == '}') {
			b.WriteString(`{{"`)
			b.WriteString(s[i : i+2])
			b.WriteString(`"}}`)
			i++
			continue
		}
		// A lone "{" just before an escaped "}}" would join the action's
		// opening delimiter into "{{{"; print it through an action too.
		if s[i] == '{' && strings.HasPrefix(s[i+1:], "}}") {
			b.WriteString(`{{"{"}}`)
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
