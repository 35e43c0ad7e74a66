package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/spf13/cobra"

	"github.com/chirality/harness"
	"github.com/chirality/harness/claudecode"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/event/fold"
)

// `harness version --help` is help about the command, not the version; a
// stray argument or flag is a usage error.
func TestVersionHelp(t *testing.T) {
	for _, args := range [][]string{{"version", "--help"}, {"version", "-h"}, {"help", "version"}} {
		var out, errOut bytes.Buffer
		code := run(args, &out, &errOut)
		if code != 0 || !strings.HasPrefix(out.String(), "usage: harness version") || strings.Contains(out.String(), "pinned, tested") || errOut.Len() != 0 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out.String(), errOut.String())
		}
	}
	for _, args := range [][]string{{"version", "extra"}, {"version", "--bogus"}} {
		var out, errOut bytes.Buffer
		if code := run(args, &out, &errOut); code != 2 || out.Len() != 0 || errOut.Len() == 0 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out.String(), errOut.String())
		}
	}
}

// A bad --engine or --root of serve is a usage error said once, without a
// library's package name ("harness serve: harness: …" was printed).
func TestServeBadEngineOrRootSaysSoOnce(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	for args, want := range map[string]string{
		"--engine foo":   `"foo": unknown engine (have claude-code`,
		"--root /nope/x": "--root /nope/x: the directory does not exist",
	} {
		var out, errOut bytes.Buffer
		code := serve(append([]string{"--addr", "127.0.0.1:0"}, strings.Fields(args)...), &out, &errOut, nil)
		msg := errOut.String()
		if code != 2 || !strings.Contains(msg, want) || strings.Count(msg, "harness") != 1 || !strings.HasPrefix(msg, "harness serve: ") {
			t.Errorf("serve %s: exit %d, stderr %q", args, code, msg)
		}
	}
}

// Messages for a person carry no library package names: a bad
// --permission-mode is a usage error naming the flag, and an option the
// engine refuses reads without "claudecode: ".
func TestTurnMessagesWithoutPackageNames(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"turn", "--permission-mode", "yolo", "hi"}, &out, &errOut); code != 2 ||
		!strings.HasPrefix(errOut.String(), `harness turn: --permission-mode "yolo" is not one of default`) {
		t.Errorf("yolo: exit %d, stderr %q", code, errOut.String())
	}
	errOut.Reset()
	script, err := claudetest.WriteReplayerScript(t.TempDir(), "../../claudecode/testdata/transcripts/tool.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	if code := run([]string{"turn", "--claude-bin", script, "--resume", "nope", "hi"}, &out, &errOut); code != 2 ||
		errOut.String() != "harness turn: invalid turn options: resume id \"nope\" is not a UUID\n" {
		t.Errorf("bad resume: exit %d, stderr %q", code, errOut.String())
	}
	for in, want := range map[string]string{
		"claudecode: invalid turn options: x": "invalid turn options: x",
		"harness: engines: bad file":          "bad file",
		"native: a prompt is already running": "a prompt is already running",
		"--engine: harness: y":                "--engine: harness: y",
	} {
		if got := userError(errors.New(in)); got != want {
			t.Errorf("userError(%q) = %q, want %q", in, got, want)
		}
	}
}

