package release

import (
	"bytes"
	"fmt"
	"slices"

	"helm.sh/helm/v3/pkg/postrender"

	"github.com/helm-inject/helm-inject/chartify"
	"github.com/helm-inject/helm-inject/manifest"
)

// postRender runs the user's --post-renderer after injection, as Helm runs
// it on an install or upgrade: on the manifests of the temporary chart
// (hooks are not given to it), each led by "---" and its "# Source:"
// comment. The output is what the release will store as its manifest, so r
// becomes the post-rendered manifests followed by the hooks, for diff,
// template and the unchanged check. The returned post-renderer hands the
// same output to the SDK's install or upgrade without running the program
// a second time.
func postRender(r *chartify.Rendered, pr postrender.PostRenderer) (postrender.PostRenderer, error) {
	in := manifestStream(r.Documents)
	out, err := pr.Run(bytes.NewBufferString(in))
	if err != nil {
		return nil, fmt.Errorf("post-renderer: %w", err)
	}
	docs, err := manifestDocuments(out.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("post-renderer output: %w", err)
	}
	hooks := slices.DeleteFunc(slices.Clone(r.Documents), func(d manifest.Document) bool { return d.Hook == "" })
	r.Documents = append(docs, hooks...)
	return replay{in: in, out: out.String(), real: pr}, nil
}

// manifestStream is the manifest Helm's render hands a post-renderer.
func manifestStream(docs []manifest.Document) string {
	var b bytes.Buffer
	for _, d := range docs {
		if d.Hook == "" {
			_ = writeSourced(&b, d) // a bytes.Buffer does not fail
		}
	}
	return b.String()
}

// replay answers the SDK's post-render call with the output already
// computed for the plan when the input is the one it was computed from, and
// runs the real post-renderer otherwise.
type replay struct {
	in, out string
	real    postrender.PostRenderer
}

func (r replay) Run(in *bytes.Buffer) (*bytes.Buffer, error) {
	if in.String() == r.in {
		return bytes.NewBufferString(r.out), nil
	}
	return r.real.Run(in)
}
