package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/helm-inject/helm-inject/internal/confine"
)

// confineRender confines this process, and the injectors it will run, to
// p and a private folder of its own, as mode asks (see package confine),
// before anything untrusted is read. The private folder becomes TMPDIR,
// for helm-inject's own temporary files and the injectors', since nothing
// else may be written; cleanup removes it. A warning for what the kernel
// does not enforce goes to stderr.
func confineRender(k confine.Kernel, mode confine.Mode, p confine.Policy, stderr io.Writer) (cleanup func(), err error) {
	if mode == confine.Off {
		return func() {}, nil
	}
	parent, err := confine.PrivateParent()
	if err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp(parent, "render-")
	if err != nil {
		return nil, fmt.Errorf("creating the private folder of a confined render: %w", err)
	}
	removeWork := func() { os.RemoveAll(work) }
	// The render writes only in its own folder; removing that folder at
	// the end needs the right to remove (empty) folders in its parent.
	p.Write = append(p.Write, work)
	p.RemoveIn = append(p.RemoveIn, parent)
	rep, err := k.Confine(mode, p)
	if err != nil {
		removeWork()
		return nil, err
	}
	if w := rep.Warning(); w != "" {
		fmt.Fprintln(stderr, w)
	}
	// The process's environment is where both os.MkdirTemp and the
	// injectors' own programs look for a temporary folder; cleanup puts
	// back what it was.
	was, had := os.LookupEnv("TMPDIR")
	restore := func() {
		if had {
			os.Setenv("TMPDIR", was)
		} else {
			os.Unsetenv("TMPDIR")
		}
	}
	if err := os.Setenv("TMPDIR", work); err != nil {
		removeWork()
		return nil, err
	}
	return func() { restore(); removeWork() }, nil
}
