package inject

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/helm-inject/helm-inject/internal/redact"
	"github.com/helm-inject/helm-inject/manifest"
)

// DefaultTimeout bounds one injector run unless the user says otherwise.
const DefaultTimeout = 2 * time.Minute

// Pipeline runs injectors in order over a release's documents.
type Pipeline struct {
	Injectors []Injector
	// Timeout bounds each injector run; zero means DefaultTimeout.
	Timeout time.Duration
	// SkipHooks keeps hook documents away from the injectors.
	SkipHooks bool
	// SkipTests keeps `helm test` hooks away from the injectors.
	SkipTests bool
	// Slow, when set, is told when an injector starts and returns the
	// function to call when it ends: progress shows one that runs long.
	Slow func(what string) (done func())
	// IdentifyPrograms records, per external injector, the executable
	// that ran (Step.Program): only where a revision records it (apply,
	// upgrade, diff), so that template and Argo CD's generate do not hash
	// a 100 MB istioctl for nothing.
	IdentifyPrograms bool
	// Digests caches the digests of those executables; nil hashes them on
	// every run.
	Digests *DigestCache
}

// Step records one injector's run: a digest of the documents it returned,
// which identifies what an external injector added, and for an external
// injector the executable that ran.
type Step struct {
	Injector     Injector
	OutputDigest string
	Program      *Program
}

// Run gives every selected document to each injector in turn (one run per
// injector, one multi-document stream), checks what comes back, and returns
// all documents in their original order with the injected ones replaced,
// and one Step per injector.
func (p *Pipeline) Run(ctx context.Context, docs []manifest.Document, env Env) ([]manifest.Document, []Step, error) {
	if len(p.Injectors) == 0 {
		return docs, nil, nil
	}
	var idx []int
	var selected []manifest.Document
	for i, d := range docs {
		// A document of comments only has nothing to inject into, and an
		// injector might not give it back. One that is no Kubernetes
		// object (NotResource) is not handed to injectors either: it
		// stays as it is, where it is, for template to print and apply
		// to refuse.
		if d.Empty() || d.NotResource != "" || d.Hook != "" && (p.SkipHooks || (p.SkipTests && d.IsTestHook())) {
			continue
		}
		idx = append(idx, i)
		selected = append(selected, d)
	}
	if len(selected) == 0 {
		return docs, nil, nil
	}

	tmp, err := os.MkdirTemp("", "helm-inject-")
	if err != nil {
		return nil, nil, fmt.Errorf("release %q: creating a private temporary folder: %w", env.Release, err)
	}
	defer os.RemoveAll(tmp)
	env.TempDir = tmp

	timeout := p.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	steps := make([]Step, 0, len(p.Injectors))
	for _, inj := range p.Injectors {
		if selected, err = p.runOne(ctx, inj, selected, env, timeout); err != nil {
			return nil, nil, &Error{Release: env.Release, Injector: inj.Name(), Err: err}
		}
		step := Step{Injector: inj, OutputDigest: manifest.Digest(selected)}
		if pi, ok := inj.(programIdentifier); ok && p.IdentifyPrograms {
			if step.Program, err = pi.Program(ctx, env, p.Digests); err != nil {
				return nil, nil, &Error{Release: env.Release, Injector: inj.Name(), Err: err}
			}
		}
		steps = append(steps, step)
	}
	out := make([]manifest.Document, len(docs))
	copy(out, docs)
	for j, i := range idx {
		out[i] = selected[j]
		// An injector gives documents back without the white space Helm
		// kept after them, and Reconcile puts them back in input order:
		// each keeps its own.
		out[i].Trailer = docs[i].Trailer
	}
	return out, steps, nil
}

func (p *Pipeline) runOne(ctx context.Context, inj Injector, in []manifest.Document, env Env, timeout time.Duration) ([]manifest.Document, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if p.Slow != nil {
		defer p.Slow(fmt.Sprintf("injector %q (release %q)", redact.String(inj.Name()), env.Release))()
	}
	timedOut := func(err error) error {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("did not finish within %s (--injector-timeout): %w", timeout, err)
		}
		return err
	}
	if di, ok := inj.(DocumentInjector); ok {
		out, err := di.InjectDocuments(ctx, in, env)
		if err != nil {
			return nil, timedOut(err)
		}
		return out, nil
	}
	raw, err := inj.Inject(ctx, []byte(manifest.Join(in)), env)
	if err != nil {
		return nil, timedOut(err)
	}
	return Reconcile(in, string(raw), env.Namespace)
}

