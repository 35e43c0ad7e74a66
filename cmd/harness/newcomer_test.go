package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/chirality/harness/claudecode"
	"github.com/chirality/harness/claudecode/claudetest"
)

// Help is uniform: stdout, exit 0, for every command; --version exists.
func TestHelpAndVersion(t *testing.T) {
	for _, args := range [][]string{
		{"--help"}, {"-h"}, {"help"}, {"help", "turn"},
		{"turn", "--help"}, {"serve", "--help"}, {"replay", "--help"}, {"sessions", "--help"},
		{"personas", "--help"}, {"agent", "--help"}, {"agent", "serve", "--help"}, {"turn", "-h"}, {"rpc", "--help"}, {"tui", "--help"},
	} {
		var out, errOut bytes.Buffer
		code := run(args, &out, &errOut)
		if code != 0 || out.Len() == 0 || errOut.Len() != 0 {
			t.Errorf("%v: exit %d, %d bytes on stdout, stderr %q", args, code, out.Len(), errOut.String())
		}
	}
	var out bytes.Buffer
	for _, v := range []string{"--version", "version"} {
		out.Reset()
		if code := run([]string{v}, &out, &out); code != 0 || !strings.Contains(out.String(), "harness ") ||
			!strings.Contains(out.String(), claudecode.TestedCLIVersion) || !strings.Contains(out.String(), runtime.Version()) {
			t.Errorf("%s: %d %q", v, code, out.String())
		}
	}
	var turnHelp bytes.Buffer
	run([]string{"turn", "--help"}, &turnHelp, &turnHelp)
	for _, flag := range []string{"-session", "-persona", "-mode", "-project-root", "-v", "-engine", "-demo", "HARNESS_CLAUDE_BIN"} {
		if !strings.Contains(turnHelp.String(), flag) {
			t.Errorf("turn --help does not list %s", flag)
		}
	}
}

// A bad --cwd is named as such, not blamed on the CLI binary.
func TestTurnCwdIsCheckedFirst(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, nil, 0o644)
	for dir, want := range map[string]string{"/does/not/exist": "the directory does not exist", file: "not a directory"} {
		var out, errOut bytes.Buffer
		code := run([]string{"turn", "--cwd", dir, "hi"}, &out, &errOut)
		if code != 2 || !strings.Contains(errOut.String(), "--cwd "+dir+": "+want) || strings.Contains(errOut.String(), "claude") {
			t.Errorf("--cwd %s: exit %d %q", dir, code, errOut.String())
		}
	}
}

// `harness turn --demo` works without an account, on both engines.
func TestTurnDemo(t *testing.T) {
	t.Setenv("HARNESS_CLAUDE_BIN", claudetest.FindCLI(t))
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	cwd := t.TempDir()
	os.WriteFile(filepath.Join(cwd, "a.txt"), []byte("x"), 0o644)
	for _, eng := range []string{"claude-code", "anthropic"} {
		var out, errOut bytes.Buffer
		code := run([]string{"turn", "--demo", "--engine", eng, "--cwd", cwd, "hello demo"}, &out, &errOut)
		if code != 0 || !strings.Contains(out.String(), "Demo answer") || !strings.Contains(out.String(), "I saw **1 entry** in the project") {
			t.Errorf("%s: exit %d\nstdout %s\nstderr %s", eng, code, out.String(), errOut.String())
		}
	}
}

// `sessions show` prints the transcript, both sides.
func TestSessionsShowTranscript(t *testing.T) {
	api, root := cliEnv(t)
	api.Script(claudetest.TextReply("the first answer"))
	code, _, errOut := runHarness(turnCmd, "--persona", "CLITEST", "--mode", "direct", "--project-root", root, "my first question")
	m := createdRE.FindStringSubmatch(errOut)
	if code != 0 || m == nil {
		t.Fatalf("turn: %d %s", code, errOut)
	}
	var out, e bytes.Buffer
	if code := run([]string{"sessions", "show", m[1]}, &out, &e); code != 0 {
		t.Fatalf("show: %d %s", code, e.String())
	}
	if !regexp.MustCompile(`(?s)user: my first question\nassistant: the first answer`).MatchString(out.String()) {
		t.Fatalf("transcript:\n%s", out.String())
	}
	out.Reset()
	run([]string{"sessions", "list", "--project-root", root}, &out, &e)
	if !strings.Contains(out.String(), "claude-code") || !strings.Contains(out.String(), "my first question") {
		t.Fatalf("list:\n%s", out.String())
	}
}

// On a terminal, `harness turn` asks before a tool runs and takes the
// answer from the keyboard.
func TestTurnAsksOnTheTerminal(t *testing.T) {
	bin := claudetest.FindCLI(t)
	root, _ := filepath.EvalSymlinks(t.TempDir())
	exe, _ := os.Executable()
	cmd := exec.Command(exe, "turn", "--demo", "--persona", "REVIEWER", "--mode", "direct", "--project-root", root,
		"--permission-mode", "default", "please touch a file")
	cmd.Env = append(claudetest.ScratchEnv(t), "HARNESS_TEST_MAIN=1", "HARNESS_CLAUDE_BIN="+bin, "XDG_STATE_HOME="+t.TempDir())
	tty, err := pty.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	done := make(chan error, 1)
	var screen lockedBuffer
	go func() {
		r := bufio.NewReader(tty)
		answered := false
		for {
			line, err := r.ReadString(' ')
			screen.Write([]byte(line))
			if !answered && strings.Contains(screen.String(), "[a]llow / [d]eny / al[w]ays?") {
				answered = true
				tty.Write([]byte("a\n"))
			}
			if err != nil {
				done <- err
				return
			}
		}
	}()
	waitErr := make(chan error, 1)
	go func() { waitErr <- cmd.Wait() }()
	select {
	case err := <-waitErr:
		if err != nil {
			t.Fatalf("harness turn: %v\n%s", err, screen.String())
		}
	case <-time.After(90 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("no end:\n%s", screen.String())
	}
	<-done
	if !strings.Contains(screen.String(), "Bash wants to run") {
		t.Fatalf("no question on the terminal:\n%s", screen.String())
	}
	if _, err := os.Stat(filepath.Join(root, "demo-marker.txt")); err != nil {
		t.Fatalf("the approved tool did not run:\n%s", screen.String())
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
