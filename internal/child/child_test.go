//go:build unix

package child_test

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"

	"github.com/chirality/harness/internal/child"
	"github.com/chirality/harness/internal/stderrtail"
	"github.com/chirality/harness/sandbox"
)

// Every goroutine a Process starts has ended once Wait returned. The
// test binary is also the sandbox entry sandboxed children start through.
func TestMain(m *testing.M) {
	sandbox.Main()
	goleak.VerifyTestMain(m)
}

func start(t *testing.T, script string, mod ...func(*child.Config)) *child.Process {
	t.Helper()
	cfg := child.Config{Path: "sh", Args: []string{"-c", script}, Log: zerolog.Nop()}
	for _, f := range mod {
		f(&cfg)
	}
	p, err := child.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Kill(); p.Wait() })
	return p
}

// readLine reads one line the child wrote to stdout.
func readLine(t *testing.T, r io.Reader) string {
	t.Helper()
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the child's stdout: %v (%q)", err, line)
	}
	return strings.TrimSpace(line)
}

// A child that ignores SIGINT and SIGTERM is killed once the ladder's
// deadlines have passed.
func TestLadderKillsAChildThatIgnoresSignals(t *testing.T) {
	p := start(t, `trap '' INT TERM; echo ready; while :; do sleep 1; done`)
	if got := readLine(t, p.Stdout()); got != "ready" {
		t.Fatalf("child said %q", got)
	}
	var asked atomic.Bool
	var sent []string
	err := p.Stop(child.Ladder{Ask: func() { asked.Store(true) }, AskGrace: 10 * time.Millisecond,
		InterruptGrace: 10 * time.Millisecond, TerminateGrace: 10 * time.Millisecond,
		OnSignal: func(s os.Signal) { sent = append(sent, s.String()) }})
	if err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if !asked.Load() {
		t.Error("the ladder did not ask first")
	}
	if got := strings.Join(sent, ", "); got != "interrupt, terminated, killed" {
		t.Errorf("signals sent: %s", got)
	}
	if code, sig := p.Wait(); code != -1 || sig != "SIGKILL" {
		t.Errorf("exit = %d %q, want -1 SIGKILL", code, sig)
	}
}

// A child that stops at SIGINT is not sent anything harsher.
func TestLadderStopsAtTheFirstStepThatWorks(t *testing.T) {
	p := start(t, `trap 'exit 7' INT; echo ready; while :; do sleep 1; done`)
	readLine(t, p.Stdout())
	if err := p.Stop(child.Ladder{InterruptGrace: time.Hour, TerminateGrace: time.Hour}); err != nil {
		t.Fatal(err)
	}
	// sh runs the trap once its foreground sleep ends (SIGINT reached
	// the whole group, the sleep too).
	if code, sig := p.Wait(); code != 7 || sig != "" {
		t.Errorf("exit = %d %q, want 7 (the INT trap)", code, sig)
	}
}

