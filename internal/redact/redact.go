// Package redact hides credentials in text that helm-inject stores in a
// release or prints: the user:password part of URLs (with or without a
// scheme), secret-looking query parameters, Authorization and Bearer
// values, the values of secret-looking options in injector commands, and
// the data of Secrets. Every place that prints or stores a spec, a URL or
// an injector's stderr goes through this package, so a rule added here
// holds everywhere. The text is only ever shown or recorded this way; the
// command that runs and the chart that is fetched keep the real values.
package redact

import (
	"regexp"
	"strings"
)

// Mask replaces every hidden value.
const Mask = "xxxxx"

// secretWord matches option and parameter names that carry credentials.
var secretWord = regexp.MustCompile(`(?i:token|secret|passw|pwd|credential|auth|api[-_]?key|access[-_]?key|private[-_]?key|signature|sig)|(?i:(?:^|[-_.])key$)`)

// SecretName reports whether an option, parameter or query parameter
// named name carries a credential ("token", "api-key", "key", ...).
func SecretName(name string) bool {
	return secretWord.MatchString(strings.TrimLeft(name, "-"))
}

var (
	// scheme://userinfo@ : the userinfo runs to the last '@' before the
	// host's end ('/', '?', '#'), since a password may hold '@'; an OCI
	// digest ("oci://host/chart@sha256:...") has a '/' first and is not
	// taken for one.
	userinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)[^/?#\s'"]*@`)
	// user:password@host without a scheme (a --repo value, a Git remote).
	bareUserinfo = regexp.MustCompile(`(^|[\s'"=,(\[])[^\s/?#@:'"=,(\[]+:[^\s/?#'"]*@([A-Za-z0-9.-]+)`)
	// ?token=... or &key=...: every query parameter, its name checked by
	// SecretName.
	queryParam = regexp.MustCompile(`([?&])([^=&\s#'"]+)=([^&\s#'"]*)`)
	// "Authorization: Bearer abc", "authorization=Basic abc", "Bearer abc".
	authorization = regexp.MustCompile(`(?i)(authorization["']?\s*[:=]\s*["']?)((?:bearer|basic|token|digest|negotiate)\s+)?[^\s"',]+`)
	bearer        = regexp.MustCompile(`(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]+`)
)

// URLs returns s with the credentials of every URL in it replaced by
// Mask (user:password@, with or without a scheme, and secret-named query
// parameters) and the values of Authorization and Bearer headers. It
// suits any text (error messages); String also knows injector command
// lines.
func URLs(s string) string {
	s = userinfo.ReplaceAllString(s, "${1}"+Mask+"@")
	s = bareUserinfo.ReplaceAllString(s, "${1}"+Mask+"@${2}")
	s = queryParam.ReplaceAllStringFunc(s, func(m string) string {
		sub := queryParam.FindStringSubmatch(m)
		if !SecretName(sub[2]) {
			return m
		}
		return sub[1] + sub[2] + "=" + Mask
	})
	s = authorization.ReplaceAllString(s, "${1}${2}"+Mask)
	return bearer.ReplaceAllString(s, "${1}"+Mask)
}

// String returns a chart reference or an injector spec with credentials
// replaced by Mask: those of URLs, and the values of secret-named options
// ("--token VALUE", "--token=VALUE") and elements ("token=VALUE" in the
// helm-x form). A secret-named option followed by another option has no
// value ("--password-stdin --token X": X is --token's). Only for such
// text: in prose it would also hide the word after "--hide-secret".
func String(s string) string {
	s = URLs(s)
	words := splitWords(s)
	var b strings.Builder
	maskNext := false
	for _, w := range words {
		if w.sep {
			b.WriteString(w.text)
			continue
		}
		text := w.text
		switch {
		case maskNext && !isFlag(text):
			text = Mask
			maskNext = false
		case isFlag(text):
			maskNext = false
			name, _, hasValue := strings.Cut(text, "=")
			if SecretName(name) {
				if hasValue {
					text = name + "=" + Mask
				} else {
					maskNext = true
				}
			}
		default:
			maskNext = false
			if name, _, ok := strings.Cut(text, "="); ok && elementName.MatchString(name) && SecretName(name) {
				text = name + "=" + Mask
			}
		}
		b.WriteString(text)
	}
	return b.String()
}

// elementName is the key of a helm-x element ("token=VALUE").
var elementName = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

