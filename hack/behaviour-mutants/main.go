// Command behaviour-mutants checks the behaviour catalogue: hand-written
// plausible bugs (a case left out, a wrong default, the wrong source of
// truth, a field missing from a key or a comparison, a boundary), one per
// entry of hack/mutants/*.yaml, each with the line saying what a user
// would see go wrong. It applies each to a fresh copy of the working tree
// and runs its package's unit tests there: the mutant is killed when they
// fail. One that lives, no longer applies (its line moved on) or does not
// build fails the check. Entries that only the end-to-end suite can hold
// name their e2e test and are listed, not run.
//
//	go run ./hack/behaviour-mutants [-run REGEXP] [-j N] [-list]
//
// gremlins (make mutation) mutates operators; this catalogue holds the
// bugs people write. See docs/mutation.md.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"
)

// Mutant is one catalogue entry.
type Mutant struct {
	// Name is unique in the catalogue; -run selects by it.
	Name string `yaml:"name"`
	// User says, in one line, what a user would see go wrong.
	User string `yaml:"user"`
	// File is the product file, Old the text that must occur in it exactly
	// once, New what replaces it.
	File string `yaml:"file"`
	Old  string `yaml:"old"`
	New  string `yaml:"new"`
	// Test is the package whose unit tests must fail (./release), Run an
	// optional -run pattern for them.
	Test string `yaml:"test"`
	Run  string `yaml:"run"`
	// E2E, when set, names the end-to-end test that alone holds this
	// behaviour (a real interrupt, a real API server's merge): the entry
	// is listed, not run.
	E2E string `yaml:"e2e"`

	catalogue string
}

type outcome struct {
	m       *Mutant
	status  string // killed, LIVED, not applied, does not build, e2e only
	detail  string
	elapsed time.Duration
}

func main() {
	os.Exit(run())
}

func run() int {
	dir := flag.String("catalogue", "hack/mutants", "the folder of catalogue files (*.yaml)")
	only := flag.String("run", "", "run only the mutants whose name matches this regular expression")
	jobs := flag.Int("j", max(1, runtime.NumCPU()/2), "copies of the tree tested at once")
	list := flag.Bool("list", false, "list the catalogue and exit")
	timeout := flag.Duration("timeout", 5*time.Minute, "the limit of one mutant's test run")
	flag.Parse()

	mutants, err := load(*dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "behaviour-mutants:", err)
		return 2
	}
	if *only != "" {
		re, err := regexp.Compile(*only)
		if err != nil {
			fmt.Fprintln(os.Stderr, "behaviour-mutants: -run:", err)
			return 2
		}
		mutants = slices.DeleteFunc(mutants, func(m *Mutant) bool { return !re.MatchString(m.Name) })
		if len(mutants) == 0 {
			fmt.Fprintf(os.Stderr, "behaviour-mutants: no mutant matches %q\n", *only)
			return 2
		}
	}
	if *list {
		for _, m := range mutants {
			fmt.Printf("%-50s %-14s %s\n", m.Name, m.Test, m.User)
		}
		return 0
	}
	start := time.Now()
	results := runAll(mutants, *jobs, *timeout)
	return report(os.Stdout, results, time.Since(start))
}

// load reads every catalogue file of dir and checks the entries.
func load(dir string) ([]*Mutant, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no catalogue in %s", dir)
	}
	var all []*Mutant
	seen := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var ms []*Mutant
		dec := yaml.NewDecoder(bytes.NewReader(b))
		dec.KnownFields(true)
		if err := dec.Decode(&ms); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for i, m := range ms {
			m.catalogue = f
			switch {
			case m.Name == "":
				return nil, fmt.Errorf("%s: entry %d has no name", f, i+1)
			case seen[m.Name] != "":
				return nil, fmt.Errorf("%s: mutant %q is also in %s", f, m.Name, seen[m.Name])
			case m.User == "":
				return nil, fmt.Errorf("%s: mutant %q does not say what a user would see (user:)", f, m.Name)
			case m.File == "" || m.Old == "" || m.Old == m.New:
				return nil, fmt.Errorf("%s: mutant %q needs file:, old: and a different new:", f, m.Name)
			case m.Test == "" && m.E2E == "":
				return nil, fmt.Errorf("%s: mutant %q names no package to test (test:) and no e2e test (e2e:)", f, m.Name)
			}
			seen[m.Name] = f
			all = append(all, m)
		}
	}
	return all, nil
}

