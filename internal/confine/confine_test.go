package confine

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// childEnv makes the test binary a confined child (see TestMain): its
// value is the JSON of a childTask.
const childEnv = "HELM_INJECT_CONFINE_TEST_CHILD"

// childTask is what a re-executed test binary does: confine itself as
// Mode and Policy say, as generate does, then try each thing.
type childTask struct {
	Mode    Mode
	Policy  Policy
	Read    []string // files to read
	Write   []string // files to create
	Dial    string   // a TCP address to connect to
	Run     []string // a program and its arguments
	Signal  int      // a process to send SIGUSR1 to
	Unix    string   // an abstract unix socket to connect to
	IOUring bool     // make an io_uring (whose rings can open sockets)
	// NoSocketFilter stands for a kernel without seccomp, so that what
	// Landlock holds alone shows.
	NoSocketFilter bool
	FakeABI        *int
}

// childResult is, per attempt, "ok" or the error.
type childResult struct {
	Confine string
	Results map[string]string
}

func TestMain(m *testing.M) {
	if task := os.Getenv(childEnv); task != "" {
		os.Exit(runChild(task))
	}
	os.Exit(m.Run())
}

func runChild(task string) int {
	var t childTask
	if err := json.Unmarshal([]byte(task), &t); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	k := Kernel{}
	if t.FakeABI != nil {
		k.ABI = func() int { return *t.FakeABI }
	}
	if t.NoSocketFilter {
		k.SocketFilter = func() error { return errors.New("no seccomp in this test") }
	}
	res := childResult{Confine: "ok", Results: map[string]string{}}
	outcome := func(err error) string {
		if err != nil {
			return err.Error()
		}
		return "ok"
	}
	if _, err := k.Confine(t.Mode, t.Policy); err != nil {
		res.Confine = err.Error()
	} else {
		for _, p := range t.Read {
			_, err := os.ReadFile(p)
			res.Results["read "+p] = outcome(err)
		}
		for _, p := range t.Write {
			res.Results["write "+p] = outcome(os.WriteFile(p, []byte("x"), 0o644))
		}
		if t.Dial != "" {
			c, err := net.DialTimeout("tcp", t.Dial, 5*time.Second)
			if err == nil {
				c.Close()
			}
			res.Results["dial"] = outcome(err)
		}
		if len(t.Run) > 0 {
			out, err := exec.Command(t.Run[0], t.Run[1:]...).CombinedOutput()
			if err != nil {
				err = fmt.Errorf("%w: %s", err, out)
			}
			res.Results["run"] = outcome(err)
		}
		if t.Unix != "" {
			c, err := net.Dial("unix", t.Unix)
			if err == nil {
				c.Close()
			}
			res.Results["unix"] = outcome(err)
		}
		if t.IOUring {
			var params [120]byte // struct io_uring_params
			fd, _, errno := syscall.Syscall(425, 1, uintptr(unsafe.Pointer(&params)), 0)
			if errno == 0 {
				syscall.Close(int(fd))
				res.Results["io_uring"] = "ok"
			} else {
				res.Results["io_uring"] = errno.Error()
			}
		}
		if t.Signal != 0 {
			res.Results["signal"] = outcome(syscall.Kill(t.Signal, syscall.SIGUSR1))
		}
	}
	b, _ := json.Marshal(res)
	os.Stdout.Write(b)
	return 0
}

// runConfined runs the test binary as a confined child.
func runConfined(t *testing.T, task childTask) childResult {
	t.Helper()
	js, err := json.Marshal(task)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(js))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the confined child: %v", err)
	}
	var res childResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("the confined child's answer %q: %v", out, err)
	}
	return res
}

// world is a repository, a secret outside it, a private folder, a home
// folder and a listener that counts connections.
type world struct {
	repo, secret, private, home string
	addr                        string
	accepted                    chan struct{}
}

