// Command noreap stands between a consumer (harness, or the TypeScript SDK)
// and the real claude stand-in, so the stand-in's memory is not charged to
// the consumer. It runs $NOREAP_EXEC with its own arguments and stdio, waits
// for it to exit WITHOUT reaping it (waitid WNOWAIT), then exits with the
// same status. The zombie is reparented to the nearest child subreaper,
// bench/rusage, which reaps it and reports its peak RSS separately.
//
// Why: Linux folds the peak RSS of every reaped descendant into the reaper's
// getrusage(RUSAGE_CHILDREN), so GNU time's %M is max(consumer, claude) when
// the consumer waits for its claude child. With noreap in between, the
// consumer reaps only noreap (a few MB), never the replayer.
//
//	NOREAP_EXEC=bench/out/claude-replay harness turn --claude-bin bench/out/noreap ...
//
// Linux only; stdlib only.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"unsafe"
)

func main() {
	prog := os.Getenv("NOREAP_EXEC")
	if prog == "" {
		fmt.Fprintln(os.Stderr, "noreap: set NOREAP_EXEC to the program to run")
		os.Exit(2)
	}
	p, err := os.StartProcess(prog, append([]string{prog}, os.Args[1:]...), &os.ProcAttr{
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
		Sys:   &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "noreap:", err)
		os.Exit(127)
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	go func() {
		for s := range sigs {
			_ = p.Signal(s)
		}
	}()

	// siginfo_t for SIGCHLD on linux: si_code at 8, si_status at 24.
	var info [128]byte
	const (
		pPID    = 1
		wExited = 0x4
		wNoWait = 0x1000000
	)
	for {
		_, _, e := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(p.Pid),
			uintptr(unsafe.Pointer(&info[0])), wExited|wNoWait, 0, 0)
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			fmt.Fprintln(os.Stderr, "noreap: waitid:", e)
			os.Exit(126)
		}
		break
	}
	code := *(*int32)(unsafe.Pointer(&info[8]))
	status := int(*(*int32)(unsafe.Pointer(&info[24])))
	switch code {
	case 1: // CLD_EXITED
		os.Exit(status)
	default: // CLD_KILLED, CLD_DUMPED
		os.Exit(128 + status)
	}
}
