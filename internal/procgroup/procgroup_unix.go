//go:build unix

// Package procgroup runs an agent's child as the leader of its own
// process group, so that stopping the group reaches every tool the agent
// started (a shell, and whatever that shell starts): the agent alone
// dying would orphan them. Every engine with a child process (claudecode,
// codex, acp) uses it through the one child runner, internal/child.
package procgroup

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// The signals of the bounded stop sequence (interrupt, terminate, kill).
var (
	Interrupt os.Signal = syscall.SIGINT
	Terminate os.Signal = syscall.SIGTERM
	Kill      os.Signal = syscall.SIGKILL
)

// Set makes cmd, once started, lead a process group of its own.
func Set(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}

// ErrBadTarget is returned by Signal for a pid of 0 or less, or a signal
// that is not a syscall.Signal.
var ErrBadTarget = errors.New("procgroup: bad pid or signal")

// Signal sends sig to the whole group led by pid. A group that is already
// gone is success. Safe to call more than once.
func Signal(pid int, sig os.Signal) error {
	s, ok := sig.(syscall.Signal)
	if !ok || pid <= 0 {
		return ErrBadTarget
	}
	if err := syscall.Kill(-pid, s); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

// ExitStatus splits a process state into an exit code and, when a signal
// ended the process, the signal's name (the code is then -1). A nil state
// is (-1, "").
func ExitStatus(ps *os.ProcessState) (code int, signal string) {
	if ps == nil {
		return -1, ""
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -1, SignalName(ws.Signal())
	}
	return ps.ExitCode(), ""
}

// SignalName is the conventional name of s ("SIGKILL"), or its
// description for signals without one here.
func SignalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGHUP:
		return "SIGHUP"
	case syscall.SIGPIPE:
		return "SIGPIPE"
	case syscall.SIGSEGV:
		return "SIGSEGV"
	case syscall.SIGABRT:
		return "SIGABRT"
	case syscall.SIGQUIT:
		return "SIGQUIT"
	}
	return s.String()
}
