package cli

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"helm.sh/helm/v4/pkg/strvals"

	"github.com/helm-inject/helm-inject/inject"
	"github.com/helm-inject/helm-inject/internal/confine"
)

// confineRender confines this process, and the injectors it will run, to
// p and a private folder of its own, as mode asks (see package confine),
// before anything untrusted is read. The private folder becomes TMPDIR,
// for helm-inject's own temporary files and the injectors', since nothing
// else may be written; cleanup removes it. A warning for what the kernel
// does not enforce goes to stderr.
func confineRender(k confine.Kernel, mode confine.Mode, p confine.Policy, stderr io.Writer) (cleanup func(), err error) {
	// Every render has its private folder, confined or not: it is named
	// for the process, so a later render removes it if this one is
	// killed before its cleanup runs.
	parent, err := confine.PrivateParent()
	if err != nil {
		return nil, err
	}
	work, err := confine.NewRenderFolder(parent)
	if err != nil {
		return nil, err
	}
	removeWork := func() { os.RemoveAll(work) }
	if mode != confine.Off {
		// The render writes only in its own folder; removing that folder
		// at the end needs the right to remove (empty) folders in its
		// parent.
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

// templateConfineUsage and postRenderConfineUsage are --confine's help.
const (
	templateConfineUsage   = "render confined with Linux Landlock and a seccomp socket filter, for untrusted charts: read only the chart (a local folder or archive), the values and --set-file files, the injector library, --injector-pins and --injector-dir; run only the injectors' programs; write only stdout, --output-dir and a private temporary folder; no network (flags that need it are refused). Fails, rendering nothing, where files cannot be confined (Linux 5.13) or no seccomp socket filter can be installed"
	postRenderConfineUsage = "run the injectors confined with Linux Landlock and a seccomp socket filter: they read only the manifests, the injector library and --injector-dir, run only their programs, write only stdout and a private temporary folder, and make no socket. Fails where files cannot be confined (Linux 5.13) or no seccomp socket filter can be installed"
)

// injectorPrograms are the programs d's external injectors run, as found
// now (on PATH, or relative to dir, the injectors' working folder); one
// not found is left out, and fails as it would unconfined.
func injectorPrograms(d *inject.Declared, dir string) []string {
	var out []string
	for _, s := range d.Specs {
		c, ok := s.(*inject.Command)
		if !ok {
			continue
		}
		for _, argv := range [][]string{c.Argv, c.VersionArgv} {
			if len(argv) == 0 {
				continue
			}
			prog := argv[0]
			if strings.Contains(prog, "/") && !filepath.IsAbs(prog) && dir != "" {
				prog = filepath.Join(dir, prog)
			}
			path, err := exec.LookPath(prog)
			if err != nil {
				continue
			}
			if path, err = filepath.Abs(path); err == nil {
				out = append(out, path)
			}
		}
	}
	return out
}

// existing is the paths that exist, made absolute: a missing one is left
// out of a policy, so that reading it fails with its usual error.
func existing(paths ...string) []string {
	var out []string
	for _, p := range paths {
		if p == "" || p == "-" {
			continue
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			continue
		}
		if _, err := os.Stat(abs); err == nil {
			out = append(out, abs)
		}
	}
	return out
}

// setFilePaths are the files --set-file entries name, as helm's parser
// reads them (key=path pairs, comma separated).
func setFilePaths(entries []string) []string {
	var out []string
	for _, e := range entries {
		_ = strvals.ParseIntoFile(e, map[string]any{}, func(rs []rune) (any, error) {
			out = append(out, string(rs))
			return "", nil
		})
	}
	return out
}
