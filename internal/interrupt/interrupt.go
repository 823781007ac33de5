// Package interrupt turns Ctrl-C and SIGTERM into a cancelled context that
// remembers which signal arrived, and hands that signal on to the helm and
// helmfile processes helm-inject starts, so they settle (helm marks its
// revision failed, helmfile removes its temporary values files) before
// they exit. Killing them would leave pending releases and files behind.
package interrupt

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

// Grace periods: how long a child may take to settle after the signal is
// passed on, before it is killed. helmfile waits for its helm calls, which
// get HelmGrace from helm-inject's shim, so it gets more.
const (
	HelmGrace     = 30 * time.Second
	HelmfileGrace = HelmGrace + 15*time.Second
)

// Received is the cause of a context NotifyContext cancelled.
type Received struct{ Signal os.Signal }

func (r Received) Error() string { return r.Signal.String() + " received" }

// Is makes a Received cause count as context.Canceled.
func (r Received) Is(target error) bool { return target == context.Canceled }

// NotifyContext is signal.NotifyContext for Ctrl-C (SIGINT) and SIGTERM, with the signal as
// the context's cause. Later signals are caught too (and ignored) until
// stop is called, so a second Ctrl-C does not cut a child's settling short.
func NotifyContext(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			cancel(Received{Signal: s})
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel(nil)
	}
}

// SignalOf returns the signal that cancelled ctx, or SIGTERM when ctx
// ended another way (a deadline, a caller's cancel).
func SignalOf(ctx context.Context) os.Signal {
	var r Received
	if errors.As(context.Cause(ctx), &r) {
		return r.Signal
	}
	return syscall.SIGTERM
}

// Command is exec.CommandContext whose cancellation sends the child the
// signal that cancelled ctx, waits up to grace for it to exit, and only
// then kills it.
func Command(ctx context.Context, grace time.Duration, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(SignalOf(ctx)) }
	cmd.WaitDelay = grace
	return cmd
}

// ExitCode is the exit code of a finished command as a shell reports it:
// its own, or 128+N when signal N ended it. ok is false when it never ran.
func ExitCode(cmd *exec.Cmd) (code int, ok bool) {
	st := cmd.ProcessState
	if st == nil {
		return 0, false
	}
	if ws, isWait := st.Sys().(syscall.WaitStatus); isWait && ws.Signaled() {
		return 128 + int(ws.Signal()), true
	}
	return st.ExitCode(), true
}
