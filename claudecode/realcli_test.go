package claudecode_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chirality/harness/claudecode"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
)

// These tests run the real, pinned Claude Code CLI against the fake
// Messages API: it really streams, runs tools and resumes, offline.

type realCLI struct {
	t    *testing.T
	api  *claudetest.FakeAPI
	mgr  *claudecode.Manager
	home string
	cwd  string
}

func newRealCLI(t *testing.T, extraEnv ...string) *realCLI {
	t.Helper()
	bin := claudetest.FindCLI(t)
	api, err := claudetest.NewFakeAPI()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { api.Close() })
	home := t.TempDir()
	cwd := t.TempDir()
	env := append(claudetest.BaseEnv(home), api.Env()...)
	env = append(env, extraEnv...)
	mgr := claudecode.NewManager(claudecode.Config{Binary: bin, Env: env, InterruptGrace: time.Second, KillGrace: 2 * time.Second})
	return &realCLI{t: t, api: api, mgr: mgr, home: home, cwd: cwd}
}

// turn runs one turn to its end and returns its events and final error.
func (r *realCLI) turn(key, message string, opts claudecode.TurnOpts) ([]event.Event, error) {
	r.t.Helper()
	if opts.Cwd == "" {
		opts.Cwd = r.cwd
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tr, err := r.mgr.StartTurn(ctx, key, message, opts)
	if err != nil {
		r.t.Fatalf("StartTurn: %v", err)
	}
	defer tr.Close()
	var evs []event.Event
	for tr.Next() {
		evs = append(evs, tr.Event())
	}
	assertWellFormed(r.t, evs)
	return evs, tr.Err()
}

// assertWellFormed checks the stream's invariants: process:exit exactly
// once and last, exactly one terminal session event before it, and every
// event stamped with the session key.
func assertWellFormed(t *testing.T, evs []event.Event) {
	t.Helper()
	if n := len(evs); n > 0 && evs[n-1].Exit != nil { // engine.TurnExit: 0 exactly when the turn completed
		completed := false
		for _, e := range evs {
			completed = completed || e.Type == event.TypeSessionComplete
		}
		if (evs[n-1].Exit.Code == 0) != completed {
			t.Errorf("process:exit code %d, completed %v: the code must be 0 exactly when the turn completed", evs[n-1].Exit.Code, completed)
		}
	}
	if len(evs) == 0 {
		t.Fatal("no events")
	}
	if evs[len(evs)-1].Type != event.TypeProcessExit {
		t.Fatalf("last event is %s, want process:exit", evs[len(evs)-1].Type)
	}
	exits, terminals := 0, 0
	for _, e := range evs {
		if e.SessionID != evs[0].SessionID || e.SessionID == "" {
			t.Errorf("event %s has sessionId %q", e.Type, e.SessionID)
		}
		switch e.Type {
		case event.TypeProcessExit:
			exits++
		case event.TypeSessionComplete, event.TypeSessionError:
			terminals++
		}
	}
	if exits != 1 || terminals != 1 {
		t.Fatalf("%d process:exit and %d terminal events, want 1 and 1", exits, terminals)
	}
}

func ofType(evs []event.Event, typ event.Type) []event.Event {
	var out []event.Event
	for _, e := range evs {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func joinText(evs []event.Event, typ event.Type) string {
	var b strings.Builder
	for _, e := range ofType(evs, typ) {
		b.WriteString(e.Text)
	}
	return b.String()
}

func TestRealCLIText(t *testing.T) {
	r := newRealCLI(t)
	answer := "Hello **world** — ünïcode ✓ 日本語 🎉 \"quotes\" \\ back\\slash\nnew line <tag> & amp"
	r.api.Script(claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text(answer)}, ChunkSize: 3})
	evs, err := r.turn("s-text", "say hello", claudecode.TurnOpts{})
	if err != nil {
		t.Fatalf("turn failed: %v", err)
	}
	if evs[0].Type != event.TypeSessionInit {
		t.Fatalf("first event %s, want session:init", evs[0].Type)
	}
	init := evs[0].Init
	if init.ConversationID == "" || init.Model == "" || !slices.Contains(init.Tools, "Bash") {
		t.Errorf("session:init = %+v", init)
	}
	if init.CLIVersion != claudecode.TestedCLIVersion {
		t.Errorf("CLI version %q, tested against %q: re-record transcripts and check shapes", init.CLIVersion, claudecode.TestedCLIVersion)
	}
	if got := joinText(evs, event.TypeChatDelta); got != answer {
		t.Errorf("streamed text = %q, want %q", got, answer)
	}
	if n := len(ofType(evs, event.TypeChatDelta)); n < 5 {
		t.Errorf("%d chat:delta events: the answer was not streamed token by token", n)
	}
	if c := ofType(evs, event.TypeChatComplete); len(c) != 1 || c[0].Text != answer {
		t.Errorf("chat:complete = %+v", c)
	}
	done := ofType(evs, event.TypeSessionComplete)
	if len(done) != 1 || done[0].Complete.CostUSD <= 0 || !json.Valid(done[0].Complete.Usage) {
		t.Errorf("session:complete = %+v", done)
	}
	if ex := evs[len(evs)-1].Exit; ex.Code != 0 || ex.Signal != "" {
		t.Errorf("process:exit = %+v", ex)
	}
	// The prompt went on stdin as a user message and reached the model.
	reqs := r.api.Requests()
	if len(reqs) == 0 || !strings.Contains(reqs[len(reqs)-1].LastUserText(), "say hello") {
		t.Errorf("the prompt did not reach the API")
	}
}

func TestRealCLIToolRoundTrip(t *testing.T) {
	r := newRealCLI(t)
	r.api.Script(
		claudetest.Reply{Blocks: []claudetest.Block{
			claudetest.Text("Let me check."),
			claudetest.ToolUse("toolu_echo1", "Bash", map[string]any{"command": "echo tool-says-hi", "description": "greet"}),
		}},
		claudetest.TextReply("The tool said hi."),
	)
	evs, err := r.turn("s-tool", "run echo", claudecode.TurnOpts{AllowedTools: []string{"Bash"}})
	if err != nil {
		t.Fatalf("turn failed: %v", err)
	}
	starts := ofType(evs, event.TypeToolStart)
	if len(starts) != 1 {
		t.Fatalf("%d tool:start events, want exactly 1", len(starts))
	}
	ts := starts[0].ToolStart
	var input map[string]string
	if err := json.Unmarshal(ts.Input, &input); err != nil || ts.Name != "Bash" || ts.ToolUseID != "toolu_echo1" || input["command"] != "echo tool-says-hi" {
		t.Errorf("tool:start = %+v (%s)", ts, ts.Input)
	}
	results := ofType(evs, event.TypeToolResult)
	if len(results) != 1 || results[0].ToolResult.ToolUseID != "toolu_echo1" || !strings.Contains(results[0].ToolResult.Content, "tool-says-hi") || results[0].ToolResult.IsError {
		t.Errorf("tool:result = %+v", results)
	}
	if got := joinText(evs, event.TypeChatDelta); got != "Let me check.The tool said hi." {
		t.Errorf("text = %q", got)
	}
	// The model's second request carried the tool's output.
	var seen bool
	for _, req := range r.api.Requests() {
		for _, tr := range req.ToolResults() {
			if tr.ToolUseID == "toolu_echo1" && strings.Contains(tr.Content, "tool-says-hi") {
				seen = true
			}
		}
	}
	if !seen {
		t.Error("no request carried the tool_result")
	}
}

func TestRealCLIThinking(t *testing.T) {
	r := newRealCLI(t)
	r.api.Script(claudetest.Reply{Blocks: []claudetest.Block{claudetest.Thinking("Let me think about this carefully."), claudetest.Text("42")}})
	evs, err := r.turn("s-think", "meaning of life?", claudecode.TurnOpts{})
	if err != nil {
		t.Fatalf("turn failed: %v", err)
	}
	if got := joinText(evs, event.TypeThinkingDelta); got != "Let me think about this carefully." {
		t.Errorf("thinking = %q", got)
	}
	if got := joinText(evs, event.TypeChatDelta); got != "42" {
		t.Errorf("text = %q", got)
	}
}

func TestRealCLIResume(t *testing.T) {
	r := newRealCLI(t)
	r.api.Script(claudetest.TextReply("first answer"), claudetest.TextReply("second answer"))
	evs, err := r.turn("s-resume", "remember the word PAPAYA", claudecode.TurnOpts{})
	if err != nil {
		t.Fatal(err)
	}
	claudeID := evs[0].Init.ConversationID
	evs, err = r.turn("s-resume", "what was the word?", claudecode.TurnOpts{Resume: claudeID})
	if err != nil {
		t.Fatalf("resumed turn failed: %v", err)
	}
	if got := evs[0].Init.ConversationID; got != claudeID {
		t.Errorf("resumed session id %q, want %q", got, claudeID)
	}
	reqs := r.api.Requests()
	last := reqs[len(reqs)-1]
	var history strings.Builder
	for _, m := range last.Messages {
		for _, c := range m.Content {
			history.WriteString(c.Text)
		}
	}
	if !strings.Contains(history.String(), "PAPAYA") || !strings.Contains(history.String(), "first answer") {
		t.Errorf("resumed request lacks the earlier conversation: %q", history.String())
	}
}

func TestRealCLIResumeUnknownSession(t *testing.T) {
	r := newRealCLI(t)
	evs, err := r.turn("s-gone", "hello again", claudecode.TurnOpts{Resume: "0b7e4c8a-1111-4222-8333-944455556666"})
	if !errors.Is(err, claudecode.ErrResumeNotFound) {
		t.Fatalf("err = %v, want ErrResumeNotFound", err)
	}
	se := ofType(evs, event.TypeSessionError)
	if len(se) != 1 || se[0].Error.Kind != event.ErrorResumeNotFound {
		t.Errorf("session:error = %+v", se[0].Error)
	}
}

func TestRealCLIAPIError(t *testing.T) {
	r := newRealCLI(t)
	r.api.SetResponder(func(*claudetest.Request) claudetest.Reply {
		return claudetest.ErrorReply(400, "fake upstream rejected the request")
	})
	evs, err := r.turn("s-apierr", "hi", claudecode.TurnOpts{})
	if !errors.Is(err, claudecode.ErrAPI) {
		t.Fatalf("err = %v, want ErrAPI", err)
	}
	se := ofType(evs, event.TypeSessionError)[0].Error
	if se.Kind != event.ErrorAPI || se.APIErrorStatus != 400 || !strings.Contains(se.Error, "fake upstream rejected the request") {
		t.Errorf("session:error = %+v", se)
	}
	// The CLI reports this under subtype "success": no chat:complete.
	if len(ofType(evs, event.TypeChatComplete)) != 0 || len(ofType(evs, event.TypeSessionComplete)) != 0 {
		t.Error("an API error was reported as a completed turn")
	}
}

func TestRealCLIMaxTurns(t *testing.T) {
	r := newRealCLI(t)
	r.api.SetResponder(func(*claudetest.Request) claudetest.Reply {
		return claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse("", "Bash", map[string]any{"command": "echo again"})}}
	})
	evs, err := r.turn("s-max", "loop forever", claudecode.TurnOpts{MaxTurns: 2, AllowedTools: []string{"Bash"}})
	if !errors.Is(err, claudecode.ErrMaxTurns) {
		t.Fatalf("err = %v, want ErrMaxTurns", err)
	}
	if se := ofType(evs, event.TypeSessionError)[0].Error; se.Kind != event.ErrorMaxTurns || se.Subtype != "error_max_turns" {
		t.Errorf("session:error = %+v", se)
	}
	if n := len(ofType(evs, event.TypeToolStart)); n != 2 {
		t.Errorf("%d tool starts, want 2", n)
	}
}