func newWorld(t *testing.T) world {
	t.Helper()
	dir := t.TempDir()
	w := world{
		repo:     filepath.Join(dir, "repo"),
		secret:   filepath.Join(dir, "secret.txt"),
		private:  filepath.Join(dir, "private"),
		home:     filepath.Join(dir, "home"),
		accepted: make(chan struct{}, 16),
	}
	for _, d := range []string{w.repo, w.private, w.home} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, s := range map[string]string{w.secret: "the other tenant's token", filepath.Join(w.repo, "values.yaml"): "a: 1\n"} {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
			w.accepted <- struct{}{}
		}
	}()
	w.addr = ln.Addr().String()
	return w
}

func (w world) task(mode Mode) childTask {
	return childTask{
		Mode:   mode,
		Policy: Policy{Read: []string{w.repo}, Write: []string{w.private}},
		Read:   []string{filepath.Join(w.repo, "values.yaml"), w.secret},
		Write:  []string{filepath.Join(w.private, "chart.yaml"), filepath.Join(w.home, ".profile")},
		Dial:   w.addr,
	}
}

// TestConfineDeniesWhatThePolicyDoesNotName: the process confined as
// generate confines itself reads its repository and writes its private
// folder, and nothing else: not a file outside, not the home folder, not
// a listener on 127.0.0.1. Unconfined (off), the same attempts succeed,
// so the test proves something.
func TestConfineDeniesWhatThePolicyDoesNotName(t *testing.T) {
	requireLandlock(t)
	w := newWorld(t)

	res := runConfined(t, w.task(Required))
	if res.Confine != "ok" {
		t.Fatalf("confining: %s", res.Confine)
	}
	// Landlock alone (no socket filter, best-effort) denies the TCP
	// connection too, where the kernel has its network rules (ABI 4).
	alone := w.task(BestEffort)
	alone.NoSocketFilter = true
	if got := runConfined(t, alone).Results["dial"]; !strings.Contains(got, "connect: permission denied") {
		t.Errorf("Landlock alone: dial: %q, want connect: permission denied", got)
	}
	want := map[string]bool{ // true: allowed
		"read " + filepath.Join(w.repo, "values.yaml"): true,
		"read " + w.secret: false,
		"write " + filepath.Join(w.private, "chart.yaml"): true,
		"write " + filepath.Join(w.home, ".profile"):      false,
		"dial": false,
	}
	for what, allowed := range want {
		got := res.Results[what]
		if allowed && got != "ok" {
			t.Errorf("confined: %s: %s, want it allowed", what, got)
		}
		if !allowed && !strings.Contains(got, "permission denied") {
			t.Errorf("confined: %s: %q, want permission denied", what, got)
		}
	}
	if n := len(w.accepted); n != 0 {
		t.Errorf("the listener accepted %d connections from the confined process", n)
	}
	if _, err := os.Stat(filepath.Join(w.home, ".profile")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the confined process wrote into the home folder (%v)", err)
	}

	res = runConfined(t, w.task(Off))
	for what := range want {
		if got := res.Results[what]; got != "ok" {
			t.Errorf("off: %s: %s, want it to succeed", what, got)
		}
	}
	select {
	case <-w.accepted:
	case <-time.After(5 * time.Second):
		t.Error("off: the listener saw no connection")
	}
}

