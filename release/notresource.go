package release

import (
	"fmt"
	"strings"

	"github.com/helm-inject/helm-inject/manifest"
)

// CheckObjects refuses a release whose documents hold one that is valid
// YAML but no object Helm could create (manifest.Document.NotResource: no
// apiVersion, no kind, or no metadata.name), in the words helm's install
// and upgrade refuse it with before they write anything, naming the
// release and the document's "# Source:". `helm template` prints such a
// document, and so does template; apply and diff (makePlan) and Argo CD's
// generate call this before anything is written. upgrade picks helm
// upgrade's words over install's; namespace is the release's, where a
// document that names none would be created.
//
// Helm's install refuses a hook of this kind only when it runs it, after
// the release record is written (a failed revision); this refuses it
// before, with the words of a plain manifest.
func CheckObjects(name, namespace string, docs []manifest.Document, upgrade bool) error {
	var bad []manifest.Document
	for _, d := range docs {
		if d.NotResource != "" {
			bad = append(bad, d)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	d := bad[0]
	var msg string
	if d.ID.APIVersion != "" && d.ID.Kind != "" {
		// Helm builds it, then cannot look it up by its empty name.
		verb := "install"
		if upgrade {
			verb = "update"
		}
		msg = fmt.Sprintf("unable to continue with %s: could not get information about the resource %s %q in namespace %q: %s",
			verb, d.ID.Kind, d.ID.Name, d.ID.InNamespace(namespace).Namespace, d.NotResource)
	} else {
		from := "release manifest"
		if upgrade {
			from = "new release manifest"
		}
		msg = fmt.Sprintf("unable to build kubernetes objects from %s: %s", from, d.NotResource)
	}
	if more := bad[1:]; len(more) > 0 {
		const shown = 5
		var names []string
		for i, m := range more {
			if i == shown {
				names = append(names, fmt.Sprintf("and %d more", len(more)-shown))
				break
			}
			names = append(names, m.Source)
		}
		what := "document is"
		if len(more) > 1 {
			what = "documents are"
		}
		msg += fmt.Sprintf(" (%d more %s no Kubernetes object: %s)", len(more), what, strings.Join(names, ", "))
	}
	return fmt.Errorf("release %q: %s: %s", name, d.Source, msg)
}