func TestRealCLILargeAnswer(t *testing.T) {
	r := newRealCLI(t)
	big := strings.Repeat("0123456789abcdef☃", 128<<10) // ~2.4 MB, multi-byte runes
	r.api.Script(claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text(big)}, ChunkSize: 256 << 10})
	evs, err := r.turn("s-big", "write a lot", claudecode.TurnOpts{})
	if err != nil {
		t.Fatal(err)
	}
	if got := joinText(evs, event.TypeChatDelta); got != big {
		t.Errorf("streamed %d bytes, want %d", len(got), len(big))
	}
	if c := ofType(evs, event.TypeChatComplete); len(c) != 1 || c[0].Text != big {
		t.Error("chat:complete lost the large answer")
	}
}

func TestRealCLIInterruptMidStream(t *testing.T) {
	r := newRealCLI(t)
	r.api.Script(claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text(strings.Repeat("slow words ", 400))}, ChunkSize: 4, ChunkDelay: 20 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tr, err := r.mgr.StartTurn(ctx, "s-int", "talk slowly", claudecode.TurnOpts{Cwd: r.cwd})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if err := r.mgr.Interrupt("other-session"); !errors.Is(err, engine.ErrNotRunning) {
		t.Errorf("Interrupt(unknown) = %v, want ErrNotRunning", err)
	}
	if _, err := r.mgr.StartTurn(ctx, "s-int", "again", claudecode.TurnOpts{Cwd: r.cwd}); !errors.Is(err, engine.ErrBusy) {
		t.Errorf("second StartTurn = %v, want ErrBusy", err)
	}
	var evs []event.Event
	interrupted := false
	for tr.Next() {
		e := tr.Event()
		evs = append(evs, e)
		if e.Type == event.TypeChatDelta && !interrupted {
			interrupted = true
			if err := r.mgr.Interrupt("s-int"); err != nil {
				t.Fatal(err)
			}
			_ = r.mgr.Interrupt("s-int") // idempotent
		}
	}
	assertWellFormed(t, evs)
	if !errors.Is(tr.Err(), claudecode.ErrInterrupted) {
		t.Fatalf("Err = %v, want ErrInterrupted", tr.Err())
	}
	se := ofType(evs, event.TypeSessionError)[0].Error
	if se.Kind != event.ErrorInterrupted {
		t.Errorf("session:error kind %q, want interrupted", se.Kind)
	}
	if got := joinText(evs, event.TypeChatDelta); len(got) >= 4400 {
		t.Errorf("the whole answer streamed (%d bytes): the interrupt did not stop it", len(got))
	}
	assertGroupGone(t, tr.Pid())
	if r.mgr.IsRunning("s-int") {
		t.Error("IsRunning after the turn ended")
	}
}