// TestConfineExecutesOnlyItsPrograms: a dynamically linked program the
// policy names runs (its loader and libraries come with it); another is
// denied.
func TestConfineExecutesOnlyItsPrograms(t *testing.T) {
	requireLandlock(t)
	w := newWorld(t)
	cat, err := exec.LookPath("cat")
	if err != nil {
		t.Fatal(err)
	}
	cat, _ = filepath.EvalSymlinks(cat)
	if interp, _, _ := interpreter(cat); interp == "" {
		t.Fatalf("%s is not dynamically linked; the test needs a dynamic program", cat)
	}
	values := filepath.Join(w.repo, "values.yaml")

	task := childTask{Mode: Required, Policy: Policy{Read: []string{w.repo}, Exec: []string{cat}}, Run: []string{cat, values}}
	if res := runConfined(t, task); res.Results["run"] != "ok" {
		t.Errorf("running the allowed program %s: %s", cat, res.Results["run"])
	}
	// A program inside a folder the policy only lets it read.
	inRepo := filepath.Join(w.repo, "true")
	trueProg, err := exec.LookPath("true")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(trueProg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(inRepo, b, 0o755); err != nil {
		t.Fatal(err)
	}
	task.Run = []string{inRepo}
	if res := runConfined(t, task); !strings.Contains(res.Results["run"], "permission denied") {
		t.Errorf("running a program of the repository, which is only readable: %q, want permission denied", res.Results["run"])
	}
	head, err := exec.LookPath("head")
	if err != nil {
		t.Fatal(err)
	}
	task.Run = []string{head, values}
	if res := runConfined(t, task); !strings.Contains(res.Results["run"], "permission denied") {
		t.Errorf("running %s, which the policy does not name: %q, want permission denied", head, res.Results["run"])
	}
}

// TestConfineScopesSignals: the confined process cannot signal a process
// outside its domain (the test's own) or connect to its abstract unix
// socket; unconfined it can.
func TestConfineScopesSignals(t *testing.T) {
	requireLandlock(t)
	abstract := fmt.Sprintf("@helm-inject-confine-test-%d", os.Getpid())
	ln, err := net.Listen("unix", abstract)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	task := childTask{Mode: Required, Signal: os.Getpid(), Unix: abstract}
	got := make(chan os.Signal, 1)
	notifyUSR1(t, got)
	res := runConfined(t, task)
	if !strings.Contains(res.Results["signal"], "operation not permitted") {
		t.Errorf("confined: signalling the test: %q, want operation not permitted", res.Results["signal"])
	}
	// The socket filter refuses the socket itself, before Landlock's
	// scope would refuse the connection; without it, the scope does.
	if !strings.Contains(res.Results["unix"], "socket: permission denied") {
		t.Errorf("confined: connecting to the test's abstract socket: %q, want socket: permission denied", res.Results["unix"])
	}
	alone := task
	alone.Mode, alone.Signal, alone.NoSocketFilter = BestEffort, 0, true
	if got := runConfined(t, alone).Results["unix"]; !strings.Contains(got, "operation not permitted") {
		t.Errorf("Landlock alone: connecting to the test's abstract socket: %q, want operation not permitted", got)
	}
	select {
	case <-got:
		t.Error("confined: the test received the signal")
	case <-time.After(200 * time.Millisecond):
	}
	task.Mode = Off
	res = runConfined(t, task)
	for _, what := range []string{"signal", "unix"} {
		if res.Results[what] != "ok" {
			t.Errorf("off: %s: %s", what, res.Results[what])
		}
	}
	select {
	case <-got:
	case <-time.After(5 * time.Second):
		t.Error("off: the test received no signal")
	}
}

// TestSocketFilterWithoutLandlock: on a kernel without Landlock (the seam
// reports ABI 0, as on Ubuntu 20.04's 5.4), best-effort still holds the
// network with the seccomp filter: the process cannot connect to a TCP
// listener on 127.0.0.1 nor to a unix socket file (the cmp-server's, in
// the folder every plugin shares), and neither can a program it starts.
// Nor can it make an io_uring, whose rings open sockets without socket().
// Unconfined, all of it succeeds, so the test proves something.
func TestSocketFilterWithoutLandlock(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld(t)
	sock := filepath.Join(t.TempDir(), "plugin.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	unixAccepted := make(chan struct{}, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
			unixAccepted <- struct{}{}
		}
	}()
	host, port, _ := net.SplitHostPort(w.addr)
	noLandlock := 0
	task := childTask{Mode: BestEffort, FakeABI: &noLandlock, Dial: w.addr, Unix: sock, IOUring: true,
		Run: []string{bash, "-c", "exec 3<>/dev/tcp/" + host + "/" + port}}
	res := runConfined(t, task)
	if res.Confine != "ok" {
		t.Fatalf("confining: %s", res.Confine)
	}
	for _, what := range []string{"dial", "unix", "run", "io_uring"} {
		if !strings.Contains(res.Results[what], "ermission denied") {
			t.Errorf("no Landlock, best-effort: %s: %q, want permission denied", what, res.Results[what])
		}
	}
	if n := len(w.accepted) + len(unixAccepted); n != 0 {
		t.Errorf("the listeners accepted %d connections from the filtered process", n)
	}
	task.Mode = Off
	res = runConfined(t, task)
	for _, what := range []string{"dial", "unix", "run", "io_uring"} {
		if res.Results[what] != "ok" {
			t.Errorf("off: %s: %s, want it to succeed", what, res.Results[what])
		}
	}
}

