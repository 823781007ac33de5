package inject

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/mattn/go-shellwords"

	"github.com/helm-inject/helm-inject/internal/redact"
)

// filePlaceholder is replaced by the path of the file holding the manifests.
const filePlaceholder = "FILE"

// placeholderRE matches FILE as a word of its own inside an argument
// ("FILE", "--in=FILE", "x:FILE"), but not inside a longer word ("PROFILE").
var placeholderRE = regexp.MustCompile(`(^|[^A-Za-z0-9_])FILE([^A-Za-z0-9_]|$)`)

// SpecError reports a malformed injector definition.
type SpecError struct {
	Spec string
	Msg  string
}

func (e *SpecError) Error() string {
	return fmt.Sprintf("injector %q: %s", redact.String(e.Spec), e.Msg)
}

// ParseSpec parses the helm-x injector form into a Command. Both spellings
// are accepted:
//
//	istioctl kube-inject f=FILE,injectConfigFile=inject-config.yaml
//	istioctl kube-inject,f=FILE,injectConfigFile=inject-config.yaml
//
// The spec is split into words with shell quoting rules (no shell runs, and
// nothing is expanded), then every word is split at commas. The first element
// is the program. Each later element "k=v" becomes "-k v" for a one-letter
// key and "--k v" otherwise; an element starting with "-", or without "=", is
// passed as it is.
func ParseSpec(spec string) (*Command, error) {
	words, err := splitWords(spec)
	if err != nil {
		return nil, err
	}
	var argv []string
	for _, w := range words {
		for _, part := range strings.Split(w, ",") {
			if part == "" {
				return nil, &SpecError{spec, "empty element between commas"}
			}
			if len(argv) == 0 && strings.Contains(part, "=") && !strings.Contains(part, "/") {
				return nil, &SpecError{spec, fmt.Sprintf("no command: the spec starts with the option %q; write \"COMMAND %s\"", part, part)}
			}
			if len(argv) == 0 || strings.HasPrefix(part, "-") || !strings.Contains(part, "=") {
				argv = append(argv, part)
				continue
			}
			k, v, _ := strings.Cut(part, "=")
			switch {
			case k == "":
				return nil, &SpecError{spec, fmt.Sprintf("%q has no key before '='", part)}
			case strings.Contains(v, "="):
				return nil, &SpecError{spec, fmt.Sprintf("%q has more than one '='; pass such a value with --inject 'COMMAND --%s=VALUE' instead", part, k)}
			case len(k) == 1:
				argv = append(argv, "-"+k, v)
			default:
				argv = append(argv, "--"+k, v)
			}
		}
	}
	return newCommand(spec, argv)
}

// ParseCommand parses a raw command line ("my-injector --label 'a b' FILE")
// into a Command, with shell quoting rules and without a shell.
func ParseCommand(line string) (*Command, error) {
	argv, err := splitWords(line)
	if err != nil {
		return nil, err
	}
	return newCommand(line, argv)
}

func splitWords(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, &SpecError{s, "empty injector command"}
	}
	p := shellwords.NewParser()
	p.ParseEnv, p.ParseBacktick = false, false
	words, err := p.Parse(s)
	if err != nil {
		return nil, &SpecError{s, "unbalanced quotes or a trailing backslash"}
	}
	if p.Position >= 0 {
		return nil, &SpecError{s, fmt.Sprintf("shell operator %q: injectors run without a shell; wrap a pipeline in a script", s[p.Position:p.Position+1])}
	}
	if len(words) == 0 {
		return nil, &SpecError{s, "no command"}
	}
	return words, nil
}

// CommandFromArgv is the Command that runs argv as it is: no line is
// split, so an argument holds whatever it holds (a value an Argo CD
// Application gave an operator's injector). Its Spec is argv quoted as
// ParseCommand would read it back.
func CommandFromArgv(argv []string) (*Command, error) {
	return newCommand(QuoteCommand(argv), slices.Clone(argv))
}

func newCommand(spec string, argv []string) (*Command, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, &SpecError{spec, "no command"}
	}
	if placeholderRE.MatchString(argv[0]) {
		return nil, &SpecError{spec, "the command itself cannot be FILE"}
	}
	c := &Command{Spec: spec, Argv: argv}
	for _, a := range argv[1:] {
		if placeholderRE.MatchString(a) {
			c.usesFile = true
		}
	}
	return c, nil
}

// safeWord is a word ParseCommand reads back as it is, unquoted.
var safeWord = regexp.MustCompile(`^[A-Za-z0-9_./:=@%+,-]+$`)

// QuoteCommand writes argv as a command line that ParseCommand splits back
// into exactly argv: words with anything but plain characters are single
// quoted, a quote in them written as '"'"'.
func QuoteCommand(argv []string) string {
	words := make([]string, len(argv))
	for i, w := range argv {
		if safeWord.MatchString(w) {
			words[i] = w
			continue
		}
		words[i] = "'" + strings.ReplaceAll(w, "'", `'"'"'`) + "'"
	}
	return strings.Join(words, " ")
}
