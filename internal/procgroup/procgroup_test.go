//go:build unix

package procgroup_test

import (
	"errors"
	"os/exec"
	"strconv"
	"syscall"
	"testing"

	"github.com/chirality/harness/internal/procgroup"
)

// A shell that started a grandchild: signalling the group stops both, and
// the exit status names the signal.
func TestSignalReachesTheGroup(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 60 & echo $!; wait")
	procgroup.Set(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var grandchild int
	buf := make([]byte, 32)
	n, _ := out.Read(buf)
	for _, c := range buf[:n] {
		if c >= '0' && c <= '9' {
			grandchild = grandchild*10 + int(c-'0')
		}
	}
	if grandchild == 0 {
		t.Fatalf("no grandchild pid in %q", buf[:n])
	}
	if pgid, _ := syscall.Getpgid(cmd.Process.Pid); pgid != cmd.Process.Pid {
		t.Fatalf("child's group %d, want its own (%d)", pgid, cmd.Process.Pid)
	}
	if err := procgroup.Signal(cmd.Process.Pid, procgroup.Kill); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if code, sig := procgroup.ExitStatus(cmd.ProcessState); code != -1 || sig != "SIGKILL" {
		t.Errorf("exit status = %d %q, want -1 SIGKILL", code, sig)
	}
	// The grandchild was in the group: it is gone too (a zombie of init at
	// worst, which kill -0 still finds, so look at its state).
	if err := syscall.Kill(grandchild, 0); err == nil {
		state, _ := exec.Command("ps", "-o", "stat=", "-p", strconv.Itoa(grandchild)).Output()
		if len(state) > 0 && state[0] != 'Z' {
			t.Errorf("grandchild %d outlived its group (state %q)", grandchild, state)
		}
	}
	// Signalling a group that is gone is success; a bad pid is an error.
	if err := procgroup.Signal(cmd.Process.Pid, procgroup.Terminate); err != nil {
		t.Errorf("signal to a gone group: %v", err)
	}
	if err := procgroup.Signal(0, procgroup.Kill); !errors.Is(err, procgroup.ErrBadTarget) {
		t.Errorf("pid 0: %v, want ErrBadTarget", err)
	}
}

func TestExitStatus(t *testing.T) {
	if code, sig := procgroup.ExitStatus(nil); code != -1 || sig != "" {
		t.Errorf("nil = %d %q", code, sig)
	}
	cmd := exec.Command("sh", "-c", "exit 3")
	_ = cmd.Run()
	if code, sig := procgroup.ExitStatus(cmd.ProcessState); code != 3 || sig != "" {
		t.Errorf("exit 3 = %d %q", code, sig)
	}
}
