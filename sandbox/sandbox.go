// Package sandbox confines what an engine's child process, and every
// process it starts, may write, with the kernel's Landlock LSM.
//
// A sandboxed child is started through a re-exec of the harness binary:
// `<harness> __sandbox --workdir DIR --protect P … --rw D … -- CMD ARGS`.
// That entry (Main, called first thing in main) builds a Landlock ruleset
// that handles every write right the kernel knows (writing, truncating,
// creating, removing, renaming and linking files), grants them only where
// the child may write, restricts itself and execve's CMD; Landlock's
// restrictions are inherited by every descendant and cannot be lifted.
// Reading and executing are not restricted (the agents need their node
// runtime, the user's tools and the whole project).
//
// What the child may write:
//   - the workdir, except its protected paths (the harness's .chirality/
//     and agents/, .mcp.json, the agents' own project configuration: see
//     package internal/protect). Landlock cannot take a subtree back out of
//     a granted one, so the workdir itself is not granted: each of its
//     entries is, one by one, skipping the protected ones and descending
//     into those that hold one. The workdir's own .git (a repository's
//     directory, or a worktree's .git file) is never granted either: a
//     hook, a core.fsmonitor or a filter written to a repository's
//     configuration runs as the person's git (or the harness's), outside
//     the sandbox; so a sandboxed agent cannot commit in the project's own
//     checkout (a worktree session can: see package worktree's Grants).
//     The limit that follows: nothing can be created, removed or renamed
//     directly in a directory that holds a protected path (the workdir's
//     top level, .claude/, .github/) — only its existing files rewritten
//     in place, and anything inside its other subdirectories. A symlink
//     among those entries is not followed (it is never granted), so a
//     link planted to point outside grants nothing;
//   - the writable paths the engine names (its own state directories
//     under HOME) and a private temporary directory given as TMPDIR;
//   - /dev/null, /dev/zero, /dev/full and the terminals (/dev/tty,
//     /dev/pts/, /dev/ptmx).
//
// A kernel without Landlock, or whose Landlock cannot restrict writes, is
// an error (ErrUnavailable) when the sandbox is asked for: never a silent
// unsandboxed run.
//
// The network (Spec.Net): with Landlock ABI 4 (Linux 6.7) the entry also
// handles TCP bind and connect, and grants connect on the ports the
// engine names (its model API's, its proxy's, its HTTP MCP servers') and
// bind on none but an agent's own loopback port. What is restricted is
// the port, not the host: a child allowed 443 reaches every host's 443,
// and any local service on an allowed port. UDP (so DNS), Unix sockets
// and other protocols are not restricted. On an older kernel the
// network is left open, the writes sandboxed, and Cmd.Note says so.
package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/internal/protect"
	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// Entry is the hidden first argument of the harness binary that runs a
// command sandboxed.
const Entry = "__sandbox"

// ErrUnavailable is returned when a sandbox is asked for but the kernel
// cannot give one (no Landlock, or Landlock disabled).
var ErrUnavailable = engine.NewError(engine.ErrUnavailable, "sandbox: the kernel's Landlock LSM is not available (a sandboxed session needs Linux 5.13 or later with landlock in the lsm= list)")

// ErrNoEntry is returned when the running program has not called Main,
// so it cannot be re-executed as the sandbox's entry.
var ErrNoEntry = errors.New("sandbox: this program has no sandbox entry (its main must call sandbox.Main first)")

var entry atomic.Bool

// getABI asks the kernel for its Landlock ABI (a variable: tests stand in
// a kernel without Landlock).
var getABI = ll.LandlockGetABIVersion

// Main runs the sandbox entry when the process was started as one
// (os.Args[1] == Entry) and never returns then; otherwise it records
// that this program can be re-executed as the entry and returns. Call it
// first thing in main (and in TestMain of tests that sandbox).
func Main() {
	if len(os.Args) > 1 && os.Args[1] == Entry {
		os.Exit(runEntry(os.Args[2:]))
	}
	entry.Store(true)
}