// Reconcile checks an injector's output against its input and carries each
// input document's Source over to the output document with the same
// identity. The output must hold exactly the input's resources: none
// dropped, added, renamed or moved, and no hook turned into a plain manifest
// or back. A resource without a namespace counts as being in namespace.
func Reconcile(in []manifest.Document, output, namespace string) ([]manifest.Document, error) {
	pending := make(map[manifest.ID][]int, len(in))
	for i, d := range in {
		k := d.ID.InNamespace(namespace)
		pending[k] = append(pending[k], i)
	}
	// Injectors pass most documents they do not inject into (Services,
	// ConfigMaps) through unchanged, and parsing is most of this check's
	// cost: those are not parsed again.
	known := manifest.NewKnown(in)
	parts := manifest.Split(output)
	result := make([]manifest.Document, len(in))
	var added []manifest.ID
	for n, part := range parts {
		d, err := known.Parse("", part)
		if err != nil {
			return nil, fmt.Errorf("output document %d of %d: %w\n%s", n+1, len(parts), err, excerpt(redact.SecretValues(part)))
		}
		if d.Empty() {
			continue // comments an injector wrote; nothing Helm would create
		}
		k := d.ID.InNamespace(namespace)
		q := pending[k]
		if len(q) == 0 {
			added = append(added, d.ID)
			continue
		}
		i := q[0]
		pending[k] = q[1:]
		if d.Hook != in[i].Hook {
			return nil, fmt.Errorf("changed the helm.sh/hook annotation of %s from %q to %q", d.ID, in[i].Hook, d.Hook)
		}
		d.Source = in[i].Source
		result[i] = d
	}
	var dropped []manifest.ID
	for i, d := range in {
		if result[i].Content == "" {
			dropped = append(dropped, d.ID)
		}
	}
	if len(added) > 0 || len(dropped) > 0 {
		return nil, fmt.Errorf("changed the set of resources (an injector may only modify them): %s", describeChanges(dropped, added, namespace))
	}
	return result, nil
}

// describeChanges names what an injector did to the set of resources,
// pairing a dropped and an added resource that differ only in namespace
// ("moved") or only in apiVersion/kind ("changed the kind") first. A
// resource without a namespace is in namespace.
func describeChanges(dropped, added []manifest.ID, namespace string) string {
	ns := func(id manifest.ID) string { return id.InNamespace(namespace).Namespace }
	var msg []string
	used := make([]bool, len(added))
	var unpaired []string
	for _, d := range dropped {
		paired := false
		for j, a := range added {
			if used[j] || a.Name != d.Name {
				continue
			}
			switch {
			case a.APIVersion == d.APIVersion && a.Kind == d.Kind:
				msg = append(msg, fmt.Sprintf("moved %s %s from namespace %q to %q", d.Kind, d.Name, ns(d), ns(a)))
			case ns(a) == ns(d):
				msg = append(msg, fmt.Sprintf("changed the kind of %s from %s %s to %s %s", d.Name, d.APIVersion, d.Kind, a.APIVersion, a.Kind))
			default:
				continue
			}
			used[j], paired = true, true
			break
		}
		if !paired {
			unpaired = append(unpaired, d.String())
		}
	}
	if len(unpaired) > 0 {
		msg = append(msg, "dropped or renamed "+strings.Join(unpaired, ", "))
	}
	var extra []string
	for j, a := range added {
		if !used[j] {
			extra = append(extra, a.String())
		}
	}
	if len(extra) > 0 {
		msg = append(msg, "added "+strings.Join(extra, ", "))
	}
	return strings.Join(msg, "; ")
}

// excerpt returns the first lines of a document for an error message;
// callers mask a Secret's values first.
func excerpt(s string) string {
	lines := strings.SplitN(s, "\n", 6)
	if len(lines) > 5 {
		lines = append(lines[:5], "...")
	}
	for i, l := range lines {
		if len(l) > 200 {
			l = l[:200] + "..."
		}
		lines[i] = "  | " + l
	}
	return strings.Join(lines, "\n")
}
