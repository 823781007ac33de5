package cli

import (
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/spf13/cobra"

	"github.com/helm-inject/helm-inject/inject"
	"github.com/helm-inject/helm-inject/internal/confine"
	"github.com/helm-inject/helm-inject/manifest"
)

const postRenderLong = `Read rendered manifests on stdin, run them through the injectors and print
the result on stdout: Helm's post-renderer contract, so plain helm can use
helm-inject directly:

  helm upgrade --install myapp ./chart \
    --post-renderer helm-inject \
    --post-renderer-args post-render \
    --post-renderer-args=--injector="istioctl kube-inject f=FILE,..."

What this mode loses, on Helm 3: Helm post-renders only the main manifests,
so hooks and test pods are not injected, and nothing is recorded in the
release (no injector versions, no status, no list). Built-in injectors
always use the version their constraint resolves to now. "helm-inject apply"
has none of these limits: it injects hooks and tests too and records every
injector in the release, because it installs a temporary chart instead.`

func newPostRenderCommand(kernel confine.Kernel) *cobra.Command {
	var injectors injectFlags
	var injectDir string
	var confined bool
	cmd := &cobra.Command{
		Use:   "post-render [injector flags]",
		Short: "Inject manifests from stdin to stdout (a Helm post-renderer)",
		Long:  postRenderLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			declared, err := injectors.declared()
			if err != nil {
				return err
			}
			// Helm tells a post-renderer nothing of the release's history:
			// built-in injectors get the version their constraint picks.
			p, err := declared.Resolve(inject.Choice{Strategy: inject.ReconcileAlways})
			if err != nil {
				return err
			}
			if confined {
				// The manifests on stdin are the untrusted part: the
				// injectors that read them run confined.
				cleanup, err := confineRender(kernel, confine.Required, confine.Policy{
					Read: existing(injectors.libraryUsed(), injectDir),
					Exec: injectorPrograms(declared, injectDir),
				}, cmd.ErrOrStderr())
				if err != nil {
					return err
				}
				defer cleanup()
			}
			in, err := io.ReadAll(cmd.InOrStdin())
			if err != nil {
				return fmt.Errorf("reading manifests from stdin: %w", err)
			}
			var docs []manifest.Document
			for i, part := range manifest.Split(string(in)) {
				// A document that is no Kubernetes object passes through
				// as helm's render keeps it: the injectors never get it.
				d, err := manifest.ParseRendered(fmt.Sprintf("stdin document %d", i+1), part)
				if err != nil {
					return fmt.Errorf("stdin document %d: %w", i+1, err)
				}
				docs = append(docs, d.WithoutTree())
			}
			if !slices.ContainsFunc(docs, manifest.Document.IsObject) {
				// helm prints what it rendered, nothing included; the
				// line says it was not lost on the way.
				fmt.Fprintln(cmd.ErrOrStderr(), "helm-inject post-render: no Kubernetes object on stdin; nothing to inject")
			}
			out, _, err := p.Run(cmd.Context(), docs, inject.Env{
				// Helm tells a post-renderer nothing about the release.
				Release: os.Getenv("HELM_INJECT_RELEASE"), Namespace: os.Getenv("HELM_NAMESPACE"), Dir: injectDir,
			})
			if err != nil {
				return err
			}
			_, err = io.WriteString(cmd.OutOrStdout(), manifest.Join(out))
			return err
		},
	}
	injectors.add(cmd.Flags())
	cmd.Flags().StringVar(&injectDir, "injector-dir", "", "working directory of injector commands (default: the current directory)")
	cmd.Flags().BoolVar(&confined, "confine", false, postRenderConfineUsage)
	return cmd
}
