// Package confine restricts the running process, and every program it
// starts afterwards, in two layers the kernel enforces:
//
//   - a seccomp-bpf socket filter (every kernel since 3.5): no socket of
//     any address family, unix sockets included, can be made, so nothing
//     reaches the network, the cmp-server's socket or any other;
//   - Linux Landlock (5.13 and later): read only the files and folders a
//     Policy names, execute only its programs, write only in its private
//     folder, and, as far as the kernel's Landlock goes, no TCP or UDP
//     port, no unix socket file, no signal or abstract unix socket
//     outside itself.
//
// Both hold on every path the process takes, including ones nobody here
// knows of (a template function, a loader, a library under them, an
// injector program): the guarantee does not rest on having found every
// way to reach a file or the network. A process cannot undo either, and
// its children inherit both.
package confine

import (
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// EnvMode may make a command's --confine stricter, never laxer (a
// request to Argo CD's cmp-server can set it).
const EnvMode = "HELM_INJECT_CONFINE"

// Mode says how much confinement the operator asks for.
type Mode string

const (
	// BestEffort installs the socket filter and Landlock as far as the
	// kernel goes, and says what it cannot enforce.
	BestEffort Mode = "best-effort"
	// Required refuses to run unless the kernel confines files
	// (Landlock) and sockets (the seccomp filter).
	Required Mode = "required"
	// Off confines nothing.
	Off Mode = "off"
)

// ParseMode reads a mode as an operator writes it in what (a flag or a
// variable); empty is BestEffort.
func ParseMode(what, s string) (Mode, error) {
	switch m := Mode(strings.TrimSpace(s)); m {
	case "":
		return BestEffort, nil
	case BestEffort, Required, Off:
		return m, nil
	}
	return "", fmt.Errorf("%s=%q: say best-effort, required or off", what, s)
}

// Stricter is the stricter of m and o: Required over BestEffort over
// Off. A setting that may only tighten the operator's policy is applied
// with it.
func (m Mode) Stricter(o Mode) Mode {
	rank := func(m Mode) int { return map[Mode]int{Off: 0, BestEffort: 1, Required: 2}[m] }
	if rank(o) > rank(m) {
		return o
	}
	return m
}

// The Landlock ABI versions that add what this package restricts.
const (
	abiFiles   = 1  // Linux 5.13
	abiNetwork = 4  // Linux 6.7: TCP connect and bind
	abiScoped  = 6  // Linux 6.12: signals and abstract unix sockets
	abiNewest  = 10 // unix socket files (9) and UDP (10): the newest ABI whose rights are used here
)

// Policy is what a confined process may reach. Paths are absolute; a
// folder's rule covers everything beneath it.
type Policy struct {
	// Read are files and folders read (and, for folders, listed).
	Read []string
	// Exec are programs that may be executed (and read). The ELF
	// interpreter or "#!" interpreter each names is added, and the system's
	// library folders when one of them is dynamically linked.
	Exec []string
	// Write are folders read, written, created and removed beneath.
	Write []string
	// RemoveIn are folders in which only empty folders may be removed (the
	// parent of a Write folder, so that it can be removed at the end).
	RemoveIn []string
}

// systemRead are the files any program may need and that hold nothing of
// anyone's: the random devices and the time zone database (the null
// device is granted apart, also for writing).
func systemRead() []string {
	return []string{"/dev/urandom", "/dev/random", "/etc/localtime", "/usr/share/zoneinfo"}
}

// libraryRead are what the dynamic loader reads for a dynamically linked
// program.
func libraryRead() []string {
	return []string{"/lib", "/lib64", "/lib32", "/usr/lib", "/usr/lib64", "/usr/lib32", "/usr/local/lib", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d"}
}

// Kernel is Landlock and seccomp as the running kernel offers them.
type Kernel struct {
	// ABI reports the kernel's Landlock ABI version, 0 when it has none;
	// nil asks the kernel. Tests stand for another kernel with it.
	ABI func() int
	// SocketFilter installs the seccomp socket filter on the process; nil
	// installs the real one. Tests stand for a kernel without seccomp
	// with it.
	SocketFilter func() error
}

func (k Kernel) socketFilter() error {
	if k.SocketFilter != nil {
		return k.SocketFilter()
	}
	return installSocketFilter()
}

func (k Kernel) abi() int {
	if k.ABI != nil {
		return k.ABI()
	}
	v, err := llsys.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	return v
}

// Report says what a Confine call enforced.
type Report struct {
	Mode Mode
	// ABI is the kernel's Landlock ABI version (0: none).
	ABI int
	// SocketFilter says whether the seccomp socket filter is installed;
	// SocketFilterErr is why not.
	SocketFilter    bool
	SocketFilterErr error
}

// Files, Network and Scoped say whether the kernel confines each (Off
// confines nothing whatever they say). The network is held by the socket
// filter on any kernel, and by Landlock's TCP rules from ABI 4.
func (r Report) Files() bool   { return r.ABI >= abiFiles }
func (r Report) Network() bool { return r.SocketFilter || r.ABI >= abiNetwork }
func (r Report) Scoped() bool  { return r.ABI >= abiScoped }

// Missing names what is not enforced, for a person.
func (r Report) Missing() []string {
	if r.Mode == Off {
		return nil
	}
	var m []string
	if !r.Files() {
		m = append(m, "files (Landlock ABI 1, Linux 5.13)")
	}
	if !r.Network() {
		m = append(m, fmt.Sprintf("network (no seccomp socket filter: %v)", r.SocketFilterErr))
	}
	switch {
	case r.Scoped():
	case r.SocketFilter:
		// No socket can be made, abstract unix sockets included.
		m = append(m, "signals (ABI 6, Linux 6.12)")
	default:
		m = append(m, "signals and abstract unix sockets (ABI 6, Linux 6.12)")
	}
	return m
}

// Warning is the line a best-effort confinement prints on stderr when
// the kernel enforces less than everything, or "".
func (r Report) Warning() string {
	m := r.Missing()
	if len(m) == 0 {
		return ""
	}
	return fmt.Sprintf("helm-inject: --confine=%s: this kernel (Landlock %s) does not confine %s", r.Mode, abiName(r.ABI), strings.Join(m, ", "))
}

func abiName(v int) string {
	if v == 0 {
		return "not available"
	}
	return fmt.Sprintf("ABI %d", v)
}

// Confine restricts this process and its future children to p, as mode
// asks: the socket filter, then Landlock as far as the kernel has it.
// Off does nothing; Required fails, restricting nothing, when the kernel
// cannot confine files or the socket filter cannot be installed. The
// error names what is missing.
func (k Kernel) Confine(mode Mode, p Policy) (Report, error) {
	rep := Report{Mode: mode}
	if mode == Off {
		return rep, nil
	}
	rep.ABI = k.abi()
	if mode == Required && !rep.Files() {
		return rep, fmt.Errorf("--confine=required, but this kernel (Landlock %s) cannot confine files (Landlock ABI 1, Linux 5.13): nothing was rendered", abiName(rep.ABI))
	}
	if rep.SocketFilterErr = k.socketFilter(); rep.SocketFilterErr == nil {
		rep.SocketFilter = true
	} else if mode == Required {
		return rep, fmt.Errorf("--confine=required, but the seccomp socket filter could not be installed (%w): nothing was rendered", rep.SocketFilterErr)
	}
	if rep.ABI < abiFiles {
		return rep, nil
	}
	rules, err := p.rules()
	if err != nil {
		return rep, err
	}
	if err := configFor(rep.ABI).BestEffort().Restrict(rules...); err != nil {
		return rep, fmt.Errorf("confining the process with Landlock (%s): %w", abiName(rep.ABI), err)
	}
	return rep, nil
}

// configFor is go-landlock's configuration for an ABI version (1 or
// more): it handles every right that version knows, up to the newest this
// package uses, so that what no rule grants is denied.
func configFor(abi int) landlock.Config {
	byABI := []landlock.Config{landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5,
		landlock.V6, landlock.V7, landlock.V8, landlock.V9, landlock.V10}
	return byABI[min(abi, abiNewest)-1]
}

// The rights this package grants. Landlock refuses folder rights on a
// file, so each path's rule takes the file part when it is not a folder.
const (
	fileRights  = llsys.AccessFSExecute | llsys.AccessFSWriteFile | llsys.AccessFSReadFile | llsys.AccessFSTruncate | llsys.AccessFSIoctlDev
	readRights  = llsys.AccessFSReadFile | llsys.AccessFSReadDir
	execRights  = llsys.AccessFSReadFile | llsys.AccessFSExecute
	writeRights = llsys.AccessFSReadFile | llsys.AccessFSReadDir | llsys.AccessFSWriteFile | llsys.AccessFSTruncate |
		llsys.AccessFSRemoveDir | llsys.AccessFSRemoveFile | llsys.AccessFSMakeDir | llsys.AccessFSMakeReg | llsys.AccessFSMakeSym
	nullRights = llsys.AccessFSReadFile | llsys.AccessFSWriteFile | llsys.AccessFSTruncate
)

// rules are p's Landlock rules. A path of p that does not exist is an
// error naming it (an operator's typo should not pass silently); the
// system's files are granted where they exist.
func (p Policy) rules() ([]landlock.Rule, error) {
	var rules []landlock.Rule
	add := func(rights landlock.AccessFSSet, optional bool, paths ...string) error {
		for _, path := range paths {
			fi, err := os.Stat(path)
			if err != nil {
				if optional && errors.Is(err, fs.ErrNotExist) {
					continue
				}
				return fmt.Errorf("confining the process: %w", err)
			}
			r := rights
			if !fi.IsDir() {
				r &= fileRights
			}
			if r != 0 {
				rules = append(rules, landlock.PathAccess(r, path))
			}
		}
		return nil
	}
	exec, dynamic, err := withInterpreters(p.Exec)
	if err != nil {
		return nil, err
	}
	for _, step := range []struct {
		rights   landlock.AccessFSSet
		optional bool
		paths    []string
	}{
		{readRights, false, p.Read},
		{execRights, false, exec},
		{writeRights, false, p.Write},
		{llsys.AccessFSRemoveDir, false, p.RemoveIn},
		{nullRights, true, []string{os.DevNull}},
		{readRights, true, systemRead()},
		{readRights, true, libraries(dynamic)},
	} {
		if err := add(step.rights, step.optional, step.paths...); err != nil {
			return nil, err
		}
	}
	return rules, nil
}

// libraries is libraryRead when a program is dynamically linked.
func libraries(dynamic bool) []string {
	if !dynamic {
		return nil
	}
	return libraryRead()
}

// withInterpreters is progs with the interpreters they need to run: an
// ELF program's dynamic loader, a script's "#!" program (and its loader),
// and whether any of them is dynamically linked.
func withInterpreters(progs []string) (all []string, dynamic bool, err error) {
	seen := map[string]bool{}
	queue := slices.Clone(progs)
	for len(queue) > 0 && len(seen) < 64 {
		p := queue[0]
		queue = queue[1:]
		if seen[p] {
			continue
		}
		seen[p] = true
		all = append(all, p)
		interp, isELF, err := interpreter(p)
		if err != nil {
			return nil, false, fmt.Errorf("confining the process: program %s: %w", p, err)
		}
		if interp != "" {
			dynamic = dynamic || isELF
			queue = append(queue, interp)
		}
	}
	return all, dynamic, nil
}

// interpreter is the program the kernel loads to run path: the ELF
// PT_INTERP (isELF) or the "#!" line's program; "" for a static program.
func interpreter(path string) (string, bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	head := make([]byte, 4)
	if _, err := f.ReadAt(head, 0); err != nil {
		return "", false, nil // too short to be either
	}
	switch {
	case bytes.Equal(head, []byte(elf.ELFMAG)):
		ef, err := elf.NewFile(f)
		if err != nil {
			return "", false, err
		}
		for _, prog := range ef.Progs {
			if prog.Type == elf.PT_INTERP {
				b := make([]byte, prog.Filesz)
				if _, err := prog.ReadAt(b, 0); err != nil {
					return "", false, err
				}
				return filepath.Clean(string(bytes.TrimRight(b, "\x00"))), true, nil
			}
		}
		return "", false, nil
	case bytes.HasPrefix(head, []byte("#!")):
		line, _ := bufio.NewReader(f).ReadString('\n')
		fields := strings.Fields(strings.TrimPrefix(line, "#!"))
		if len(fields) == 0 || !filepath.IsAbs(fields[0]) {
			return "", false, nil
		}
		return filepath.Clean(fields[0]), false, nil
	}
	return "", false, nil
}
