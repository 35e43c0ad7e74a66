package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chirality/harness/daemon"
	"github.com/chirality/harness/ipc"
	"github.com/chirality/harness/irc/irctest"
	"github.com/chirality/harness/runner"
)

func TestAgentsAndChannelHelp(t *testing.T) {
	for _, args := range [][]string{
		{"agents", "--help"}, {"agents", "start", "--help"}, {"agents", "status", "--help"}, {"agents", "stop", "-h"},
		{"agents", "skills", "--help"}, {"agents", "skills", "install", "--help"}, {"help", "agents"},
		{"channel", "--help"}, {"channel", "send", "--help"}, {"channel", "ask", "--help"}, {"help", "channel"},
	} {
		var out, errOut bytes.Buffer
		code := run(args, &out, &errOut)
		if code != 0 || out.Len() == 0 || errOut.Len() != 0 {
			t.Errorf("%v: exit %d, %d bytes on stdout, stderr %q", args, code, out.Len(), errOut.String())
		}
	}
	var out bytes.Buffer
	run([]string{"--help"}, &out, &out)
	for _, cmd := range []string{"agents", "channel"} {
		if !strings.Contains(out.String(), "\n  "+cmd+" ") {
			t.Errorf("usage does not list %s", cmd)
		}
	}
}

func TestAgentsUsageErrors(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	cfg := filepath.Join(t.TempDir(), "agents.yaml")
	os.WriteFile(cfg, []byte("server: {}\nagents:\n  - {nick: a, agent: gpt, directory: /x, channels: ['#c']}\n"), 0o600)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"agents"}, 2, "usage"},
		{[]string{"agents", "dance"}, 2, "unknown subcommand"},
		{[]string{"agents", "status"}, 2, "want one NICK"},
		{[]string{"agents", "status", "nobody"}, 1, "no daemon is running"},
		{[]string{"agents", "start", "--config", cfg}, 1, "agents.yaml:3: agents[0].agent: \"gpt\""},
		{[]string{"agents", "start", "--config", "/does/not/exist.yaml"}, 1, "no such file"},
		{[]string{"agents", "skills", "install", "--config", cfg}, 1, "agents.yaml:3"},
		{[]string{"channel"}, 2, "usage"},
		{[]string{"channel", "send", "#dev"}, 2, "want <channel> <message>"},
		{[]string{"channel", "read", "#dev", "x"}, 2, "not a positive number"},
		{[]string{"channel", "ask", "#dev", "--timeout", "-1", "q"}, 2, "--timeout"},
		{[]string{"channel", "fly"}, 2, "unknown command"},
		{[]string{"channel", "channels"}, 2, "HARNESS_NICK is not set"},
	} {
		t.Setenv("HARNESS_NICK", "")
		var out, errOut bytes.Buffer
		code := run(c.args, &out, &errOut)
		if code != c.code || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, errOut.String(), c.code, c.want)
		}
	}
}

func TestAgentsSkillsInstall(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "agents.yaml")
	os.WriteFile(cfg, []byte("server: {name: lab}\nagents:\n  - {nick: a, agent: claude, directory: ./a, channels: ['#c']}\n"+
		"  - {nick: n, agent: anthropic, directory: ./n, channels: ['#c']}\n"), 0o600)
	var out, errOut bytes.Buffer
	if code := run([]string{"agents", "skills", "install", "--config", cfg}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "a", ".claude", "skills", "irc-channel", "SKILL.md")); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "n: no skill") {
		t.Fatalf("output: %s", out.String())
	}
}

