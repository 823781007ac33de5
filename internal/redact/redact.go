// Package redact hides credentials in text that helm-inject stores in a
// release or prints: the user:password part of URLs, secret-looking query
// parameters, and the values of secret-looking options in injector
// commands. The text is only ever shown or recorded this way; the command
// that runs and the chart that is fetched keep the real values.
package redact

import (
	"regexp"
	"strings"
)

// Mask replaces every hidden value.
const Mask = "xxxxx"

// secretWord matches option and parameter names that carry credentials.
const secretWord = `(?i:token|secret|passw|pwd|credential|auth|api[-_]?key|access[-_]?key|private[-_]?key|signature|sig)`

var (
	// scheme://userinfo@ : userinfo cannot hold '/', so an OCI digest
	// ("oci://host/chart@sha256:...") is not taken for one.
	userinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)[^/@\s'"]+@`)
	// ?token=... or &X-Amz-Signature=...
	queryParam = regexp.MustCompile(`([?&][^=&\s#'"]*` + secretWord + `[^=&\s#'"]*=)[^&\s#'"]*`)
	// --token VALUE, --token=VALUE, -api-key 'VALUE'
	option = regexp.MustCompile(`(^|[\s,])(--?[A-Za-z0-9_.-]*` + secretWord + `[A-Za-z0-9_.-]*)(=|\s+)('[^']*'|"[^"]*"|[^\s,'"]+)`)
	// token=VALUE as an element of the helm-x form ("cmd f=FILE,token=VALUE")
	element = regexp.MustCompile(`(^|[\s,])([A-Za-z0-9_.-]*` + secretWord + `[A-Za-z0-9_.-]*=)('[^']*'|"[^"]*"|[^\s,'"]+)`)
)

// URLs returns s with the credentials of every URL in it replaced by
// Mask: user:password@ and secret-named query parameters. It suits any
// text (error messages); String also knows injector command lines.
func URLs(s string) string {
	s = userinfo.ReplaceAllString(s, "${1}"+Mask+"@")
	return queryParam.ReplaceAllString(s, "${1}"+Mask)
}

// String returns a chart reference or an injector spec with credentials
// replaced by Mask: those of URLs, and the values of secret-named options
// ("--token VALUE") and elements ("token=VALUE"). Only for such text: in
// prose it would also hide the word after "--hide-secret".
func String(s string) string {
	s = URLs(s)
	s = option.ReplaceAllStringFunc(s, func(m string) string {
		sub := option.FindStringSubmatch(m)
		if sub[4] == "" || isFlag(sub[4]) {
			return m // a flag without a value ("--auth-enabled --x")
		}
		return sub[1] + sub[2] + sub[3] + Mask
	})
	s = element.ReplaceAllString(s, "${1}${2}"+Mask)
	return s
}

func isFlag(v string) bool { return len(v) > 1 && v[0] == '-' }

// Strings applies String to each element.
func Strings(in []string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = String(s)
	}
	return out
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

// SecretValues masks every value of a Secret-like document, keeping its
// keys and the values of apiVersion, kind, type, name and namespace, so an
// error excerpt still shows where a document went wrong without its data.
// Other documents are returned unchanged.
func SecretValues(doc string) string {
	if !SecretLike(doc) {
		return doc
	}
	lines := strings.Split(doc, "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) == "" || strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		m := keyLine.FindStringSubmatch(l)
		switch {
		case m == nil:
			lines[i] = indentOf.FindString(l) + Mask
		case strings.TrimSpace(m[3]) == "" || keptKey(m[2]):
			// a mapping that opens, or an identity field
		default:
			lines[i] = m[1] + m[2] + " " + Mask
		}
	}
	return strings.Join(lines, "\n")
}

func keptKey(k string) bool {
	switch strings.Trim(strings.TrimSuffix(strings.TrimSpace(k), ":"), `"' `) {
	case "apiVersion", "kind", "type", "name", "namespace":
		return true
	}
	return false
}
