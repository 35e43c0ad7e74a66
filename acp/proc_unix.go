//go:build unix

package acp

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// The agent leads its own process group: the commands it runs are in
// it too, and stopping the group stops them all.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup signals the group led by pid; a group already gone is fine.
func signalGroup(pid int, sig syscall.Signal) error {
	if pid <= 0 {
		return errors.New("acp: no process")
	}
	if err := syscall.Kill(-pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

const sigKill = syscall.SIGKILL

// exitStatus returns the exit code, or -1 and the signal's name.
func exitStatus(ps *os.ProcessState) (int, string) {
	if ps == nil {
		return -1, ""
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		switch ws.Signal() {
		case syscall.SIGKILL:
			return -1, "SIGKILL"
		case syscall.SIGTERM:
			return -1, "SIGTERM"
		case syscall.SIGINT:
			return -1, "SIGINT"
		}
		return -1, ws.Signal().String()
	}
	return ps.ExitCode(), ""
}

const (
	sigInt  = syscall.SIGINT
	sigTerm = syscall.SIGTERM
)
