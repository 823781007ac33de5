package argocd

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/helm-inject/helm-inject/inject"
)

// Provision fills dest, the volume the plugin's sidecar runs from, when
// the repo-server's pod starts (the init container of deploy/argocd): the
// running helm-inject executable (self) as dest/bin/helm-inject, every
// program in toolsDir (istioctl, linkerd) in dest/bin, and the injector
// library as dest/injectors. The library is checked first: a version not
// locked, a locked version changed, or a locked version removed (an
// application pinned to it could no longer render) stops the pod from
// starting, rather than failing every application that uses it. Without
// a library, dest/injectors is an empty one.
func Provision(dest, self, library, toolsDir string) error {
	bin := filepath.Join(dest, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return err
	}
	if err := copyFile(self, filepath.Join(bin, "helm-inject"), 0o755); err != nil {
		return err
	}
	if toolsDir != "" {
		entries, err := os.ReadDir(toolsDir)
		if err != nil {
			return fmt.Errorf("tools: %w", err)
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") {
				// A ConfigMap volume's ..data and timestamped folders.
				continue
			}
			if err := copyFile(filepath.Join(toolsDir, e.Name()), filepath.Join(bin, e.Name()), 0o755); err != nil {
				return fmt.Errorf("tools: %w", err)
			}
		}
	}
	injectors := filepath.Join(dest, "injectors")
	if err := os.MkdirAll(injectors, 0o755); err != nil {
		return err
	}
	if library == "" {
		return nil
	}
	return copyLibrary(library, injectors)
}

// copyLibrary checks the library in src and copies its definitions and
// lock file to dst, as NAME/VERSION.yaml.
func copyLibrary(src, dst string) error {
	lib, err := inject.LoadLibrary(src)
	if err != nil {
		return err
	}
	if err := lib.Verify(); err != nil {
		return fmt.Errorf("injector library %s: %w", src, err)
	}
	if gone := lib.Removed(); len(gone) > 0 {
		return fmt.Errorf("injector library %s: %s locked in %s but removed: a released version must stay, applications may pin it", src, strings.Join(gone, ", "), inject.LockFileName)
	}
	for _, name := range lib.Names() {
		for _, d := range lib.Versions(name) {
			if err := os.MkdirAll(filepath.Join(dst, name), 0o755); err != nil {
				return err
			}
			if err := copyFile(d.File, filepath.Join(dst, name, filepath.Base(d.File)), 0o644); err != nil {
				return err
			}
		}
	}
	if err := copyFile(filepath.Join(src, inject.LockFileName), filepath.Join(dst, inject.LockFileName), 0o644); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	// What was written must load as what was read.
	if _, err := inject.LoadLibrary(dst); err != nil {
		return fmt.Errorf("the copied library: %w", err)
	}
	return nil
}

// copyFile copies a regular file (a link is followed) to dst.
func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if fi, err := in.Stat(); err != nil {
		return err
	} else if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a file", src)
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copying %s: %w", src, err)
	}
	return out.Close()
}
