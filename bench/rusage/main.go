// Command rusage runs a command and reports its wall time, CPU time and peak
// RSS, and separately the peak RSS of any orphaned descendants it reaps.
//
//	rusage [-o FILE] [-label L] -- COMMAND [ARG...]
//
// It makes itself a child subreaper (prctl PR_SET_CHILD_SUBREAPER), so
// descendants that their parent never reaps — the claude stand-in started
// through bench/noreap — are reparented to it; it reaps them with wait4 and
// reports their peak RSS as "others", not as the command's. The command's
// figures come from wait4 on the command itself: ru_maxrss is the max over
// the command and the descendants it reaped, ru_utime/ru_stime their sum.
//
// Output: a human line on stderr, and with -o a line appended to FILE:
//
//	label wall_s maxrss_kb others_maxrss_kb exit_code user_s sys_s
//
// It exits with the command's status. Linux only; stdlib only.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	out := flag.String("o", "", "append a result line to this file")
	label := flag.String("label", "run", "label for the result line")
	linger := flag.Duration("linger", 10*time.Second, "how long to wait for orphans after the command exits")
	flag.Parse()
	args := flag.Args()
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: rusage [-o FILE] [-label L] -- COMMAND [ARG...]")
		os.Exit(2)
	}
	const prSetChildSubreaper = 36
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); e != 0 {
		fmt.Fprintln(os.Stderr, "rusage: prctl(PR_SET_CHILD_SUBREAPER):", e)
		os.Exit(1)
	}
	prog := args[0]
	if p, err := exec.LookPath(prog); err == nil {
		prog = p
	}
	start := time.Now()
	proc, err := os.StartProcess(prog, args, &os.ProcAttr{Files: []*os.File{os.Stdin, os.Stdout, os.Stderr}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "rusage:", err)
		os.Exit(127)
	}
	pid := proc.Pid
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		for s := range sigs {
			_ = proc.Signal(s)
		}
	}()

	var (
		wall           time.Duration
		ru, othersRU   syscall.Rusage
		ws             syscall.WaitStatus
		done           bool
		othersMax      int64
		othersReaped   int
		lingerDeadline time.Time
	)
	for {
		var st syscall.WaitStatus
		var r syscall.Rusage
		opts := 0
		if done {
			opts = syscall.WNOHANG
		}
		got, err := syscall.Wait4(-1, &st, opts, &r)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if errors.Is(err, syscall.ECHILD) {
			break
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "rusage: wait4:", err)
			break
		}
		switch {
		case got == pid:
			wall, ru, ws, done = time.Since(start), r, st, true
			lingerDeadline = time.Now().Add(*linger)
		case got > 0:
			othersReaped++
			othersMax = max(othersMax, r.Maxrss)
			othersRU.Utime.Usec += r.Utime.Usec + r.Utime.Sec*1e6
			othersRU.Stime.Usec += r.Stime.Usec + r.Stime.Sec*1e6
		default: // WNOHANG, children still running
			if time.Now().After(lingerDeadline) {
				fmt.Fprintln(os.Stderr, "rusage: gave up waiting for orphaned descendants")
				goto report
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
report:
	code := ws.ExitStatus()
	if ws.Signaled() {
		code = 128 + int(ws.Signal())
	}
	user := time.Duration(ru.Utime.Nano())
	sys := time.Duration(ru.Stime.Nano())
	fmt.Fprintf(os.Stderr, "rusage: %s: wall %.3fs user %.3fs sys %.3fs maxrss %.1f MB (command); others: %d reaped, maxrss %.1f MB, cpu %.3fs; exit %d\n",
		*label, wall.Seconds(), user.Seconds(), sys.Seconds(), float64(ru.Maxrss)/1024,
		othersReaped, float64(othersMax)/1024, float64(othersRU.Utime.Usec+othersRU.Stime.Usec)/1e6, code)
	if *out != "" {
		f, err := os.OpenFile(*out, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintf(f, "%s %.3f %d %d %d %.3f %.3f\n", *label, wall.Seconds(), ru.Maxrss, othersMax, code, user.Seconds(), sys.Seconds())
			err = f.Close()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "rusage:", err)
		}
	}
	os.Exit(code)
}