// TestConfineRequiredWithoutLandlock: on a kernel without Landlock (the
// seam reports ABI 0), required refuses, naming what is missing, and
// best-effort goes on with the socket filter alone; where no socket filter
// can be installed, required refuses, restricting nothing, and
// best-effort names the network as missing.
func TestConfineRequiredWithoutLandlock(t *testing.T) {
	noFilter := func() error { return errors.New("seccomp: not in this kernel") }
	filterInstalled := func() error { return nil }
	for _, tc := range []struct {
		abi     int
		mode    Mode
		filter  func() error
		wantErr string
		missing []string
	}{
		{abi: 0, mode: Required, filter: filterInstalled, wantErr: "--confine=required, but this kernel (Landlock not available) cannot confine files (Landlock ABI 1, Linux 5.13)"},
		{abi: 3, mode: Required, filter: noFilter, wantErr: "--confine=required, but the seccomp socket filter could not be installed (seccomp: not in this kernel)"},
		{abi: 0, mode: BestEffort, filter: filterInstalled, missing: []string{"files", "signals (ABI 6"}},
		{abi: 0, mode: BestEffort, filter: noFilter, missing: []string{"files", "network (no seccomp socket filter: seccomp: not in this kernel)", "signals and abstract unix sockets"}},
		{abi: 0, mode: Off, filter: noFilter},
	} {
		t.Run(fmt.Sprintf("%s/abi%d", tc.mode, tc.abi), func(t *testing.T) {
			// Each case stops before Landlock would restrict this test
			// process (ABI 0, or a refusal first), so the policy's
			// missing path is never read.
			k := Kernel{ABI: func() int { return tc.abi }, SocketFilter: tc.filter}
			rep, err := k.Confine(tc.mode, Policy{Read: []string{"/does/not/exist"}})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Missing()) != len(tc.missing) {
				t.Fatalf("Missing() = %q, want %d entries", rep.Missing(), len(tc.missing))
			}
			for i, m := range tc.missing {
				if !strings.HasPrefix(rep.Missing()[i], m) {
					t.Errorf("Missing()[%d] = %q, want %s", i, rep.Missing()[i], m)
				}
			}
		})
	}
}

func TestReportWarning(t *testing.T) {
	for _, tc := range []struct {
		rep  Report
		want string
	}{
		{Report{Mode: BestEffort, ABI: 7, SocketFilter: true}, ""},
		{Report{Mode: BestEffort, ABI: 6, SocketFilter: true}, ""},
		{Report{Mode: BestEffort, ABI: 5, SocketFilter: true}, "helm-inject: --confine=best-effort: this kernel (Landlock ABI 5) does not confine signals (ABI 6, Linux 6.12)"},
		{Report{Mode: BestEffort, ABI: 3, SocketFilter: true}, "helm-inject: --confine=best-effort: this kernel (Landlock ABI 3) does not confine signals (ABI 6, Linux 6.12)"},
		{Report{Mode: BestEffort, ABI: 3, SocketFilterErr: errors.New("EINVAL")}, "helm-inject: --confine=best-effort: this kernel (Landlock ABI 3) does not confine network (no seccomp socket filter: EINVAL), signals and abstract unix sockets (ABI 6, Linux 6.12)"},
		{Report{Mode: BestEffort, ABI: 4, SocketFilterErr: errors.New("EINVAL")}, "helm-inject: --confine=best-effort: this kernel (Landlock ABI 4) does not confine signals and abstract unix sockets (ABI 6, Linux 6.12)"},
		{Report{Mode: BestEffort, ABI: 0, SocketFilter: true}, "helm-inject: --confine=best-effort: this kernel (Landlock not available) does not confine files (Landlock ABI 1, Linux 5.13), signals (ABI 6, Linux 6.12)"},
		{Report{Mode: Off, ABI: 0}, ""},
	} {
		if got := tc.rep.Warning(); got != tc.want {
			t.Errorf("%+v: Warning() = %q, want %q", tc.rep, got, tc.want)
		}
	}
}

