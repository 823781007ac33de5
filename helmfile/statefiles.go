package helmfile

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// translation writes translated copies of state files beside their
// originals under hidden names (so relative paths in them keep working),
// following the local files a state file pulls in with bases: and
// helmfiles:, and removes every copy in cleanup.
type translation struct {
	// done maps a state file's absolute path to the path helmfile should
	// read instead (itself when it has nothing to translate).
	done    map[string]string
	written []string
}

// file returns the state file helmfile should read for path: path itself,
// or a translated copy when it, or a file it pulls in, has injector fields.
func (tr *translation) file(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if got, ok := tr.done[abs]; ok {
		return got, nil
	}
	if tr.done == nil {
		tr.done = map[string]string{}
	}
	tr.done[abs] = path // a file that pulls itself in is read as it is
	text, changed, err := tr.translate(path, abs)
	if err != nil || !changed {
		return path, err
	}
	f, err := os.CreateTemp(filepath.Dir(abs), ".helm-inject-*-"+filepath.Base(abs))
	if err != nil {
		return "", fmt.Errorf("writing the translated state file: %w", err)
	}
	tr.written = append(tr.written, f.Name())
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("writing the translated state file: %w", err)
	}
	tr.done[abs] = f.Name()
	return f.Name(), nil
}

// translate reads the state file at abs (named path in messages) and
// returns it with its injector fields translated and its references to
// other state files pointing at their translations.
func (tr *translation) translate(path, abs string) (string, bool, error) {
	data, err := os.ReadFile(abs)
	if err != nil {
		return "", false, fmt.Errorf("state file: %w", err)
	}
	text, changed, err := Translate(path, string(data), filepath.Dir(abs))
	if err != nil {
		return "", false, err
	}
	text, refChanged, err := rewriteReferences(text, func(ref string) (string, error) {
		target := ref
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(abs), filepath.FromSlash(ref))
		}
		if fi, err := os.Stat(target); err != nil || !fi.Mode().IsRegular() {
			return ref, nil // helmfile says what is wrong with it
		}
		got, err := tr.file(target)
		if err != nil || got == target {
			return ref, err
		}
		// The copy sits beside the file it translates.
		return filepath.ToSlash(filepath.Join(filepath.Dir(filepath.FromSlash(ref)), filepath.Base(got))), nil
	})
	return text, changed || refChanged, err
}

// dir handles a folder of state files (helmfile.d). When any of them needs
// translating it builds a sibling folder under a hidden name, holding the
// translated state files and links to everything else in the folder, so
// relative paths resolve as they do from the original, and returns it.
func (tr *translation) dir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	entries, err := os.ReadDir(abs)
	if err != nil {
		return "", fmt.Errorf("state folder: %w", err)
	}
	translated := map[string]string{}
	for _, e := range entries {
		if e.IsDir() || !isStateFile(e.Name()) {
			continue
		}
		text, changed, err := tr.translate(filepath.Join(dir, e.Name()), filepath.Join(abs, e.Name()))
		if err != nil {
			return "", err
		}
		if changed {
			translated[e.Name()] = text
		}
	}
	if len(translated) == 0 {
		return dir, nil
	}
	tmp, err := os.MkdirTemp(filepath.Dir(abs), ".helm-inject-*-"+filepath.Base(abs))
	if err != nil {
		return "", fmt.Errorf("writing the translated state folder: %w", err)
	}
	tr.written = append(tr.written, tmp)
	for _, e := range entries {
		dst := filepath.Join(tmp, e.Name())
		if text, ok := translated[e.Name()]; ok {
			err = os.WriteFile(dst, []byte(text), 0o600)
		} else {
			err = os.Symlink(filepath.Join(abs, e.Name()), dst)
		}
		if err != nil {
			return "", fmt.Errorf("writing the translated state folder: %w", err)
		}
	}
	return tmp, nil
}

// cleanup removes every translated copy.
func (tr *translation) cleanup() {
	for _, p := range tr.written {
		os.RemoveAll(p)
	}
}

// isStateFile reports whether helmfile reads name as a state file of a
// folder (helmfile's own patterns: *.y*ml and *.y*ml.gotmpl).
func isStateFile(name string) bool {
	for _, pattern := range []string{"*.y*ml", "*.y*ml.gotmpl"} {
		if ok, _ := filepath.Match(pattern, name); ok {
			return true
		}
	}
	return false
}

var (
	// referencesKey starts a top-level block that names other state files.
	referencesKey = regexp.MustCompile(`^(bases|helmfiles):\s*(#.*)?$`)
	// referenceItem is an item of such a block that names one file:
	// "- path", "- 'path'", `- "path"` or (helmfiles) "- path: path".
	referenceItem = regexp.MustCompile(`^(\s*-\s+(?:path:\s+)?)(["']?)([^"'#\s][^"'#]*?)(["']?)(\s*(#.*)?)$`)
)

// rewriteReferences replaces each local file named by an item of the
// top-level bases: and helmfiles: blocks of a state file with what rename
// returns for it. Items that are globs, remote (go-getter) URLs or
// template expressions are left as they are, as are the values files
// listed under a helmfiles: item (they are not state files).
func rewriteReferences(text string, rename func(string) (string, error)) (string, bool, error) {
	lines := strings.Split(text, "\n")
	changed := false
	inBlock, itemIndent := false, -1
	for i, l := range lines {
		trimmed := strings.TrimSpace(l)
		switch {
		case referencesKey.MatchString(l):
			inBlock, itemIndent = true, -1
			continue
		case !inBlock || trimmed == "" || strings.HasPrefix(trimmed, "#"):
			continue
		case l[0] != ' ' && l[0] != '-':
			inBlock = false // the next top-level key
			continue
		}
		indent := len(l) - len(strings.TrimLeft(l, " "))
		if strings.HasPrefix(trimmed, "- ") && itemIndent < 0 {
			itemIndent = indent
		}
		m := referenceItem.FindStringSubmatch(l)
		if m == nil || indent != itemIndent || m[2] != m[4] {
			continue
		}
		ref := m[3]
		if strings.ContainsAny(ref, "*?[{") || strings.Contains(ref, "::") || strings.Contains(ref, "://") {
			continue
		}
		got, err := rename(ref)
		if err != nil {
			return "", false, err
		}
		if got != ref {
			lines[i] = m[1] + m[2] + got + m[4] + m[5]
			changed = true
		}
	}
	return strings.Join(lines, "\n"), changed, nil
}
