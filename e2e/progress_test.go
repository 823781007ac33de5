package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

const slowstartChart = "fixtures/charts/slowstart"

// progressLines are the progress lines of stderr, in order.
func progressLines(stderr string) []string {
	var lines []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "progress: ") {
			lines = append(lines, l)
		}
	}
	return lines
}

// indexOf is the index of the first line with prefix at or after from, or
// -1.
func indexOf(lines []string, from int, prefix string) int {
	for i := max(from, 0); i < len(lines); i++ {
		if strings.HasPrefix(lines[i], prefix) {
			return i
		}
	}
	return -1
}

// TestProgress: while apply --wait waits, its stderr (not a terminal here,
// so one line per change) shows the Deployment that kwok makes ready late
// as not ready and then ready, and then the post-install hook Job running
// to completion, in that order; an injector that runs long is shown.
// --progress=none prints none of it, and -o json keeps stdout the JSON
// release alone.
func TestProgress(t *testing.T) {
	ns := namespace(t)
	r := mustHelmInject(t, "apply", "late", slowstartChart, "-n", ns, "--wait",
		"--injector", "sidecar-injector f=FILE,sleep=3s")
	lines := progressLines(r.stderr)
	slow := indexOf(lines, 0, `progress: injector "sidecar-injector f=FILE,sleep=3s" (release "late") is running (2s so far)`)
	slowDone := indexOf(lines, slow, `progress: injector "sidecar-injector f=FILE,sleep=3s" (release "late") finished after 3`)
	waiting := indexOf(lines, slowDone, "progress: Deployment/late-web: 0/1 ready")
	ready := indexOf(lines, waiting, "progress: Deployment/late-web: ready (1/1)")
	hookDone := indexOf(lines, ready, "progress: Job/late-migrate (hook): complete (1/1 succeeded)")
	if slow < 0 || slowDone < 0 || waiting < 0 || ready < 0 || hookDone < 0 {
		t.Fatalf("progress lines out of order or missing (injector %d, %d; not ready %d, ready %d, hook complete %d):\n%s",
			slow, slowDone, waiting, ready, hookDone, strings.Join(lines, "\n"))
	}
	if !strings.Contains(lines[waiting], "; pod late-web-") {
		t.Errorf("the not-ready line does not name the pod: %s", lines[waiting])
	}
	if strings.Contains(r.stdout, "progress:") {
		t.Errorf("progress reached stdout:\n%s", r.stdout)
	}

	t.Run("--progress=none", func(t *testing.T) {
		r := mustHelmInject(t, "apply", "late", slowstartChart, "-n", ns, "--wait", "--set", "level=two",
			"--injector", "sidecar-injector f=FILE,sleep=3s", "--progress=none")
		if l := progressLines(r.stderr); len(l) > 0 {
			t.Errorf("--progress=none printed:\n%s", strings.Join(l, "\n"))
		}
	})
	t.Run("-o json", func(t *testing.T) {
		r := mustHelmInject(t, "apply", "late", slowstartChart, "-n", ns, "--wait", "--set", "level=three",
			"--injector", "sidecar-injector f=FILE,sleep=3s", "-o", "json")
		var rel struct {
			Name    string `json:"name"`
			Version int    `json:"version"`
		}
		dec := json.NewDecoder(strings.NewReader(r.stdout))
		if err := dec.Decode(&rel); err != nil || rel.Name != "late" || rel.Version != 3 || dec.More() {
			t.Errorf("stdout is not the release as JSON alone (%v, %+v):\n%s", err, rel, r.stdout)
		}
		if len(progressLines(r.stderr)) == 0 {
			t.Errorf("-o json: no progress on stderr:\n%s", r.stderr)
		}
	})
	// template and diff wait for nothing but their injectors.
	for _, verb := range []string{"template", "diff"} {
		t.Run(verb+" shows a long injector", func(t *testing.T) {
			r := helmInject(t, verb, "late", slowstartChart, "-n", ns, "--set", "level=four", "--injector", "sidecar-injector f=FILE,sleep=3s")
			if r.code != 0 {
				t.Fatalf("%s", r)
			}
			lines := progressLines(r.stderr)
			if len(lines) != 2 || !strings.HasPrefix(lines[0], `progress: injector "sidecar-injector f=FILE,sleep=3s" (release "late") is running`) ||
				!strings.HasPrefix(lines[1], `progress: injector "sidecar-injector f=FILE,sleep=3s" (release "late") finished after 3`) {
				t.Errorf("%s progress:\n%s", verb, r.stderr)
			}
			if strings.Contains(r.stdout, "progress:") {
				t.Errorf("%s: progress reached stdout", verb)
			}
			quiet := helmInject(t, verb, "late", slowstartChart, "-n", ns, "--set", "level=four", "--injector", "sidecar-injector f=FILE,sleep=3s", "--progress=none")
			if quiet.code != 0 || len(progressLines(quiet.stderr)) > 0 {
				t.Errorf("%s --progress=none:\n%s", verb, quiet)
			}
		})
	}
	t.Run("on a terminal the view is redrawn in place", func(t *testing.T) {
		// script (util-linux) gives the command a terminal.
		line := strings.Join([]string{filepath.Join(binDir, "helm-inject"), "apply", "late", slowstartChart, "-n", ns, "--wait",
			"--set", "level=five", "--injector", "'sidecar-injector f=FILE'"}, " ")
		r := command{}.mustRun(t, "script", "-qefc", line, "/dev/null")
		if !strings.Contains(r.stdout, "\x1b[J") || !strings.Contains(r.stdout, "✓ Deployment/late-web: ready (1/1)") ||
			!strings.Contains(r.stdout, "… Deployment/late-web: ") {
			t.Errorf("no live view on a terminal:\n%q", r.stdout)
		}
		if len(progressLines(strings.ReplaceAll(r.stdout, "\r", ""))) > 0 {
			t.Errorf("a terminal got plain progress lines:\n%q", r.stdout)
		}
	})
	t.Run("unknown --progress", func(t *testing.T) {
		r := helmInject(t, "apply", "late", slowstartChart, "-n", ns, "--progress=fancy")
		if r.code == 0 || !strings.Contains(r.stderr, `unknown --progress "fancy" (want auto, plain or none)`) {
			t.Errorf("--progress=fancy:\n%s", r)
		}
	})
}
