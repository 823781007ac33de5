package inject

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/helm-inject/helm-inject/internal/redact"
	"github.com/helm-inject/helm-inject/manifest"
)

// Command is an external injector program. It receives the manifests in a
// file when its arguments contain FILE, and on stdin otherwise; it prints the
// injected manifests on stdout. It never runs through a shell.
type Command struct {
	// Spec is the definition as the user wrote it.
	Spec string
	// Argv is the program and its arguments, FILE placeholders intact.
	Argv []string
	// VersionArgv, when set, is the command that prints the program's
	// version (istioctl version --remote=false), recorded with each run.
	VersionArgv []string
	// VersionTimeout bounds VersionArgv's run; zero is
	// DefaultVersionTimeout.
	VersionTimeout time.Duration

	usesFile bool
}

// Name implements Injector.
func (c *Command) Name() string { return c.Spec }

// stderrLimit bounds how much of an injector's stderr is kept for messages.
const stderrLimit = 8 << 10

// Inject implements Injector.
func (c *Command) Inject(ctx context.Context, manifests []byte, env Env) ([]byte, error) {
	argv := c.Argv
	var stdin *bytes.Reader
	if c.usesFile {
		if env.TempDir == "" {
			return nil, errors.New("no private temporary folder for FILE")
		}
		f, err := os.CreateTemp(env.TempDir, "manifests-*.yaml")
		if err != nil {
			return nil, fmt.Errorf("writing manifests for the injector: %w", err)
		}
		path := f.Name()
		defer os.Remove(path)
		if _, err := f.Write(manifests); err != nil {
			f.Close()
			return nil, fmt.Errorf("writing manifests for the injector: %w", err)
		}
		if err := f.Close(); err != nil {
			return nil, fmt.Errorf("writing manifests for the injector: %w", err)
		}
		argv = make([]string, len(c.Argv))
		argv[0] = c.Argv[0]
		for i, a := range c.Argv[1:] {
			argv[i+1] = placeholderRE.ReplaceAllStringFunc(a, func(m string) string {
				return strings.Replace(m, filePlaceholder, path, 1)
			})
		}
	} else {
		stdin = bytes.NewReader(manifests)
	}

	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = env.Dir
	cmd.Env = append(os.Environ(),
		"HELM_INJECT_RELEASE="+env.Release,
		"HELM_INJECT_NAMESPACE="+env.Namespace,
		"HELM_INJECT_CHART="+env.Chart,
	)
	if stdin != nil {
		cmd.Stdin = stdin
	}
	var stdout bytes.Buffer
	stderr := &tailBuffer{limit: stderrLimit}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	err := runInGroup(cmd)
	if err == nil {
		return stdout.Bytes(), nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		if errors.Is(ctxErr, context.DeadlineExceeded) {
			return nil, fmt.Errorf("timed out and was killed%s", stderr.suffix(manifests))
		}
		return nil, fmt.Errorf("interrupted: %w", ctxErr)
	}
	var ee *exec.ExitError
	switch {
	case errors.Is(err, exec.ErrNotFound):
		return nil, notOnPath(argv[0])
	case errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission):
		return nil, fmt.Errorf("cannot run %q: %w", argv[0], err)
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return nil, fmt.Errorf("killed by signal %s%s", ws.Signal(), stderr.suffix(manifests))
		}
		return nil, fmt.Errorf("exited with status %d%s", ee.ExitCode(), stderr.suffix(manifests))
	default:
		return nil, fmt.Errorf("running %s: %w", filepath.Base(argv[0]), err)
	}
}

// waitDelay is how long a program's pipes stay open after it was killed,
// or after it exited while something it started still holds them.
const waitDelay = 2 * time.Second

// runInGroup runs cmd as every program of an injector runs (the injector,
// its version command): in its own process group, which cancellation
// kills whole; on Linux with the parent-death signal, so it dies with
// helm-inject; its pipes closed waitDelay after it was killed or exited.
// A child that still holds its output when the program has exited is
// killed with its group after waitDelay, and the run fails
// (exec.ErrWaitDelay): what was read may be incomplete.
func runInGroup(cmd *exec.Cmd) error {
	setProcessGroup(cmd)
	cmd.WaitDelay = waitDelay
	// The parent-death signal is sent when the thread that started the
	// child ends; Go may end an idle thread, so this one is kept until the
	// child has exited.
	runtime.LockOSThread()
	err := cmd.Run()
	runtime.UnlockOSThread()
	if errors.Is(err, exec.ErrWaitDelay) {
		killGroup(cmd)
	}
	return err
}

// tailBuffer keeps the last limit bytes written to it.
type tailBuffer struct {
	limit int
	buf   []byte
	cut   bool
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.limit; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
		t.cut = true
	}
	return len(p), nil
}

// suffix formats the captured stderr for an error message, masked by
// MaskOutput.
func (t *tailBuffer) suffix(manifests []byte) string {
	s := strings.TrimSpace(string(t.buf))
	if s == "" {
		return " (no output on stderr)"
	}
	s = MaskOutput(s, manifests)
	if t.cut {
		s = "..." + s
	}
	return "; its stderr:\n" + s
}

// MaskOutput is what a program that was given manifests printed (an
// injector's or a post-renderer's stderr), fit for an error message: the
// program may echo its input, so the text is masked as an excerpt is
// (redact.SecretValues), credentials in URLs are hidden, and so is every
// value of a Secret in manifests, in whatever form it is printed (as
// written, base64-decoded, or one line of a value).
func MaskOutput(s string, manifests []byte) string {
	return redact.Known(redact.URLs(redact.SecretValues(s)), secretData(manifests))
}

// notOnPath says that a program named without a folder was looked for in
// every folder of $PATH, and how to name it instead.
func notOnPath(program string) error {
	return fmt.Errorf("program %q is in no folder of $PATH (%s); install it there, or write its path in the injector spec (for example /usr/local/bin/%s)",
		program, os.Getenv("PATH"), program)
}

// secretData is every value of the Secrets in manifests: as written,
// base64-decoded, and each line of a value on its own.
func secretData(manifests []byte) []string {
	var values []string
	add := func(v string) {
		values = append(values, v)
		if strings.Contains(v, "\n") {
			for _, l := range strings.Split(v, "\n") {
				values = append(values, strings.TrimSpace(l))
			}
		}
	}
	for _, doc := range manifest.Split(string(manifests)) {
		if !redact.SecretLike(doc) {
			continue
		}
		var s struct {
			Data       map[string]string `yaml:"data"`
			StringData map[string]string `yaml:"stringData"`
		}
		if yaml.Unmarshal([]byte(doc), &s) != nil {
			continue
		}
		for _, v := range s.Data {
			add(v)
			if b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(v)); err == nil {
				add(string(b))
			}
		}
		for _, v := range s.StringData {
			add(v)
		}
	}
	// The longest first, so a value is masked whole before a line of it.
	slices.SortFunc(values, func(a, b string) int { return len(b) - len(a) })
	return values
}
