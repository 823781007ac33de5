package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// injectorRuns counts the fixture injector's runs per release in a
// --count-file.
func injectorRuns(t *testing.T, countFile string) map[string]int {
	t.Helper()
	b, err := os.ReadFile(countFile)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	runs := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if rel, ok := strings.CutPrefix(line, "run release="); ok {
			runs[rel]++
		}
	}
	return runs
}

// TestHelmfileInjectsOncePerRun: in one `helm-inject helmfile sync` or
// `apply`, the preflight diff, helmfile's own diff and the upgrade of a
// release share one render and injection; a release whose values file
// changes between the preflight and the upgrade is rendered and injected
// afresh, and what is installed has the new values.
func TestHelmfileInjectsOncePerRun(t *testing.T) {
	ns := namespace(t)
	work := t.TempDir()
	count := filepath.Join(work, "count")
	values := filepath.Join(work, "edited.yaml")
	// The injector of "edited" replaces that release's values file with
	// next the first time it runs, which is in the preflight diff.
	next := filepath.Join(work, "next.yaml")
	editing := filepath.Join(work, "editing-injector")
	script := fmt.Sprintf("#!/bin/sh\nif [ ! -e %[1]s.done ]; then : > %[1]s.done; cp %[3]s %[1]s; fi\nexec %[2]s \"$@\"\n",
		values, filepath.Join(binDir, "sidecar-injector"), next)
	if err := os.WriteFile(editing, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	chart := filepath.Join(repoRoot(t), apiChart)
	var state strings.Builder
	state.WriteString("releases:\n")
	for _, name := range []string{"once-a", "once-b", "once-c"} {
		fmt.Fprintf(&state, "- name: %s\n  namespace: %s\n  chart: %s\n  injector: \"sidecar-injector f=FILE,count-file=%s\"\n", name, ns, chart, count)
	}
	fmt.Fprintf(&state, "- name: edited\n  namespace: %s\n  chart: %s\n  values: [%s]\n  injector: \"%s f=FILE,count-file=%s\"\n", ns, chart, values, editing, count)
	dir := writeState(t, "helmfile.yaml", state.String())

	for _, step := range []struct{ verb, before, next string }{
		{"sync", "info", "debug"},
		// The others are unchanged since the sync: the preflight plans
		// them, helmfile's diff takes that plan, nothing is upgraded.
		{"apply", "warn", "error"},
	} {
		write := func(path, level string) {
			if err := os.WriteFile(path, []byte("logLevel: "+level+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		write(values, step.before)
		write(next, step.next)
		os.Remove(values + ".done")
		os.Remove(count)
		// The sync's own flags reach the preflight too: it renders what
		// the sync will, and the sync takes its plans.
		r := helmfileRun(t, dir, "--helm-binary", helmBin(t), step.verb, "--set", "image=registry.example/api:3.2")
		if r.code != 0 {
			t.Fatalf("helmfile %s:\n%s", step.verb, r)
		}
		runs := injectorRuns(t, count)
		for _, name := range []string{"once-a", "once-b", "once-c"} {
			if runs[name] != 1 {
				t.Errorf("helmfile %s: %s injected %d times in one run; want once (runs: %v)", step.verb, name, runs[name], runs)
			}
		}
		if runs["edited"] != 2 {
			t.Errorf("helmfile %s: edited injected %d times; want 2 (the preflight, then afresh for its changed values): %v", step.verb, runs["edited"], runs)
		}
		if m := mustHelm(t, "get", "manifest", "edited", "-n", ns).stdout; !strings.Contains(m, `logLevel: "`+step.next+`"`) || !strings.Contains(m, "registry.example/api:3.2") {
			t.Errorf("helmfile %s installed edited without the values written after the preflight (logLevel %s):\n%s", step.verb, step.next, m)
		}
	}
}
