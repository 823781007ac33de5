package release

import (
	"bytes"
	"strings"
	"testing"

	"github.com/helm-inject/helm-inject/inject"
)

// renamer is a post-renderer that adds a suffix to every name it is given
// and records what it was given.
type renamer struct{ seen *[]string }

func (r renamer) Run(in *bytes.Buffer) (*bytes.Buffer, error) {
	*r.seen = append(*r.seen, in.String())
	return bytes.NewBufferString(strings.ReplaceAll(in.String(), "\n  name: ", "\n  name: pr-")), nil
}

// TestPostRendererOnTheRelease: the post-renderer runs once, on the
// manifests (each led by its "# Source:"), not on hooks; the release
// stores its output and the hooks as they were; the SDK's own call is
// answered from the plan, so the program does not run twice.
func TestPostRendererOnTheRelease(t *testing.T) {
	cfg, src := apiRelease(t)
	var seen []string
	a := NewApply(cfg)
	a.Inputs = Inputs{Namespace: "shop", Injectors: &inject.Declared{}}
	a.Render.PostRenderer = renamer{&seen}
	res, err := a.Run(t.Context(), "demo", src, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 {
		t.Fatalf("the post-renderer ran %d times, want once", len(seen))
	}
	if !strings.HasPrefix(seen[0], "---\n# Source: api/templates/") || strings.Contains(seen[0], "helm.sh/hook") {
		t.Errorf("the post-renderer was given:\n%s", seen[0])
	}
	if !strings.Contains(res.Release.Manifest, "name: pr-demo-config") {
		t.Errorf("the stored manifest is not the post-renderer's:\n%s", res.Release.Manifest)
	}
	if len(res.Release.Hooks) == 0 {
		t.Fatal("the api chart's test hook is gone")
	}
	// template prints what apply stores: the post-rendered manifests,
	// once, and the hooks.
	var printed bytes.Buffer
	tr, err := (&Template{Inputs: a.Inputs}).Run(t.Context(), "demo", src, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteManifests(&printed, tr, PrintOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(printed.String(), "name: pr-demo-config") || strings.Contains(printed.String(), "name: demo-config") {
		t.Errorf("template printed:\n%s", printed.String())
	}
	for _, h := range res.Release.Hooks {
		if strings.Contains(h.Manifest, "name: pr-") {
			t.Errorf("hook %s was post-rendered:\n%s", h.Name, h.Manifest)
		}
	}
}