// Available reports the kernel's Landlock ABI version, or ErrUnavailable.
func Available() (int, error) {
	abi, err := getABI()
	if err != nil || abi < 1 {
		return 0, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return abi, nil
}

// Spec says what a sandboxed command may write.
type Spec struct {
	// Workdir is the session's directory: writable except Protected.
	Workdir string
	// Protected are paths under Workdir that stay read-only
	// (internal/protect's form: absolute, a directory ends in a
	// separator); nil = protect.Paths(Workdir).
	Protected []string
	// Writable are directories or files wholly writable (an engine's
	// state directories); missing ones are created when they end in a
	// separator, otherwise skipped.
	Writable []string
	// Net, when set, limits the child's TCP to the ports it names (see
	// Net); nil leaves the network open.
	Net *Net
}

// Net is what a sandboxed child may do on TCP: connect to the ports in
// Connect (any host: Landlock's rules are by port, not by address) and
// bind the ports in Bind (0 = an ephemeral port the kernel picks);
// nothing else. UDP (so DNS), Unix sockets and every other protocol are
// not restricted. It needs Landlock ABI 4 (Linux 6.7): on an older
// kernel the network is left open and Cmd.Note says so; the write
// sandbox is applied either way.
type Net struct {
	Connect, Bind []uint16
}

// NetABI is the first Landlock ABI with TCP bind and connect rules.
const NetABI = 4

// Cmd is a command wrapped in the sandbox entry.
type Cmd struct {
	// Argv is the command to start: the entry, its rules, then the
	// command itself.
	Argv []string
	// Env are entries to add to the child's environment (TMPDIR, TMP,
	// TEMP: the private temporary directory).
	Env []string
	// Note is what the sandbox could not apply, for the caller to log
	// ("" when everything asked for is enforced): Spec.Net on a kernel
	// whose Landlock has no network rules.
	Note string
	tmp  string
}

// Close removes the private temporary directory; call it once the child
// has exited.
func (c *Cmd) Close() error {
	if c == nil || c.tmp == "" {
		return nil
	}
	return os.RemoveAll(c.tmp)
}

// Wrap returns argv wrapped in the sandbox entry of the running program
// (ErrNoEntry if it has none, ErrUnavailable if the kernel cannot
// sandbox). It creates the private temporary directory Close removes.
func Wrap(spec Spec, argv []string) (*Cmd, error) {
	if !entry.Load() {
		return nil, ErrNoEntry
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("sandbox: the harness binary: %w", err)
	}
	return WrapWith(exe, spec, argv)
}

// WrapWith is Wrap with the binary that has the entry given (a harness
// binary other than the running program).
func WrapWith(exe string, spec Spec, argv []string) (*Cmd, error) {
	if len(argv) == 0 {
		return nil, errors.New("sandbox: no command")
	}
	abi, err := Available()
	if err != nil {
		return nil, err
	}
	if spec.Workdir == "" {
		return nil, errors.New("sandbox: no workdir")
	}
	wd, err := filepath.Abs(spec.Workdir)
	if err != nil {
		return nil, err
	}
	if real, err := filepath.EvalSymlinks(wd); err == nil {
		wd = real
	}
	if spec.Protected == nil {
		spec.Protected = protect.Paths(wd)
	}
	var writable []string
	for _, w := range spec.Writable {
		if w == "" {
			continue
		}
		p := resolve(w)
		if within(p, wd) {
			return nil, fmt.Errorf("sandbox: writable path %s contains the workdir %s", w, wd)
		}
		if slices.ContainsFunc(spec.Protected, func(q string) bool { return within(p, q) || within(q, p) }) {
			continue // a state dir inside the project (HOME = the workdir) never unprotects
		}
		writable = append(writable, w)
	}
	spec.Writable = writable
	tmp, err := os.MkdirTemp("", "harness-sandbox-")
	if err != nil {
		return nil, fmt.Errorf("sandbox: temporary directory: %w", err)
	}
	if within(tmp, wd) {
		_ = os.RemoveAll(tmp)
		return nil, fmt.Errorf("sandbox: the temporary directory %s contains the workdir", tmp)
	}
	args := []string{exe, Entry, "--workdir", wd}
	for _, p := range spec.Protected {
		args = append(args, "--protect", p)
	}
	for _, w := range append(slices.Clip(spec.Writable), tmp+string(filepath.Separator)) {
		if w != "" {
			args = append(args, "--rw", w)
		}
	}
	var note string
	switch {
	case spec.Net == nil:
	case abi < NetABI:
		note = fmt.Sprintf("sandbox: the kernel's Landlock (ABI %d) has no network rules (ABI %d, Linux 6.7): the child's TCP is not limited; its writes are", abi, NetABI)
	default:
		args = append(args, "--net", "tcp")
		for _, p := range spec.Net.Connect {
			args = append(args, "--connect", strconv.Itoa(int(p)))
		}
		for _, p := range spec.Net.Bind {
			args = append(args, "--bind", strconv.Itoa(int(p)))
		}
	}
	args = append(args, "--")
	args = append(args, argv...)
	return &Cmd{Argv: args, Env: []string{"TMPDIR=" + tmp, "TMP=" + tmp, "TEMP=" + tmp}, Note: note, tmp: tmp}, nil
}

// within reports whether dir is p or an ancestor of it.
func within(dir, p string) bool {
	dir, p = filepath.Clean(dir), filepath.Clean(p)
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, string(filepath.Separator))+string(filepath.Separator))
}