// Until ends the ladder before any signal: the child was heard and is
// left to exit on its own.
func TestLadderUntil(t *testing.T) {
	p := start(t, `read line; echo "got $line"; sleep 60`)
	heard := make(chan struct{})
	err := p.Stop(child.Ladder{
		Ask: func() {
			_, _ = io.WriteString(p.Stdin(), "stop\n")
			if readLine(t, p.Stdout()) == "got stop" {
				close(heard)
			}
		},
		AskGrace: time.Hour, InterruptGrace: time.Hour, TerminateGrace: time.Hour, Until: heard,
	})
	if !errors.Is(err, child.ErrStillRunning) {
		t.Fatalf("Stop = %v, want ErrStillRunning", err)
	}
	select {
	case <-p.Exited():
		t.Fatal("the child was stopped although Until closed")
	default:
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if _, sig := p.Wait(); sig != "SIGKILL" {
		t.Errorf("signal %q, want SIGKILL", sig)
	}
}

// Wait after Kill returns, with the signal, and Kill after the child was
// reaped is harmless.
func TestWaitAfterKill(t *testing.T) {
	p := start(t, `exec sleep 60`)
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if code, sig := p.Wait(); code != -1 || sig != "SIGKILL" {
		t.Errorf("exit = %d %q", code, sig)
	}
	if err := p.Kill(); err != nil {
		t.Errorf("Kill after the end: %v", err)
	}
	if code, sig := p.Wait(); code != -1 || sig != "SIGKILL" {
		t.Errorf("second Wait = %d %q", code, sig)
	}
}

// gone waits until pid is no longer a live process (gone, or a zombie
// of init's); the test's deadline bounds it.
func gone(pid int) {
	for {
		if syscall.Kill(pid, 0) != nil {
			return
		}
		state, _ := exec.Command("ps", "-o", "stat=", "-p", strconv.Itoa(pid)).Output()
		if len(state) == 0 || state[0] == 'Z' {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A tool the child started and left behind (a grandchild in its group)
// is killed once the child is reaped; OnExit runs before Exited closes.
func TestGrandchildDiesWithTheChild(t *testing.T) {
	var hooked atomic.Bool
	p := start(t, `sleep 60 >/dev/null 2>&1 & echo $!`, func(c *child.Config) {
		c.OnExit = func() { hooked.Store(true) }
	})
	pid, err := strconv.Atoi(readLine(t, p.Stdout()))
	if err != nil {
		t.Fatal(err)
	}
	if code, sig := p.Wait(); code != 0 || sig != "" {
		t.Errorf("exit = %d %q, want 0", code, sig)
	}
	if !hooked.Load() {
		t.Error("OnExit did not run before Wait returned")
	}
	if pgid, err := syscall.Getpgid(pid); err == nil && pgid != p.Pid() {
		t.Fatalf("grandchild in group %d, not the child's %d", pgid, p.Pid())
	}
	gone(pid) // hangs (the test times out) if the grandchild outlived its group
}

// stderr is kept as a bounded tail, scrubbed of the child's secrets.
func TestStderrBoundedAndScrubbed(t *testing.T) {
	const secret = "sk-test-0123456789abcdef"
	p := start(t, `i=0; while [ $i -lt 500 ]; do echo "line $i key=`+secret+` $(printf '%0200d' 0)" >&2; i=$((i+1)); done; echo done`,
		func(c *child.Config) { c.Secrets = []string{secret} })
	if got := readLine(t, p.Stdout()); got != "done" {
		t.Fatalf("child said %q", got)
	}
	p.Wait()
	tail := p.StderrTail()
	if strings.Contains(tail, secret) {
		t.Error("the secret reached the tail")
	}
	if !strings.Contains(tail, "[REDACTED]") {
		t.Errorf("no [REDACTED] in %q", tail)
	}
	if len(tail) > stderrtail.MaxTail {
		t.Errorf("tail is %d bytes, bound %d", len(tail), stderrtail.MaxTail)
	}
	if !strings.Contains(tail, "line 499 ") || strings.Contains(tail, "line 0 ") {
		t.Errorf("the tail is not the end of stderr: %q…", tail[:min(len(tail), 80)])
	}
	if got := p.Scrub("x " + secret); got != "x [REDACTED]" {
		t.Errorf("Scrub = %q", got)
	}
}

// A process that left the group (its own session) and holds stderr open
// does not hold Wait beyond the drain grace.
func TestWaitBoundsAStrayStderrHolder(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Fatal("setsid not installed:", err)
	}
	p := start(t, `setsid sh -c 'echo $$; exec sleep 60' & read x`, func(c *child.Config) {
		c.DrainGrace = 10 * time.Millisecond
	})
	pid, err := strconv.Atoi(readLine(t, p.Stdout()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(pid, syscall.SIGKILL) }()
	_, _ = io.WriteString(p.Stdin(), "go\n") // the child ends, the stray keeps its stderr
	if code, _ := p.Wait(); code != 0 {
		t.Errorf("exit = %d", code)
	}
}

// A program that cannot start is an error and leaves nothing behind.
func TestStartFails(t *testing.T) {
	_, err := child.Start(child.Config{Path: "/nonexistent/agent", Log: zerolog.Nop()})
	var se *child.StartError
	if !errors.As(err, &se) || se.Path != "/nonexistent/agent" || !strings.Contains(err.Error(), "/nonexistent/agent") {
		t.Fatalf("err = %v, want a *StartError", err)
	}
}

// A sandboxed child (the re-exec through the sandbox entry) may write in
// what its workdir holds and in its private TMPDIR, nowhere else; the TMPDIR is removed
// once it was reaped.
func TestSandboxedChild(t *testing.T) {
	if _, err := sandbox.Available(); err != nil {
		t.Fatal("this kernel cannot sandbox:", err)
	}
	work, outside := t.TempDir(), t.TempDir()
	if err := os.Mkdir(filepath.Join(work, "src"), 0o755); err != nil { // (what is in the workdir is writable)
		t.Fatal(err)
	}
	p := start(t, `echo "$TMPDIR"; echo in > src/in.txt && echo tmp > "$TMPDIR/t" && echo wrote; echo out > "$0/out.txt" 2>/dev/null || echo refused`,
		func(c *child.Config) {
			c.Args = append(c.Args, outside)
			c.Dir = work
			c.Sandbox = &sandbox.Spec{}
		})
	out, err := io.ReadAll(p.Stdout())
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := p.Wait(); code != 0 {
		t.Fatalf("exit %d: %s (stderr %s)", code, out, p.StderrTail())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 3 || lines[1] != "wrote" || lines[2] != "refused" {
		t.Fatalf("the sandboxed child said %q (stderr %q)", lines, p.StderrTail())
	}
	if _, err := os.Stat(lines[0]); !os.IsNotExist(err) || lines[0] == "" {
		t.Errorf("private TMPDIR %q still there after Wait (%v)", lines[0], err)
	}
	if _, err := os.Stat(filepath.Join(outside, "out.txt")); !os.IsNotExist(err) {
		t.Error("the child wrote outside its workdir")
	}
}