// A fake daemon answers the CLI: the skill client prints whispers on
// stderr and data readably; agents status prints a line or JSON.
func TestChannelAndAgentsAgainstASocket(t *testing.T) {
	dir, _ := os.MkdirTemp("", "hc")
	t.Cleanup(func() { os.RemoveAll(dir) })
	t.Setenv("XDG_RUNTIME_DIR", dir)
	t.Setenv("HARNESS_NICK", "alice")
	path, _ := ipc.SocketPath("alice")
	var mu sync.Mutex
	var got []ipc.Request
	whisper := []ipc.Whisper{{WhisperType: "CORRECTION", Message: "run the tests first"}}
	srv, err := ipc.Listen(ipc.ServerConfig{Path: path,
		Whispers: func() []ipc.Whisper { mu.Lock(); defer mu.Unlock(); w := whisper; whisper = nil; return w },
		Handler: func(_ context.Context, r ipc.Request) (any, error) {
			mu.Lock()
			got = append(got, r)
			mu.Unlock()
			switch r.Type {
			case ipc.CmdStatus:
				return daemon.Status{Status: runner.Status{Running: true, Activity: "idle", TurnCount: 2}, Nick: "alice",
					Connected: true, Channels: []string{"#dev"}, Description: "lab-alice (claude agent on claude-code)"}, nil
			case ipc.CmdIRCRead:
				return map[string]any{"channel": "#dev", "messages": []map[string]any{{"sender": "bob", "text": "hi"}}}, nil
			}
			return map[string]any{"channel": r.Channel}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	var out, errOut bytes.Buffer
	if code := run([]string{"channel", "send", "#dev", "hello", "world"}, &out, &errOut); code != 0 {
		t.Fatalf("send: %d %s", code, errOut.String())
	}
	if errOut.String() != "[supervisor CORRECTION] run the tests first\n" || out.String() != "sent to #dev\n" {
		t.Fatalf("send: stdout %q stderr %q", out.String(), errOut.String())
	}
	out.Reset()
	errOut.Reset()
	run([]string{"channel", "read", "#dev", "5"}, &out, &errOut)
	if !strings.Contains(out.String(), "<bob> hi") || errOut.Len() != 0 {
		t.Fatalf("read: %q %q", out.String(), errOut.String())
	}
	run([]string{"channel", "topic", "#dev", "new", "topic"}, &out, &errOut)
	run([]string{"channel", "ask", "#dev", "--timeout", "7", "ok?"}, &out, &errOut)
	mu.Lock()
	if r := got[0]; r.Type != ipc.CmdIRCSend || r.Message != "hello world" || r.Channel != "#dev" {
		t.Fatalf("send request: %+v", r)
	}
	if r := got[1]; r.Limit != 5 {
		t.Fatalf("read request: %+v", r)
	}
	if r := got[2]; r.Topic == nil || *r.Topic != "new topic" {
		t.Fatalf("topic request: %+v", r)
	}
	if r := got[3]; r.Type != ipc.CmdIRCAsk || r.Timeout != 7 || r.Message != "ok?" {
		t.Fatalf("ask request: %+v", r)
	}
	mu.Unlock()

	out.Reset()
	if code := run([]string{"agents", "status", "alice"}, &out, &errOut); code != 0 || !strings.HasPrefix(out.String(), "alice: idle, in #dev, 2 turns") {
		t.Fatalf("status: %d %q", code, out.String())
	}
	out.Reset()
	run([]string{"agents", "status", "alice", "--json"}, &out, &errOut)
	var m map[string]any
	if err := json.Unmarshal(out.Bytes(), &m); err != nil || m["activity"] != "idle" || m["description"] == nil {
		t.Fatalf("status --json: %q %v", out.String(), err)
	}
}

// harness agents start runs the agents in the foreground and exits once
// every one of them has stopped (here: harness agents stop for each).
func TestAgentsStartUntilStopped(t *testing.T) {
	f, err := irctest.NewFake()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	run1, _ := os.MkdirTemp("", "hs")
	t.Cleanup(func() { os.RemoveAll(run1) })
	t.Setenv("XDG_RUNTIME_DIR", run1)
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	dir := t.TempDir()
	host, port, _ := strings.Cut(f.Addr(), ":")
	cfg := filepath.Join(dir, "agents.yaml")
	os.WriteFile(cfg, []byte("server: {name: t, host: "+host+", port: "+port+"}\nagents:\n"+
		"  - {nick: one, agent: anthropic, directory: ., channels: ['#a']}\n"+
		"  - {nick: two, agent: anthropic, directory: ., channels: ['#a']}\n"+
		"  - {nick: three, agent: anthropic, directory: ., channels: ['#a']}\n"), 0o600)
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() { done <- run([]string{"agents", "start", "one", "two", "--config", cfg}, &out, &errOut) }()
	deadline := time.Now().Add(30 * time.Second)
	for strings.Count(out.String(), ": up as") < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("agents did not come up: %s %s", out.String(), errOut.String())
		}
		time.Sleep(20 * time.Millisecond) // poll the command's output
	}
	if !strings.Contains(out.String(), "one: up as t-one") || strings.Contains(out.String(), "three") {
		t.Fatalf("started: %s", out.String())
	}
	// a second start of a running agent is refused, and says so
	var o2, e2 bytes.Buffer
	if code := run([]string{"agents", "start", "one", "--config", cfg}, &o2, &e2); code != 1 ||
		!strings.Contains(e2.String(), "one: ipc: a daemon already listens") {
		t.Fatalf("second start: %d %q %q", code, o2.String(), e2.String())
	}
	for _, nick := range []string{"one", "two"} {
		var o, e bytes.Buffer
		if code := run([]string{"agents", "stop", nick}, &o, &e); code != 0 {
			t.Fatalf("stop %s: %d %s", nick, code, e.String())
		}
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("start exited %d: %s", code, errOut.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("start did not exit after its agents stopped")
	}
	if m, _ := filepath.Glob(filepath.Join(run1, "*")); len(m) != 0 {
		t.Fatalf("left in the run dir: %v", m)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }
