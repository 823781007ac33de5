package release

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/cli"
	"helm.sh/helm/v4/pkg/postrenderer"

	"github.com/helm-inject/helm-inject/inject"
	"github.com/helm-inject/helm-inject/manifest"
)

// PostRenderer is Helm's post-renderer contract (helm 4's
// postrenderer.PostRenderer): the rendered manifests in, the manifests to
// install out.
type PostRenderer = postrenderer.PostRenderer

// NewPostRenderer resolves --post-renderer NAME as helm 4 does for its
// plugins, and as helm 3 did for executables: a postrender/v1 plugin of
// that name in settings' plugin folders when there is one, otherwise an
// executable (a path, or a name looked up on PATH).
func NewPostRenderer(ctx context.Context, settings *cli.EnvSettings, name string, args ...string) (PostRenderer, error) {
	if !strings.ContainsRune(name, filepath.Separator) && settings != nil && settings.PluginsDirectory != "" {
		if pr, err := postrenderer.NewPostRendererPlugin(settings, name, args...); err == nil {
			return pr, nil
		}
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return nil, fmt.Errorf("no postrenderer/v1 plugin named %q and no executable there: %w", name, err)
	}
	if path, err = filepath.Abs(path); err != nil {
		return nil, err
	}
	return execPostRenderer{ctx: ctx, path: path, args: args}, nil
}

// execPostRenderer runs an executable with the manifests on its standard
// input, without a shell; an interrupt (ctx) stops it. Its stderr, quoted
// when it fails, is masked as an injector's is (inject.MaskOutput): a
// post-renderer may echo its input, Secrets included.
type execPostRenderer struct {
	ctx  context.Context
	path string
	args []string
}

func (p execPostRenderer) Run(in *bytes.Buffer) (*bytes.Buffer, error) {
	manifests := bytes.Clone(in.Bytes())
	cmd := exec.CommandContext(p.ctx, p.path, p.args...)
	var out, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = in, &out, &stderr
	if err := cmd.Run(); err != nil {
		if ctxErr := p.ctx.Err(); ctxErr != nil {
			// Stopped by Ctrl-C or SIGTERM: say so, not "signal: killed".
			return nil, fmt.Errorf("%s: interrupted: %w", p.path, ctxErr)
		}
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			return nil, fmt.Errorf("%s: %w", p.path, err)
		}
		return nil, fmt.Errorf("%s: %w: %s", p.path, err, inject.MaskOutput(msg, manifests))
	}
	if len(bytes.TrimSpace(out.Bytes())) == 0 {
		return nil, fmt.Errorf("%s produced no output", p.path)
	}
	return &out, nil
}

// postRender runs the user's --post-renderer after injection while
// planning, as Helm runs it on an install or upgrade: on the manifests
// (hooks are not given to it, as in helm 3 and helm 4's "nohooks"
// strategy), each led by "---" and its "# Source:" comment. Its output
// replaces the manifests, so the temporary chart holds exactly what the
// release will store, and diff, template and the unchanged check see it;
// the SDK is given no post-renderer (helm 4's would merge and re-serialize
// the stream again).
//
// A document whose "# Source:" is not a file of the chart (a post-renderer
// such as kustomize drops comments, or adds resources) goes to
// templates/generated-by-postrender.yaml, as helm 4 names such files.
func postRender(chartName string, docs []manifest.Document, pr PostRenderer) ([]manifest.Document, error) {
	out, err := pr.Run(bytes.NewBufferString(manifestStream(docs)))
	if err != nil {
		return nil, fmt.Errorf("post-renderer: %w", err)
	}
	if out == nil {
		return nil, errors.New("post-renderer: no output")
	}
	rendered, err := manifestDocuments(out.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("post-renderer output: %w", err)
	}
	for i, d := range rendered {
		if !strings.HasPrefix(d.Source, chartName+"/") {
			rendered[i].Source = chartName + "/templates/generated-by-postrender.yaml"
		}
	}
	hooks := slices.DeleteFunc(slices.Clone(docs), func(d manifest.Document) bool { return d.Hook == "" })
	return append(rendered, hooks...), nil
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