// runAll runs the mutants on jobs copies of the working tree.
func runAll(mutants []*Mutant, jobs int, timeout time.Duration) []outcome {
	results := make([]outcome, len(mutants))
	work := make(chan int)
	var wg sync.WaitGroup
	for w := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			copyDir, err := copyTree(w)
			if err != nil {
				for i := range work {
					results[i] = outcome{m: mutants[i], status: "does not build", detail: err.Error()}
				}
				return
			}
			defer os.RemoveAll(copyDir)
			for i := range work {
				results[i] = try(copyDir, mutants[i], timeout)
				o := results[i]
				fmt.Fprintf(os.Stderr, "%-14s %-50s %5.1fs\n", o.status, o.m.Name, o.elapsed.Seconds())
			}
		}()
	}
	for i := range mutants {
		work <- i
	}
	close(work)
	wg.Wait()
	return results
}

// copyTree copies the working tree's files (tracked, and new ones not
// ignored) into a fresh folder: the copy a worker applies mutants to.
func copyTree(worker int) (string, error) {
	out, err := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		return "", fmt.Errorf("listing the working tree: %w", err)
	}
	dst, err := os.MkdirTemp("", fmt.Sprintf("behaviour-mutants-%d-", worker))
	if err != nil {
		return "", err
	}
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		fi, err := os.Lstat(f)
		if err != nil {
			continue // deleted in the working tree
		}
		target := filepath.Join(dst, f)
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return "", err
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			link, err := os.Readlink(f)
			if err != nil {
				return "", err
			}
			if err := os.Symlink(link, target); err != nil {
				return "", err
			}
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(target, b, fi.Mode().Perm()); err != nil {
			return "", err
		}
	}
	return dst, nil
}

// try applies m in the copy at dir, runs its tests and puts the file back.
func try(dir string, m *Mutant, timeout time.Duration) outcome {
	o := outcome{m: m}
	if m.E2E != "" {
		o.status, o.detail = "e2e only", m.E2E
		return o
	}
	path := filepath.Join(dir, m.File)
	src, err := os.ReadFile(path)
	if err != nil {
		o.status, o.detail = "not applied", err.Error()
		return o
	}
	if n := bytes.Count(src, []byte(m.Old)); n != 1 {
		o.status, o.detail = "not applied", fmt.Sprintf("%s holds the old text %d times, not once", m.File, n)
		return o
	}
	defer os.WriteFile(path, src, 0o644)
	if err := os.WriteFile(path, bytes.Replace(src, []byte(m.Old), []byte(m.New), 1), 0o644); err != nil {
		o.status, o.detail = "not applied", err.Error()
		return o
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout+30*time.Second)
	defer cancel()
	args := []string{"test", "-count=1", "-timeout", timeout.String()}
	if m.Run != "" {
		args = append(args, "-run", m.Run)
	}
	cmd := exec.CommandContext(ctx, "go", append(args, m.Test)...)
	cmd.Dir = dir
	start := time.Now()
	out, err := cmd.CombinedOutput()
	o.elapsed = time.Since(start)
	switch {
	case err == nil:
		o.status = "LIVED"
	case bytes.Contains(out, []byte("[build failed]")) || bytes.Contains(out, []byte("[setup failed]")):
		o.status, o.detail = "does not build", firstLines(out, 5)
	default:
		o.status = "killed"
	}
	return o
}

func firstLines(b []byte, n int) string {
	lines := strings.SplitN(string(b), "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}

// report prints the outcome per catalogue file and the totals; it
// returns the exit code: 1 when any mutant lived, no longer applies or
// does not build.
func report(w io.Writer, results []outcome, elapsed time.Duration) int {
	counts := map[string]int{}
	var bad []outcome
	for _, o := range results {
		counts[o.status]++
		if o.status != "killed" && o.status != "e2e only" {
			bad = append(bad, o)
		}
	}
	for _, o := range results {
		if o.status == "e2e only" {
			fmt.Fprintf(w, "e2e only: %s (%s): %s\n", o.m.Name, o.detail, o.m.User)
		}
	}
	for _, o := range bad {
		fmt.Fprintf(w, "%s: %s (%s, %s)\n  a user would see: %s\n", o.status, o.m.Name, o.m.catalogue, o.m.File, o.m.User)
		if o.detail != "" {
			fmt.Fprintf(w, "  %s\n", strings.ReplaceAll(o.detail, "\n", "\n  "))
		}
	}
	fmt.Fprintf(w, "%d mutants: %d killed, %d lived, %d not applied, %d do not build, %d e2e only; %s\n",
		len(results), counts["killed"], counts["LIVED"], counts["not applied"], counts["does not build"], counts["e2e only"], elapsed.Round(time.Second))
	if len(bad) > 0 {
		return 1
	}
	return 0
}