func isFlag(v string) bool { return len(v) > 1 && v[0] == '-' }

// word is a word of a command line, or the separator between two.
type word struct {
	text string
	sep  bool
}

// splitWords splits s at spaces and commas (the helm-x form's separator)
// outside quotes, keeping the separators, so that joining the words gives
// s back.
func splitWords(s string) []word {
	var words []word
	var cur strings.Builder
	var quote rune
	inSep := false
	flush := func(sep bool) {
		if cur.Len() > 0 {
			words = append(words, word{text: cur.String(), sep: sep})
			cur.Reset()
		}
	}
	for _, r := range s {
		isSep := quote == 0 && (r == ' ' || r == '\t' || r == '\n' || r == ',')
		if isSep != inSep {
			flush(inSep)
			inSep = isSep
		}
		if !isSep {
			switch {
			case quote == 0 && (r == '\'' || r == '"'):
				quote = r
			case r == quote:
				quote = 0
			}
		}
		cur.WriteRune(r)
	}
	flush(inSep)
	return words
}

// Strings applies String to each element.
func Strings(in []string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = String(s)
	}
	return out
}

// Known replaces each of values (the data of the Secrets an injector was
// given) wherever it occurs in s: text a program printed, which may quote
// its input in any form. Values shorter than four bytes are left, as they
// would mask ordinary words.
func Known(s string, values []string) string {
	for _, v := range values {
		if len(v) >= 4 {
			s = strings.ReplaceAll(s, v, Mask)
		}
	}
	return s
}

var (
	// kind: Secret in block, flow or JSON style.
	secretKind = regexp.MustCompile(`(?m)["']?\bkind["']?\s*:\s*["']?Secret\b`)
	// a "key: value" line, possibly a list item.
	keyLine    = regexp.MustCompile(`^(\s*(?:- )?)(["']?[A-Za-z0-9_.\-/]+["']?\s*:)(.*)$`)
	indentOf   = regexp.MustCompile(`^\s*(?:- )?`)
	stringData = regexp.MustCompile(`(?m)^\s*["']?stringData["']?\s*:`)
)

// SecretLike reports whether a document, even one that is not valid YAML,
// looks like a Kubernetes Secret (kind: Secret, or stringData).
func SecretLike(doc string) bool {
	return secretKind.MatchString(doc) || stringData.MatchString(doc)
}

// SecretValues masks every value of a Secret-like document but its
// identity (apiVersion, kind and type at the top, metadata's name and
// namespace), keeping the keys, so an error excerpt still shows where a
// document went wrong without its data. Values are found by their place
// in the document, not by their key: a key named "name" under data is
// data. The document need not be valid YAML (it is often an injector's
// broken output). Other documents are returned unchanged.
func SecretValues(doc string) string {
	if !SecretLike(doc) {
		return doc
	}
	type level struct {
		indent int
		key    string
	}
	var path []level
	block := -1 // the indent of a key whose value is a block scalar
	lines := strings.Split(doc, "\n")
	for i, l := range lines {
		trimmed := strings.TrimSpace(l)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		indent := len(indentOf.FindString(l))
		if block >= 0 && indent > block {
			lines[i] = indentOf.FindString(l) + Mask
			continue
		}
		block = -1
		m := keyLine.FindStringSubmatch(l)
		if m == nil {
			lines[i] = indentOf.FindString(l) + Mask
			continue
		}
		indent = len(m[1])
		for len(path) > 0 && path[len(path)-1].indent >= indent {
			path = path[:len(path)-1]
		}
		key := strings.Trim(strings.TrimSuffix(strings.TrimSpace(m[2]), ":"), `"' `)
		value := strings.TrimSpace(m[3])
		var where []string
		for _, p := range path {
			where = append(where, p.key)
		}
		where = append(where, key)
		path = append(path, level{indent, key})
		switch {
		case value == "":
			// a mapping or list that opens
		case strings.HasPrefix(value, "|") || strings.HasPrefix(value, ">"):
			block = indent
			lines[i] = m[1] + m[2] + " " + Mask
		case identity(where):
		default:
			lines[i] = m[1] + m[2] + " " + Mask
		}
	}
	return strings.Join(lines, "\n")
}

// identity reports whether a Secret's field at path names it rather than
// holding its data.
func identity(path []string) bool {
	switch strings.Join(path, ".") {
	case "apiVersion", "kind", "type", "metadata.name", "metadata.namespace":
		return true
	}
	return false
}
