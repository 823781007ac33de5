// Package inject rewrites rendered manifests through injectors: external
// programs (istioctl kube-inject, linkerd inject, any script) and built-in
// versioned sidecar templates. Every injector implements Injector;
// a Pipeline runs them in order on one multi-document stream per release and
// checks each one's output before the next runs, so nothing unchecked reaches
// the temporary chart or the cluster.
package inject

import (
	"context"
	"fmt"

	"github.com/helm-inject/helm-inject/internal/redact"
	"github.com/helm-inject/helm-inject/manifest"
)

// Injector rewrites a multi-document YAML stream.
type Injector interface {
	// Name identifies the injector in messages and in the release record:
	// for a command, the spec as the user wrote it.
	Name() string
	// Inject returns the rewritten stream. It must keep every resource
	// (same apiVersion, kind, namespace and name); the Pipeline checks that.
	Inject(ctx context.Context, manifests []byte, env Env) ([]byte, error)
}

// DocumentInjector is an Injector that can work on parsed documents and
// keeps every resource's identity by construction (the built-in
// TemplateInjector). The Pipeline uses it to skip joining the stream,
// re-splitting and re-parsing the output, and checking identities.
type DocumentInjector interface {
	Injector
	InjectDocuments(ctx context.Context, docs []manifest.Document, env Env) ([]manifest.Document, error)
}

// Env is what an injector may know about the release it injects into.
type Env struct {
	Release   string
	Namespace string
	Chart     string
	// Dir is the working directory for injector commands; relative paths in
	// specs resolve against it. Empty means the current directory.
	Dir string
	// TempDir is a private (0700) folder for the manifest file handed to
	// commands that take FILE. The Pipeline creates and removes it.
	TempDir string
}

// Error is an injector failure, attributed to a release and an injector.
type Error struct {
	Release  string
	Injector string
	Err      error
}

func (e *Error) Error() string {
	return fmt.Sprintf("release %q: injector %q: %v", e.Release, redact.String(e.Injector), e.Err)
}

func (e *Error) Unwrap() error { return e.Err }