func TestModeStricter(t *testing.T) {
	for _, tc := range []struct{ a, b, want Mode }{
		{Off, BestEffort, BestEffort}, {BestEffort, Off, BestEffort}, {Required, Off, Required},
		{Off, Required, Required}, {BestEffort, Required, Required}, {Required, BestEffort, Required}, {Off, Off, Off},
	} {
		if got := tc.a.Stricter(tc.b); got != tc.want {
			t.Errorf("%s.Stricter(%s) = %s, want %s", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{"": BestEffort, "best-effort": BestEffort, "required": Required, "off": Off, " off ": Off} {
		if got, err := ParseMode("--confine", in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"on", "true", "Required", "besteffort"} {
		if _, err := ParseMode("--confine", in); err == nil || !strings.Contains(err.Error(), `--confine="`+in+`": say best-effort, required or off`) {
			t.Errorf("ParseMode(%q) = %v, want an error", in, err)
		}
	}
}

// TestConfineRefusesAMissingPath: an operator's folder that does not
// exist is an error naming it, not a rule silently left out.
func TestConfineRefusesAMissingPath(t *testing.T) {
	requireLandlock(t)
	w := newWorld(t)
	task := w.task(Required)
	task.Policy.Read = append(task.Policy.Read, "/etc/istio-typo")
	res := runConfined(t, task)
	if !strings.Contains(res.Confine, "/etc/istio-typo") {
		t.Errorf("confining with a missing folder: %q, want an error naming it", res.Confine)
	}
}

func TestInterpreter(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "inject.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh -e\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, isELF, err := interpreter(script); err != nil || got != "/bin/sh" || isELF {
		t.Errorf("interpreter(script) = %q, %v, %v; want /bin/sh", got, isELF, err)
	}
	all, dynamic, err := withInterpreters([]string{script})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 3 || all[1] != "/bin/sh" || !dynamic {
		t.Errorf("withInterpreters(script) = %q, dynamic %v; want the script, /bin/sh and its loader, dynamic", all, dynamic)
	}
}

// requireLandlock fails (not skips) on a machine whose kernel has no
// Landlock with the network: this project's machines have ABI 7.
func requireLandlock(t *testing.T) {
	t.Helper()
	if abi := (Kernel{}).abi(); abi < abiScoped {
		t.Fatalf("this kernel's Landlock ABI is %d; these tests need %d (Linux 6.12)", abi, abiScoped)
	}
}

// BenchmarkConfine starts a process that confines itself as generate
// does (a repository, a private folder, a dynamically linked program)
// and exits, against one that exits unconfined: the difference is what
// confinement adds to a process.
func BenchmarkConfine(b *testing.B) {
	dir := b.TempDir()
	repo, private := filepath.Join(dir, "repo"), filepath.Join(dir, "private")
	for _, d := range []string{repo, private} {
		if err := os.Mkdir(d, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	cat, err := exec.LookPath("cat")
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range []Mode{Off, Required} {
		js, err := json.Marshal(childTask{Mode: mode, Policy: Policy{Read: []string{repo}, Exec: []string{cat}, Write: []string{private}, RemoveIn: []string{dir}}})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(string(mode), func(b *testing.B) {
			for b.Loop() {
				cmd := exec.Command(os.Args[0], "-test.run=^$")
				cmd.Env = append(os.Environ(), childEnv+"="+string(js))
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v: %s", err, out)
				}
			}
		})
	}
}

// TestPrivateParent: the parent of the private folders is created 0700,
// and one another user could write into, or that is a link, is refused.
func TestPrivateParent(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dir, err := PrivateParent()
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("PrivateParent() = %s: %v, %v; want a 0700 folder", dir, fi.Mode(), err)
	}
	if again, err := PrivateParent(); err != nil || again != dir {
		t.Fatalf("PrivateParent() again = %q, %v", again, err)
	}
	for _, mode := range []os.FileMode{0o777, 0o750} {
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		if _, err := PrivateParent(); err == nil || !strings.Contains(err.Error(), "is not a private folder of this user") {
			t.Errorf("a parent of mode %v: err = %v", mode, err)
		}
	}
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, nil, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := PrivateParent(); err == nil || !strings.Contains(err.Error(), "is not a private folder of this user") {
		t.Errorf("a file as the parent: err = %v", err)
	}
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir()
	if err := os.Chmod(elsewhere, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := PrivateParent(); err == nil || !strings.Contains(err.Error(), "is not a private folder of this user") {
		t.Errorf("a link as the parent: err = %v", err)
	}
}

// TestConfigFor: each ABI's configuration handles what that ABI can
// restrict, so that what no rule grants is denied: the network from 4,
// signals and abstract sockets from 6, and no more than 6 asks for.
func TestConfigFor(t *testing.T) {
	for abi := 1; abi <= 12; abi++ {
		c := configFor(abi)
		if got, want := c.HandledAccessFS&llsys.AccessFSResolveUnix != 0, abi >= 9; got != want {
			t.Errorf("ABI %d: handles unix socket files: %v, want %v", abi, got, want)
		}
		if got, want := c.HandledAccessNet&llsys.AccessNetConnectSendUDP != 0, abi >= 10; got != want {
			t.Errorf("ABI %d: handles UDP: %v, want %v", abi, got, want)
		}
		if got, want := c.HandledAccessNet != 0, abi >= 4; got != want {
			t.Errorf("ABI %d: handles the network: %v, want %v", abi, got, want)
		}
		if got, want := c.Scoped != 0, abi >= 6; got != want {
			t.Errorf("ABI %d: scopes signals: %v, want %v", abi, got, want)
		}
		if got, want := c.HandledAccessFS&llsys.AccessFSTruncate != 0, abi >= 3; got != want {
			t.Errorf("ABI %d: handles truncation: %v, want %v", abi, got, want)
		}
		if got, want := c.HandledAccessFS&llsys.AccessFSIoctlDev != 0, abi >= 5; got != want {
			t.Errorf("ABI %d: handles device ioctls: %v, want %v", abi, got, want)
		}
		if c.HandledAccessFS&llsys.AccessFSReadFile == 0 {
			t.Errorf("ABI %d: does not handle reading files", abi)
		}
	}
}

// TestRemoveStaleRenders: the render folders whose process is gone are
// removed; a live process's folder, a folder whose name holds no process
// and a file are kept.
func TestRemoveStaleRenders(t *testing.T) {
	parent := t.TempDir()
	for _, d := range []string{"render-111-a", "render-222-b", "render-x-c", "other"} {
		if err := os.MkdirAll(filepath.Join(parent, d, "sub"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(parent, "render-333-file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	removed := RemoveStaleRenders(parent, func(pid int) bool { return pid == 222 })
	if len(removed) != 1 || removed[0] != "render-111-a" {
		t.Errorf("removed %v, want [render-111-a]", removed)
	}
	entries, _ := os.ReadDir(parent)
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if want := []string{"other", "render-222-b", "render-333-file", "render-x-c"}; !slices.Equal(left, want) {
		t.Errorf("left %v, want %v", left, want)
	}
	if !processAlive(os.Getpid()) {
		t.Error("processAlive says this test's own process is gone")
	}
}