// A usage error exits 2 in every command: an unknown flag, and a bad or
// missing argument, each with a message on stderr and nothing on stdout.
func TestUsageErrorsExit2Everywhere(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	t.Setenv("HARNESS_NICK", "")
	commands := []string{"turn", "serve", "replay", "sessions", "sessions list", "sessions show", "sessions rm",
		"personas", "personas list", "personas show", "personas prompt", "trust", "trust list", "trust show", "trust accept", "usage", "agent", "agent serve", "rpc", "tui", "mcp", "nodes", "nodes move",
		"agents", "agents start", "agents status", "agents pause", "agents resume", "agents stop", "agents skills", "agents skills install",
		"channel", "channel send", "channel read", "channel ask", "channel join", "channel part", "channel channels", "channel who",
		"channel topic", "channel compact", "channel clear", "version", "completion", "completion bash", "completion zsh", "completion fish", "help"}
	for name := range commands_() {
		if !slices.Contains(commands, name) {
			t.Errorf("command %q is not covered by this test", name)
		}
	}
	cfg := filepath.Join(t.TempDir(), "agents.yaml")
	if err := os.WriteFile(cfg, []byte("server: {name: lab}\nagents:\n  - {nick: a, agent: claude, directory: ./a, channels: ['#c']}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range commands {
		for _, tail := range []string{"--no-such-flag", "x y z extra"} {
			args := append(strings.Fields(c), strings.Fields(tail)...)
			if strings.HasPrefix(c, "agents ") {
				args = append(args, "--config", cfg) // the nicks x, y, z are not in it
			}
			var out, errOut bytes.Buffer
			if code := run(args, &out, &errOut); code != 2 || out.Len() != 0 || errOut.Len() == 0 {
				t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out.String(), errOut.String())
			}
		}
	}
	for _, args := range [][]string{
		{"turn"}, {"turn", "--max-turns", "-1", "hi"}, {"turn", "--resume", "x", "hi"}, {"turn", "--session", "bad", "hi"},
		{"turn", "--engine", "foo", "hi"}, {"turn", "--cwd", "/no/such/dir", "hi"},
		{"serve", "--max-turns", "-1"}, {"serve", "--permission-mode", "yolo"}, {"serve", "--addr", "nonsense"},
		{"replay"}, {"replay", "bad-id", "hi"}, {"sessions", "show", "bad-id"}, {"sessions", "rm", "bad-id"}, {"sessions", "show"},
		{"agent", "serve", "--engine", "foo"}, {"tui", "--engine", "foo"}, {"rpc", "--cwd", "/no/such/dir"},
		{"channel", "read", "-3"},
	} {
		var out, errOut bytes.Buffer
		if code := run(args, &out, &errOut); code != 2 || out.Len() != 0 || errOut.Len() == 0 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out.String(), errOut.String())
		}
	}
}

// commands_ lists every command of the tree ("sessions list"), the
// help command among them.
func commands_() map[string]bool {
	m := map[string]bool{}
	root := (&cli{stdout: io.Discard, stderr: io.Discard}).newRoot()
	root.InitDefaultHelpCmd()
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Hidden {
				continue
			}
			m[strings.TrimPrefix(sub.CommandPath(), "harness ")] = true
			walk(sub)
		}
	}
	walk(root)
	return m
}

// `replay` says which argument is missing.
func TestReplaySaysWhatIsMissing(t *testing.T) {
	for args, want := range map[string]string{
		"":       "missing SESSION_ID and MESSAGE",
		"id":     "missing MESSAGE",
		"id m x": `unexpected argument "x"`,
	} {
		var out, errOut bytes.Buffer
		if code := run(append([]string{"replay"}, strings.Fields(args)...), &out, &errOut); code != 2 || !strings.HasPrefix(errOut.String(), "harness replay: "+want) {
			t.Errorf("replay %s: exit %d, stderr %q", args, code, errOut.String())
		}
	}
}

// A turn that cannot start names the command that ran it: replay's
// errors said "harness turn:" (issue 34.6).
func TestStreamTurnNamesItsCommand(t *testing.T) {
	for _, command := range []string{"harness turn", "harness replay"} {
		var out, errOut bytes.Buffer
		code := streamTurn(command, func() (*harness.Turn, error) { return nil, errors.New("no agent here") }, false, &out, &errOut)
		if code == 0 || errOut.String() != command+": no agent here\n" {
			t.Errorf("%s: exit %d, stderr %q", command, code, errOut.String())
		}
	}
}