// resolve makes p absolute and follows its symlinks when it exists.
func resolve(p string) string {
	p, _ = filepath.Abs(p)
	if real, err := filepath.EvalSymlinks(p); err == nil {
		return real
	}
	return p
}

// The write rights the sandbox handles, and what a granted file gets.
const (
	writeDir = ll.AccessFSWriteFile | ll.AccessFSRemoveDir | ll.AccessFSRemoveFile | ll.AccessFSMakeChar |
		ll.AccessFSMakeDir | ll.AccessFSMakeReg | ll.AccessFSMakeSock | ll.AccessFSMakeFifo |
		ll.AccessFSMakeBlock | ll.AccessFSMakeSym | ll.AccessFSRefer | ll.AccessFSTruncate
	writeFile = ll.AccessFSWriteFile | ll.AccessFSTruncate
)

// handled is the set of write rights the kernel's ABI can restrict:
// Refer from ABI 2, Truncate from ABI 3.
func handled(abi int) landlock.AccessFSSet {
	h := landlock.AccessFSSet(writeDir)
	if abi < 2 {
		h &^= ll.AccessFSRefer
	}
	if abi < 3 {
		h &^= ll.AccessFSTruncate
	}
	return h
}

// devices are what every sandboxed child may write outside its dirs.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx", "/dev/pts/"}

// Rules computes the paths granted: directories (whole trees) and
// single files, for the workdir, its protected paths and the writable
// paths. Exported through the entry's --print for tests.
func Rules(workdir string, protected, writable []string) (dirs, files []string, err error) {
	prot := make([]string, 0, len(protected)+1)
	for _, p := range protected {
		prot = append(prot, filepath.Clean(p))
	}
	if workdir != "" {
		// the repository's own files: its configuration and hooks run
		// as the person's git, outside the sandbox (a worktree's .git
		// file names the repository the harness's git trusts)
		prot = append(prot, filepath.Join(filepath.Clean(workdir), ".git"))
	}
	isProtected := func(p string) bool { return slices.Contains(prot, p) }
	holdsProtected := func(p string) bool {
		for _, q := range prot {
			if strings.HasPrefix(q, p+string(filepath.Separator)) {
				return true
			}
		}
		return false
	}
	var walk func(dir string) error
	walk = func(dir string) error {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			if isProtected(p) {
				continue
			}
			switch t := e.Type(); {
			case t&os.ModeSymlink != 0:
				// never granted: it could point anywhere
			case t.IsDir():
				if holdsProtected(p) {
					if err := walk(p); err != nil {
						return err
					}
				} else {
					dirs = append(dirs, p)
				}
			case t.IsRegular():
				files = append(files, p)
			}
		}
		return nil
	}
	if workdir != "" {
		if err := walk(filepath.Clean(workdir)); err != nil {
			return nil, nil, fmt.Errorf("sandbox: workdir: %w", err)
		}
	}
	for _, w := range append(slices.Clip(writable), devices...) {
		isDir := strings.HasSuffix(w, string(filepath.Separator))
		p := filepath.Clean(w)
		fi, err := os.Stat(p)
		if err != nil && isDir && !strings.HasPrefix(p, "/dev/") {
			if err = os.MkdirAll(p, 0o700); err == nil {
				fi, err = os.Stat(p)
			}
		}
		if err != nil {
			continue // a missing file, or a device this system lacks
		}
		if fi.IsDir() {
			dirs = append(dirs, p)
		} else {
			files = append(files, p)
		}
	}
	return dirs, files, nil
}

// Restrict applies spec to the calling process (all its threads) and
// everything it starts from now on: its writes (Spec.Protected nil = no
// path protected) and, with Spec.Net, its TCP, which on a kernel without
// network rules is an error here (Wrap leaves Net out there instead).
func Restrict(spec Spec) error {
	abi, err := Available()
	if err != nil {
		return err
	}
	dirs, files, err := Rules(spec.Workdir, spec.Protected, spec.Writable)
	if err != nil {
		return err
	}
	h := handled(abi)
	cfg := landlock.Config{HandledAccessFS: h} // not best effort: every handled right is enforced, or an error
	rules := []landlock.Rule{}
	if len(dirs) > 0 {
		rules = append(rules, landlock.PathAccess(h, dirs...))
	}
	if len(files) > 0 {
		rules = append(rules, landlock.PathAccess(h&writeFile, files...))
	}
	if spec.Net != nil {
		if abi < NetABI {
			return fmt.Errorf("%w: network rules need Landlock ABI %d, the kernel has %d", ErrUnavailable, NetABI, abi)
		}
		cfg.HandledAccessNet = ll.AccessNetBindTCP | ll.AccessNetConnectTCP
		for _, p := range spec.Net.Connect {
			rules = append(rules, landlock.ConnectTCP(p))
		}
		for _, p := range spec.Net.Bind {
			rules = append(rules, landlock.BindTCP(p))
		}
	}
	if err := cfg.Restrict(rules...); err != nil {
		return fmt.Errorf("sandbox: landlock (ABI %d): %w", abi, err)
	}
	return nil
}

