//go:build unix

// Package child is the one runner of an agent's child process, in the
// shape of hashicorp/go-plugin's Runner: Start, the child's stdin and
// stdout, a bounded and scrubbed stderr tail, its pid, Wait, and one
// stop ladder (a polite request, then SIGINT, SIGTERM and SIGKILL to its
// process group, each after a deadline). Every engine that spawns a
// child (claudecode, codex, acp) starts it here, so that each child:
//
//   - leads a process group of its own (package internal/procgroup): a
//     stop reaches the tools it started, and what is left of the group
//     is killed once the child is reaped (no orphans);
//   - has its stderr read to its end, scrubbed of its secret values,
//     logged and kept as a bounded tail (package internal/stderrtail),
//     never on the event stream;
//   - runs, when asked, in the kernel sandbox (package sandbox), whose
//     private TMPDIR is removed once it is reaped;
//   - is always reaped, and every goroutine the runner started has ended
//     once Wait returns.
package child

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/chirality/harness/internal/procgroup"
	"github.com/chirality/harness/internal/stderrtail"
	"github.com/chirality/harness/sandbox"
)

// DefaultDrainGrace bounds how long Wait waits for stderr to reach its
// end after the child's group was killed (a process that left the group
// may still hold it open).
const DefaultDrainGrace = 2 * time.Second

// Config says what to run and how.
type Config struct {
	Path string   // the program
	Args []string // its arguments (without the program)
	Env  []string // the whole environment (nil: none is added to the runner's)
	Dir  string   // the working directory ("" = the current one)

	// Secrets are the values scrubbed from every stderr line (values of
	// 4 bytes or more).
	Secrets []string
	// Log receives each stderr line (its first 500 characters, scrubbed)
	// at StderrLevel (zero: debug), with StderrSource as its source.
	Log          zerolog.Logger
	StderrLevel  zerolog.Level
	StderrSource string

	// Sandbox, when set, runs the child in the kernel sandbox with this
	// spec (its Workdir "" is Dir). Its private TMPDIR is removed once
	// the child is reaped.
	Sandbox *sandbox.Spec
	// OnExit runs once the child is reaped, before its group is killed
	// and Exited closes (removing a file only the child needed).
	OnExit func()
	// DrainGrace bounds Wait's wait for the end of stderr after the
	// child was reaped (0: DefaultDrainGrace).
	DrainGrace time.Duration
}

// Process is one started child. Its methods may be called from any
// goroutine, more than once.
type Process struct {
	cmd    *exec.Cmd
	pid    int
	stdin  *os.File
	stdout *os.File
	stderr *os.File
	tail   *stderrtail.Tail
	box    *sandbox.Cmd
	onExit func()
	grace  time.Duration

	exited     chan struct{} // reaped, its group killed
	stderrDone chan struct{} // stderr read to its end (or closed)
	waited     chan struct{} // Wait's joins are done
	waitOnce   sync.Once
	code       int
	signal     string
}

// Start starts the child, leading a process group of its own, with a
// pipe on each of its stdin, stdout and stderr.
func Start(cfg Config) (*Process, error) {
	cmd := exec.Command(cfg.Path, cfg.Args...)
	cmd.Env, cmd.Dir = cfg.Env, cfg.Dir
	procgroup.Set(cmd)
	var box *sandbox.Cmd
	if cfg.Sandbox != nil {
		var err error
		if box, err = sandbox.Apply(cmd, *cfg.Sandbox); err != nil {
			return nil, err
		}
		if box.Note != "" {
			cfg.Log.Warn().Str("source", cfg.StderrSource).Msg(box.Note)
		}
	}
	var ends [6]*os.File // stdin r/w, stdout r/w, stderr r/w
	var err error
	for i := 0; i < 6 && err == nil; i += 2 {
		if ends[i], ends[i+1], err = os.Pipe(); err != nil {
			err = fmt.Errorf("pipe: %w", err)
		}
	}
	if err == nil {
		cmd.Stdin, cmd.Stdout, cmd.Stderr = ends[0], ends[3], ends[5]
		if err = cmd.Start(); err != nil {
			err = &StartError{Path: cfg.Path, Err: err}
		}
	}
	if err != nil {
		for _, f := range ends {
			if f != nil {
				_ = f.Close()
			}
		}
		_ = box.Close()
		return nil, err
	}
	for _, f := range []*os.File{ends[0], ends[3], ends[5]} {
		_ = f.Close() // the child has its copies
	}
	return started(cfg, cmd, box, ends[1], ends[2], ends[4]), nil
}

// StartError is a child that could not be started (the program not
// found or not executable, its directory missing).
type StartError struct {
	Path string
	Err  error
}

func (e *StartError) Error() string { return "start " + e.Path + ": " + e.Err.Error() }
func (e *StartError) Unwrap() error { return e.Err }

func started(cfg Config, cmd *exec.Cmd, box *sandbox.Cmd, stdin, stdout, stderr *os.File) *Process {
	p := &Process{
		cmd: cmd, pid: cmd.Process.Pid, stdin: stdin, stdout: stdout, stderr: stderr,
		tail: stderrtail.New(cfg.Secrets), box: box, onExit: cfg.OnExit, grace: cfg.DrainGrace,
		exited: make(chan struct{}), stderrDone: make(chan struct{}), waited: make(chan struct{}),
	}
	if p.grace <= 0 {
		p.grace = DefaultDrainGrace
	}
	p.tail.Level = cfg.StderrLevel
	go func() {
		defer close(p.stderrDone)
		p.tail.Read(stderr, cfg.Log, cfg.StderrSource)
	}()
	go p.reap()
	return p
}