// `harness serve` without the CLI says so at start, naming what is missing
// and how to install it; with it, no warning.
func TestServeWarnsWhenTheCLIIsMissing(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	_, stop, status, errOut := startServe(t, "--addr", "127.0.0.1:0", "--root", t.TempDir(), "--claude-bin", "/nonexistent/claude", "--warm", "0")
	stop <- syscall.SIGTERM
	<-status
	msg := errOut.String()
	for _, want := range []string{"harness serve: warning: the default engine claude-code cannot run here", "/nonexistent/claude", "npm install @anthropic-ai/claude-code@" + claudecode.TestedCLIVersion} {
		if !strings.Contains(msg, want) {
			t.Errorf("stderr lacks %q:\n%s", want, msg)
		}
	}
	_, stop, status, errOut = startServe(t, "--addr", "127.0.0.1:0", "--root", t.TempDir(), "--claude-bin", claudetest.FindCLI(t), "--warm", "0")
	stop <- syscall.SIGTERM
	<-status
	if strings.Contains(errOut.String(), "warning: the default engine") {
		t.Errorf("a warning with the CLI present:\n%s", errOut.String())
	}
}

// `turn` sets two text blocks apart by one blank line, whatever the first
// ended with; stderr's lines stay whole and start on their own line.
func TestTurnTextBlocksSetApart(t *testing.T) {
	for _, first := range []string{"One.", "One.\n", "One.\n\n"} {
		var out bytes.Buffer
		var errOut bytes.Buffer
		w := bufio.NewWriter(&out)
		p := &textPrinter{out: w, errw: &errOut}
		for _, e := range []event.Event{
			{Type: event.TypeChatDelta, Text: first},
			{Type: event.TypeThinkingDelta, Text: "hm"},
			{Type: event.TypeChatDelta, Text: "Two"},
			{Type: event.TypeChatDelta, Text: "."},
			{Type: event.TypeChatComplete},
		} {
			p.print(&e)
		}
		w.Flush()
		if out.String() != "One.\n\nTwo.\n" || errOut.String() != "· thinking…\n" {
			t.Errorf("first %q: stdout %q, stderr %q", first, out.String(), errOut.String())
		}
	}
}

// The CLI-not-found hint names the pinned install commands, each quoted.
func TestCLINotFoundHint(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run([]string{"turn", "--claude-bin", "/nonexistent/claude", "hi"}, &out, &errOut)
	want := "(install it with `make cli` in a harness checkout, or `npm install @anthropic-ai/claude-code@" + claudecode.TestedCLIVersion + "`)"
	if code != 1 || !strings.Contains(errOut.String(), want) {
		t.Errorf("exit %d, stderr %q, want %q", code, errOut.String(), want)
	}
}

// `turn` shows a plan to review and its decision on the side, and the
// transcript the plan as decided: both from the fold's plan item.
func TestPlanFromTheFold(t *testing.T) {
	evs := []event.Event{
		{Type: event.TypeUserMessage, Text: "plan it"},
		{Type: event.TypeChatDelta, Text: "Here."},
		{Type: event.TypePlanReady, PlanReady: &event.PlanReady{PlanID: "p1", Plan: "# Plan\n\n1. read\n2. write"}},
		{Type: event.TypeUsageUpdate, Usage: &event.UsageUpdate{InputTokens: 3}},
		{Type: event.TypePlanResolved, PlanResolved: &event.PlanResolved{PlanID: "p1", Decision: "approve", By: "user"}},
	}
	var out, errOut bytes.Buffer
	w := bufio.NewWriter(&out)
	p := &textPrinter{out: w, errw: &errOut}
	for _, e := range evs {
		p.print(&e)
	}
	w.Flush()
	if out.String() != "Here.\n" || errOut.String() != "? plan ready: # Plan 1. read 2. write\n  approve (user)\n" {
		t.Errorf("turn: stdout %q, stderr %q", out.String(), errOut.String())
	}
	var tr bytes.Buffer
	var f fold.Fold
	for i := range evs {
		u := f.Add(&evs[i])
		for _, it := range u.Items() {
			transcriptItem(&tr, &it)
		}
	}
	if want := "\nuser: plan it\nplan: approve (user) # Plan 1. read 2. write\n"; tr.String() != want {
		t.Errorf("transcript %q, want %q", tr.String(), want)
	}
}