// runEntry is the entry: parse, restrict, execve.
func runEntry(args []string) int {
	var spec Spec
	for len(args) > 0 {
		a := args[0]
		if a == "--" {
			args = args[1:]
			break
		}
		if len(args) < 2 {
			fmt.Fprintf(os.Stderr, "harness %s: %s needs a value\n", Entry, a)
			return 2
		}
		switch a {
		case "--workdir":
			spec.Workdir = args[1]
		case "--protect":
			spec.Protected = append(spec.Protected, args[1])
		case "--rw":
			spec.Writable = append(spec.Writable, args[1])
		case "--net":
			if args[1] != "tcp" {
				fmt.Fprintf(os.Stderr, "harness %s: --net %s: want tcp\n", Entry, args[1])
				return 2
			}
			if spec.Net == nil {
				spec.Net = &Net{}
			}
		case "--connect", "--bind":
			p, err := strconv.ParseUint(args[1], 10, 16)
			if err != nil || spec.Net == nil {
				fmt.Fprintf(os.Stderr, "harness %s: %s %s: want a port after --net tcp\n", Entry, a, args[1])
				return 2
			}
			if a == "--connect" {
				spec.Net.Connect = append(spec.Net.Connect, uint16(p))
			} else {
				spec.Net.Bind = append(spec.Net.Bind, uint16(p))
			}
		default:
			fmt.Fprintf(os.Stderr, "harness %s: unknown flag %s\n", Entry, a)
			return 2
		}
		args = args[2:]
	}
	if len(args) == 0 {
		fmt.Fprintf(os.Stderr, "harness %s: no command after --\n", Entry)
		return 2
	}
	bin, err := exec.LookPath(args[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "harness %s: %v\n", Entry, err)
		return 127
	}
	if err := Restrict(spec); err != nil {
		fmt.Fprintf(os.Stderr, "harness %s: %v\n", Entry, err)
		return 126
	}
	err = execve(bin, args, os.Environ())
	fmt.Fprintf(os.Stderr, "harness %s: exec %s: %v\n", Entry, bin, err)
	return 126
}

// Home is the HOME a child with env gets: its last HOME= entry, else
// this process's home ("" when there is none).
func Home(env []string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], "HOME="); ok {
			return v
		}
	}
	h, _ := os.UserHomeDir()
	return h
}

// Getenv is the value of key in env (its last entry), else this
// process's.
func Getenv(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v
		}
	}
	return os.Getenv(key)
}

// InHome returns the paths rel under home, in Spec.Writable's form (a
// directory ends in a separator); none when home is "".
func InHome(home string, rel ...string) []string {
	if home == "" {
		return nil
	}
	out := make([]string, 0, len(rel))
	for _, r := range rel {
		p := filepath.Join(home, r)
		if strings.HasSuffix(r, "/") {
			p += string(filepath.Separator)
		}
		out = append(out, p)
	}
	return out
}

// Apply rewrites cmd (not started yet; its Env set) to run through the
// sandbox entry with spec, and adds the private TMPDIR to its
// environment. Spec.Workdir "" is cmd.Dir (else the current directory).
// Close the result once the child has exited.
func Apply(cmd *exec.Cmd, spec Spec) (*Cmd, error) {
	if spec.Workdir == "" {
		spec.Workdir = cmd.Dir
	}
	if spec.Workdir == "" {
		spec.Workdir, _ = os.Getwd()
	}
	argv := slices.Clone(cmd.Args)
	if len(argv) > 0 && cmd.Path != "" {
		argv[0] = cmd.Path // the command as found, not as named
	}
	sb, err := Wrap(spec, argv)
	if err != nil {
		return nil, err
	}
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Path, cmd.Args, cmd.Err = sb.Argv[0], sb.Argv, nil
	cmd.Env = append(cmd.Env, sb.Env...)
	return sb, nil
}