// reap waits for the child, runs the exit hooks, then kills what is left
// of its group (tools that outlived it).
func (p *Process) reap() {
	_ = p.cmd.Wait()
	p.code, p.signal = procgroup.ExitStatus(p.cmd.ProcessState)
	_ = p.box.Close()
	if p.onExit != nil {
		p.onExit()
	}
	_ = procgroup.Signal(p.pid, procgroup.Kill)
	close(p.exited)
}

// Pid is the child's process id, which is also its process group's.
func (p *Process) Pid() int { return p.pid }

// Stdin is the write end of the child's stdin; closing it is the child's
// end of input.
func (p *Process) Stdin() *os.File { return p.stdin }

// Stdout is the read end of the child's stdout. The caller reads it; Wait
// closes it.
func (p *Process) Stdout() *os.File { return p.stdout }

// StderrTail is the end of what the child wrote to stderr (its last
// lines, at most stderrtail.MaxTail bytes), scrubbed.
func (p *Process) StderrTail() string { return p.tail.String() }

// Scrub replaces the child's secret values in s.
func (p *Process) Scrub(s string) string { return p.tail.Scrub(s) }

// Exited is closed once the child was reaped and its group killed.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// ExitStatus is the child's exit code and, when a signal ended it, the
// signal's name (the code is then -1). Valid once Exited is closed.
func (p *Process) ExitStatus() (code int, signal string) {
	<-p.exited
	return p.code, p.signal
}

// Wait waits for the child to be reaped and for its stderr to end
// (closing it after the drain grace if a stray process holds it), closes
// the runner's ends of the pipes, and returns the exit status. Every
// goroutine the runner started has ended when it returns.
func (p *Process) Wait() (code int, signal string) {
	<-p.exited
	p.waitOnce.Do(func() {
		timer := time.NewTimer(p.grace)
		defer timer.Stop()
		select {
		case <-p.stderrDone:
		case <-timer.C:
			_ = p.stderr.Close()
			<-p.stderrDone
		}
		_ = p.stderr.Close()
		_ = p.stdin.Close()
		_ = p.stdout.Close()
		close(p.waited)
	})
	<-p.waited
	return p.code, p.signal
}

// Signal sends sig to the child's group; once the child was reaped it
// does nothing (its pid may be another process's by then).
func (p *Process) Signal(sig os.Signal) error {
	select {
	case <-p.exited:
		return nil
	default:
		return procgroup.Signal(p.pid, sig)
	}
}

// Kill sends SIGKILL to the child's group now.
func (p *Process) Kill() error { return p.Signal(procgroup.Kill) }

// ErrStillRunning is what Stop returns when it ended early on a step's
// Until, with the child still running.
var ErrStillRunning = errors.New("child: still running")

// Ladder is the stop sequence: Ask (a polite request: closing stdin, a
// control request) then AskGrace, SIGINT then InterruptGrace, SIGTERM
// then TerminateGrace, then SIGKILL, each step taken only if the child is
// still there. A step whose grace is negative is skipped (SIGINT and
// SIGTERM); Ask nil is skipped. SIGKILL always ends the ladder.
type Ladder struct {
	Ask            func()
	AskGrace       time.Duration
	InterruptGrace time.Duration
	TerminateGrace time.Duration
	// Until, when it closes during the Ask or SIGINT step, ends the
	// ladder there: the child was heard (it ended its turn) and is left
	// to exit on its own.
	Until <-chan struct{}
	// OnSignal, if set, is called before each signal the ladder sends
	// (to log it).
	OnSignal func(os.Signal)
}

// Stop climbs the ladder and returns once the child is reaped, or
// ErrStillRunning when Until ended it first.
func (p *Process) Stop(l Ladder) error {
	if l.Ask != nil {
		l.Ask()
		if p.wait(l.AskGrace, l.Until) {
			return p.stopped()
		}
	}
	send := func(sig os.Signal) {
		if l.OnSignal != nil {
			l.OnSignal(sig)
		}
		_ = p.Signal(sig)
	}
	if l.InterruptGrace >= 0 {
		send(procgroup.Interrupt)
		if p.wait(l.InterruptGrace, l.Until) {
			return p.stopped()
		}
	}
	if l.TerminateGrace >= 0 {
		send(procgroup.Terminate)
		if p.wait(l.TerminateGrace, nil) {
			return nil
		}
	}
	send(procgroup.Kill)
	<-p.exited
	return nil
}

func (p *Process) stopped() error {
	select {
	case <-p.exited:
		return nil
	default:
		return ErrStillRunning
	}
}

// wait waits up to d for the child to be reaped or until (nil: never) to
// close, and reports whether one did.
func (p *Process) wait(d time.Duration, until <-chan struct{}) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-p.exited:
		return true
	case <-until:
		return true
	case <-timer.C:
		return false
	}
}