func TestRealCLIKillStopsToolChildren(t *testing.T) {
	r := newRealCLI(t)
	marker := filepath.Join(r.cwd, "sleeper.pid")
	r.api.Script(claudetest.Reply{Blocks: []claudetest.Block{
		claudetest.ToolUse("toolu_sleep", "Bash", map[string]any{"command": "echo $$ > " + marker + "; sleep 300"}),
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tr, err := r.mgr.StartTurn(ctx, "s-kill", "sleep", claudecode.TurnOpts{Cwd: r.cwd, AllowedTools: []string{"Bash"}})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	var evs []event.Event
	for tr.Next() {
		e := tr.Event()
		evs = append(evs, e)
		if e.Type == event.TypeToolStart {
			waitForFile(t, marker)
			_ = tr.Kill()
		}
	}
	assertWellFormed(t, evs)
	if !errors.Is(tr.Err(), claudecode.ErrKilled) {
		t.Errorf("Err = %v, want ErrKilled", tr.Err())
	}
	assertGroupGone(t, tr.Pid())
	pidText, _ := os.ReadFile(marker)
	var pid int
	if _, err := fmtSscan(strings.TrimSpace(string(pidText)), &pid); err != nil || pid <= 0 {
		t.Fatalf("bad pid file %q", pidText)
	}
	if processAlive(pid) {
		t.Errorf("the Bash tool's shell (pid %d) outlived the turn", pid)
	}
}

func TestRealCLISystemPromptAndTools(t *testing.T) {
	r := newRealCLI(t)
	promptFile := filepath.Join(t.TempDir(), "system.txt")
	if err := os.WriteFile(promptFile, []byte("You are the REVIEWER persona. Codeword: MARMALADE."), 0o600); err != nil {
		t.Fatal(err)
	}
	r.api.Script(claudetest.TextReply("ok"))
	evs, err := r.turn("s-sys", "hi", claudecode.TurnOpts{
		AppendSystemPromptFile: promptFile,
		Tools:                  []string{"Read", "Grep", "Bash"},
		DisallowedTools:        []string{"Bash"},
		Model:                  "claude-test-model",
	})
	if err != nil {
		t.Fatal(err)
	}
	req := r.api.Requests()[0]
	if !strings.Contains(req.SystemText(), "Codeword: MARMALADE") {
		t.Error("the appended system prompt did not reach the model")
	}
	// The CLI adds a placeholder for deferred tools; the real ones are what
	// --tools and --disallowedTools decided.
	tools := slices.DeleteFunc(slices.Clone(req.Tools), func(s string) bool { return s == "DeferredToolPlaceholder" })
	slices.Sort(tools)
	if !slices.Equal(tools, []string{"Grep", "Read"}) {
		t.Errorf("tools offered = %v, want [Grep Read]", req.Tools)
	}
	if req.Model != "claude-test-model" || evs[0].Init.Model != "claude-test-model" {
		t.Errorf("model = %q / %q", req.Model, evs[0].Init.Model)
	}
}

func TestRealCLIEnvironmentFiltered(t *testing.T) {
	r := newRealCLI(t, "MY_SERVICE_TOKEN=tok-must-not-leak", "DATABASE_URL=postgres://u:pw-must-not-leak@h/db", "HARNESS_VISIBLE=visible-value")
	r.api.Script(
		claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse("toolu_env", "Bash", map[string]any{"command": "env"})}},
		claudetest.TextReply("done"),
	)
	evs, err := r.turn("s-env", "show env", claudecode.TurnOpts{AllowedTools: []string{"Bash"}})
	if err != nil {
		t.Fatal(err)
	}
	res := ofType(evs, event.TypeToolResult)
	if len(res) != 1 {
		t.Fatalf("%d tool results", len(res))
	}
	out := res[0].ToolResult.Content
	if !strings.Contains(out, "visible-value") {
		t.Fatalf("env output lacks an ordinary variable; got %q", out)
	}
	for _, secret := range []string{"tok-must-not-leak", "pw-must-not-leak"} {
		if strings.Contains(out, secret) {
			t.Errorf("secret %q reached the child", secret)
		}
	}
}

// assertGroupGone checks that no live process is left in the group led
// by pid. Zombies do not count: they are dead, waiting for whichever
// process inherited them to reap them.
func assertGroupGone(t *testing.T, pid int) {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		pgrp, state, ok := procStat(p)
		if ok && pgrp == pid && state != "Z" {
			t.Errorf("process %d of group %d still alive after the turn (state %s)", p, pid, state)
		}
	}
}

// processAlive reports whether pid is a live (not zombie) process.
func processAlive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	_, state, ok := procStat(pid)
	return ok && state != "Z"
}

// procStat reads a process's group and state from /proc/PID/stat.
func procStat(pid int) (pgrp int, state string, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, "", false
	}
	// The command name is in parentheses and may contain spaces.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, "", false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 3 {
		return 0, "", false
	}
	pgrp, err = strconv.Atoi(f[2])
	return pgrp, f[0], err == nil
}

func waitForFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) > 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s did not appear", path)
}

func fmtSscan(s string, v *int) (int, error) { return fmt.Sscan(s, v) }
