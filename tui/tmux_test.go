package tui

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chirality/harness/claudecode/claudetest"
)

// TestRealTerminal runs `harness tui --demo` in tmux, types, and reads
// the screen: a streamed answer with a tool, Ctrl+C stopping a long
// answer, Up recalling a prompt, the commands /model, /fork and /rewind,
// ? opening the help, and a resize.
func TestRealTerminal(t *testing.T) {
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Fatal("tmux is needed for the real-terminal test (Debian: apt-get install tmux; .ci/run installs it)")
	}
	bin := filepath.Join(t.TempDir(), "harness")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/harness").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	cwd := t.TempDir()
	os.WriteFile(filepath.Join(cwd, "main.go"), []byte("package main\n"), 0o644)
	sock := filepath.Join(t.TempDir(), "tmux.sock")
	errFile := filepath.Join(t.TempDir(), "stderr")
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(tmux, append([]string{"-S", sock}, args...)...).CombinedOutput()
		if err != nil {
			b, _ := os.ReadFile(errFile)
			t.Fatalf("tmux %v: %v\n%s\nthe TUI's stderr:\n%s", args, err, out, b)
		}
		return string(out)
	}
	cmd := "HOME=" + t.TempDir() + " " + bin + " tui --demo --cwd " + cwd + " 2>" + errFile
	run("new-session", "-d", "-s", "t", "-x", "100", "-y", "60", cmd)
	t.Cleanup(func() {
		if b, _ := os.ReadFile(errFile); len(b) > 0 && t.Failed() {
			t.Logf("the TUI's stderr:\n%s", b)
		}
	})
	defer exec.Command(tmux, "-S", sock, "kill-server").Run()
	screen := func() string { return run("capture-pane", "-t", "t", "-p") }
	waitFor := func(what string, ok func(string) bool) string {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			s := screen()
			if ok(s) {
				return s
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %s on the screen:\n%s", what, s)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	has := func(sub string) func(string) bool { return func(s string) bool { return strings.Contains(s, sub) } }
	waitFor("the input box", has("Message  (Enter send"))

	run("send-keys", "-t", "t", "-l", "what is in this project")
	run("send-keys", "-t", "t", "Enter")
	idle := func(s string) bool {
		return strings.Contains(s, "entries in the project") && !strings.Contains(s, "Thinking...") && !strings.Contains(s, "Running:")
	}
	s := waitFor("the answer's end", idle)
	if *update { // the capture the README shows
		os.WriteFile(filepath.Join("testdata", "screen.txt"), []byte(s), 0o644)
	}
	for _, want := range []string{"▌ what is in this project", "Demo answer", "• it thinks first", "⚙ list_dir", "main.go"} {
		if !strings.Contains(s, want) {
			t.Errorf("screen lacks %q:\n%s", want, s)
		}
	}

	// Ctrl+C stops a long answer mid-stream; the TUI stays.
	run("send-keys", "-t", "t", "-l", "a long one please")
	run("send-keys", "-t", "t", "Enter")
	waitFor("the long answer streaming", func(s string) bool {
		return strings.Contains(s, "Thinking...") && strings.Contains(s, "streams slowly")
	})
	run("send-keys", "-t", "t", "C-c")
	waitFor("the stop and its mark", func(s string) bool {
		return !strings.Contains(s, "Thinking...") && strings.Contains(s, "Message  (Enter send") && strings.Contains(s, "⏹ Interrupted")
	})

	// Up recalls the last prompt.
	run("send-keys", "-t", "t", "Up")
	waitFor("the recalled prompt", func(s string) bool { return strings.Contains(s, "│a long one please") })
	run("send-keys", "-t", "t", "C-u")

	// Commands: a switch, a fork (the server moves; the stream says so)
	// and a rewind asked on the screen (with what it would undo), answered
	// with c, each shown; the next turn runs in the fork.
	command := func(line, want string) {
		t.Helper()
		run("send-keys", "-t", "t", "-l", line)
		run("send-keys", "-t", "t", "Enter")
		waitFor(want, func(s string) bool { return strings.Contains(strings.Join(strings.Fields(s), " "), want) })
	}
	command("/model demo-two", "» The next turns run with model demo-two")
	command("/fork", "» Forked: this is now session")
	command("/rewind", "Rewind 1 turn (to before “a long one please”;")
	waitFor("the whole question", func(s string) bool {
		return strings.Contains(strings.Join(strings.Fields(s), " "), "): f files · c conversation · b both · Esc cancel")
	})
	run("send-keys", "-t", "t", "-l", "c")
	waitFor("the rewind's result", has("» Rewound: the conversation continues from before that turn"))
	run("send-keys", "-t", "t", "-l", "what is in this project, in the fork")
	run("send-keys", "-t", "t", "Enter")
	waitFor("a turn in the fork", func(s string) bool {
		asked := strings.Index(s, "▌ what is in this project, in the fork")
		return asked >= 0 && strings.LastIndex(s, "entries in the project") > asked && !strings.Contains(s, "Thinking...") && !strings.Contains(s, "Running:")
	})

	// ? opens the help; Esc closes it.
	run("send-keys", "-t", "t", "-l", "?")
	waitFor("the help", has("PageUp / PageDown"))
	run("send-keys", "-t", "t", "Escape")
	waitFor("the help closed", func(s string) bool { return !strings.Contains(s, "PageUp / PageDown") })

	// A narrower window reflows.
	run("resize-window", "-t", "t", "-x", "50", "-y", "60")
	waitFor("the reflow", func(s string) bool {
		for _, l := range strings.Split(s, "\n") {
			if strings.HasPrefix(l, "╭") && len([]rune(strings.TrimRight(l, " "))) == 50 {
				return true
			}
		}
		return false
	})

	// Ctrl+C when idle quits.
	run("send-keys", "-t", "t", "C-c")
	deadline := time.Now().Add(10 * time.Second)
	for exec.Command(tmux, "-S", sock, "has-session", "-t", "t").Run() == nil {
		if time.Now().After(deadline) {
			t.Fatal("Ctrl+C when idle did not quit")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestRealTerminalApproval runs `harness tui --demo` on the real Claude
// CLI in tmux: a tool no rule allows shows a card; a runs it, d does not.
func TestRealTerminalApproval(t *testing.T) {
	cwd, run, waitFor := demoTUI(t, 50, 60*time.Second)
	has := func(sub string) func(string) bool { return func(s string) bool { return strings.Contains(s, sub) } }
	waitFor("the input box", has("Message  (Enter send"))
	marker := filepath.Join(cwd, "demo-marker.txt")
	for i, c := range []struct {
		key, outcome string
		runs         bool
	}{{"a", "✓ allowed (user)", true}, {"d", "✗ denied (user)", false}} {
		os.Remove(marker)
		run("send-keys", "-t", "t", "-l", "touch a file please")
		run("send-keys", "-t", "t", "Enter")
		waitFor("the approval card", func(s string) bool {
			return strings.Count(s, "? Allow Bash?") == i+1 && strings.Contains(s, "touch demo-marker.txt") && strings.Contains(s, "a allow · d deny · w always allow")
		})
		if _, err := os.Stat(marker); err == nil {
			t.Fatal("the tool ran before it was allowed")
		}
		run("send-keys", "-t", "t", "-l", c.key)
		waitFor("the outcome and the turn's end", func(s string) bool {
			return strings.Contains(s, c.outcome) && !strings.Contains(s, "Thinking...") && !strings.Contains(s, "Running:") && !strings.Contains(s, "Waiting for")
		})
		if _, err := os.Stat(marker); (err == nil) != c.runs {
			t.Fatalf("after %q the tool ran: %v, want %v", c.key, err == nil, c.runs)
		}
	}

	// SIGTERM mid-turn: the TUI and its embedded server stop, and no
	// process is left working in the project.
	run("send-keys", "-t", "t", "-l", "a long one please")
	run("send-keys", "-t", "t", "Enter")
	waitFor("the long answer streaming", has("streams slowly"))
	if len(processesIn(cwd)) == 0 {
		t.Fatal("no agent process works in the project mid-turn")
	}
	pid, err := strconv.Atoi(strings.TrimSpace(run("display-message", "-p", "-t", "t", "#{pane_pid}")))
	if err != nil {
		t.Fatal(err)
	}
	syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(30 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatal("the TUI did not stop on SIGTERM")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if left := processesIn(cwd); len(left) > 0 {
		t.Fatalf("processes left in the project: %v", left)
	}
}

// demoTUI starts `harness tui --demo` on the pinned Claude Code CLI in
// tmux, width 100 and height rows, in a fresh project (cwd); run runs a
// tmux command, waitFor waits (up to wait) for the screen to satisfy ok
// and returns it. The server is killed at the test's end.
func demoTUI(t *testing.T, height int, wait time.Duration) (cwd string, run func(args ...string) string, waitFor func(what string, ok func(string) bool) string) {
	t.Helper()
	return demoTUIOn(t, "claude-code", height, wait)
}

// demoTUIOn is demoTUI on engine engineName.
func demoTUIOn(t *testing.T, engineName string, height int, wait time.Duration) (cwd string, run func(args ...string) string, waitFor func(what string, ok func(string) bool) string) {
	t.Helper()
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Fatal("tmux is needed for the real-terminal test (Debian: apt-get install tmux; .ci/run installs it)")
	}
	cli := claudetest.FindCLI(t)
	bin := filepath.Join(t.TempDir(), "harness")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/harness").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	cwd, _ = filepath.EvalSymlinks(t.TempDir())
	sock := filepath.Join(t.TempDir(), "tmux.sock")
	errFile := filepath.Join(t.TempDir(), "stderr")
	run = func(args ...string) string {
		t.Helper()
		out, err := exec.Command(tmux, append([]string{"-S", sock}, args...)...).CombinedOutput()
		if err != nil {
			b, _ := os.ReadFile(errFile)
			t.Fatalf("tmux %v: %v\n%s\nthe TUI's stderr:\n%s", args, err, out, b)
		}
		return string(out)
	}
	cmd := "HOME=" + t.TempDir() + " exec " + bin + " tui --demo --engine " + engineName + " --claude-bin " + cli + " --cwd " + cwd + " 2>" + errFile
	run("new-session", "-d", "-s", "t", "-x", "100", "-y", strconv.Itoa(height), cmd)
	t.Cleanup(func() { exec.Command(tmux, "-S", sock, "kill-server").Run() })
	waitFor = func(what string, ok func(string) bool) string {
		t.Helper()
		deadline := time.Now().Add(wait)
		for {
			s := run("capture-pane", "-t", "t", "-p")
			if ok(s) {
				return s
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %s on the screen:\n%s", what, s)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return cwd, run, waitFor
}

// processesIn lists the processes whose working directory is dir.
func processesIn(dir string) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd")); err == nil && cwd == dir {
			cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			out = append(out, e.Name()+" "+strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	return out
}

// TestRealTerminalDeadServer: `harness tui --url` at a server that is not
// there says why on the status line, whole (wrapped), in a narrow window.
func TestRealTerminalDeadServer(t *testing.T) {
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Fatal("tmux is needed for the real-terminal test (Debian: apt-get install tmux; .ci/run installs it)")
	}
	bin := filepath.Join(t.TempDir(), "harness")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/harness").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	sock := filepath.Join(t.TempDir(), "tmux.sock")
	tm := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(tmux, append([]string{"-S", sock}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	tm("new-session", "-d", "-s", "t", "-x", "50", "-y", "20", "HOME="+t.TempDir()+" exec "+bin+" tui --url "+dead)
	defer exec.Command(tmux, "-S", sock, "kill-server").Run()
	want := "connect: connection refused), retrying in"
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := tm("capture-pane", "-t", "t", "-p")
		if strings.Contains(strings.Join(strings.Fields(s), " "), want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the status line does not say %q whole:\n%s", want, s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
