// Package progress shows what a long apply is waiting for: which workloads
// and hook Jobs are not ready yet and why, and which injector is still
// running. On a terminal the list is redrawn in place; otherwise (CI logs)
// each change is one line. It writes to stderr only, so stdout keeps the
// command's result (-o json stays machine-readable).
package progress

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Mode is how progress is shown (--progress).
type Mode string

const (
	// Auto is Live on a terminal and Plain otherwise.
	Auto Mode = "auto"
	// Plain prints one line per change.
	Plain Mode = "plain"
	// Live redraws the list of resources in place.
	Live Mode = "live"
	// None shows nothing.
	None Mode = "none"
)

// ParseMode validates a --progress value; auto becomes plain or live
// depending on whether the output is a terminal.
func ParseMode(s string, terminal bool) (Mode, error) {
	switch m := Mode(s); m {
	case Auto:
		if terminal {
			return Live, nil
		}
		return Plain, nil
	case Plain, None:
		return m, nil
	}
	return "", fmt.Errorf("unknown --progress %q (want auto, plain or none)", s)
}

// Reporter writes progress to w. A nil *Reporter shows nothing, so callers
// need no checks.
type Reporter struct {
	w    io.Writer
	live bool
	// interval is how often watched resources are read.
	interval time.Duration
	// SlowAfter is how long an injector runs before it is shown.
	SlowAfter time.Duration

	mu sync.Mutex
	// drawn is how many lines the live view holds on screen.
	drawn int
}

// New returns a Reporter for mode, or nil for None.
func New(w io.Writer, mode Mode) *Reporter {
	if mode == None || mode == "" {
		return nil
	}
	return &Reporter{w: w, live: mode == Live, interval: time.Second, SlowAfter: 2 * time.Second}
}

// Line prints one message (above the live view, if any).
func (r *Reporter) Line(format string, args ...any) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.clear()
	fmt.Fprintf(r.w, "progress: "+format+"\n", args...)
}

// clear removes the live view; r.mu is held.
func (r *Reporter) clear() {
	if r.drawn > 0 {
		fmt.Fprintf(r.w, "\x1b[%dA\x1b[J", r.drawn)
		r.drawn = 0
	}
}

// Slow returns a function to call when a step ends: if the step ran
// longer than SlowAfter, the Reporter said so while it ran and says how
// long it took.
func (r *Reporter) Slow(what string) (done func()) {
	if r == nil {
		return func() {}
	}
	start := time.Now()
	shown := make(chan struct{})
	t := time.AfterFunc(r.SlowAfter, func() {
		r.Line("%s is running (%s so far)", what, r.SlowAfter)
		close(shown)
	})
	return func() {
		if t.Stop() {
			return
		}
		<-shown
		r.Line("%s finished after %s", what, time.Since(start).Round(100*time.Millisecond))
	}
}

// Watch reads resources every interval until the returned stop is called,
// and reports each one's state as it changes. stop reports the last
// states and returns once nothing more is written.
func (r *Reporter) Watch(ctx context.Context, cs Clients, resources []Resource) (stop func()) {
	if r == nil || len(resources) == 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	states := make([]State, len(resources))
	go func() {
		defer close(done)
		tick := time.NewTicker(r.interval)
		defer tick.Stop()
		for {
			r.poll(ctx, cs, resources, states)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() {
		cancel()
		<-done
		// One last read: what the wait ended with.
		r.poll(context.Background(), cs, resources, states)
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.live {
			r.clear()
			r.draw(resources, states)
			r.drawn = 0 // the final view stays
		}
	}
}

// poll reads every resource once and reports what changed.
func (r *Reporter) poll(ctx context.Context, cs Clients, resources []Resource, states []State) {
	for i, res := range resources {
		st, err := res.read(ctx, cs)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			st = State{Text: "cannot read: " + err.Error()}
		}
		if st == states[i] {
			continue
		}
		states[i] = st
		if !r.live && st.Text != "" {
			r.Line("%s: %s", res, st.Text)
		}
	}
	if r.live {
		r.mu.Lock()
		r.clear()
		r.draw(resources, states)
		r.mu.Unlock()
	}
}

// draw writes the live view; r.mu is held.
func (r *Reporter) draw(resources []Resource, states []State) {
	var b strings.Builder
	lines := 0
	for i, res := range resources {
		if states[i].Text == "" {
			continue
		}
		mark := "…"
		if states[i].Ready {
			mark = "✓"
		}
		fmt.Fprintf(&b, "  %s %s: %s\n", mark, res, states[i].Text)
		lines++
	}
	fmt.Fprint(r.w, b.String())
	r.drawn = lines
}
