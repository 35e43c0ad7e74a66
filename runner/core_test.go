package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/chirality/harness"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/runner"
)

// echo answers each prompt with "re: <prompt>".
func echo(req *claudetest.Request) claudetest.Reply {
	return claudetest.TextReply("re: " + req.LastUserText())
}

// checkToolTurn asserts the Messages of a turn that used one tool and
// then answered.
func checkToolTurn(t *testing.T, msgs []runner.Message, tool, answer string) {
	t.Helper()
	if len(msgs) != 2 {
		t.Fatalf("got %d messages, want 2 (the step with its tool use, the answer): %+v", len(msgs), msgs)
	}
	first := msgs[0]
	if first.Type != "assistant" || first.Model == "" {
		t.Errorf("message shape %+v", first)
	}
	var kinds []string
	for _, c := range first.Content {
		kinds = append(kinds, c.Type)
	}
	if strings.Join(kinds, ",") != "thinking,text,tool_use" {
		t.Fatalf("first message blocks %v, want thinking,text,tool_use", kinds)
	}
	if first.Content[0].Thinking != "let me look" || first.Content[1].Text != "Looking." {
		t.Errorf("first message %+v", first.Content)
	}
	tu := first.Content[2]
	var in map[string]any
	if tu.ID != "toolu_1" || tu.Name != tool || json.Unmarshal(tu.Input, &in) != nil || in["path"] != "." {
		t.Errorf("tool_use block %+v (input %s)", tu, tu.Input)
	}
	if msgs[1].Text() != answer || len(msgs[1].Content) != 1 {
		t.Errorf("second message %+v, want the answer %q alone", msgs[1], answer)
	}
}

func toolScript(tool string, input map[string]any) []claudetest.Reply {
	return []claudetest.Reply{
		{Blocks: []claudetest.Block{claudetest.Thinking("let me look"), claudetest.Text("Looking."), claudetest.ToolUse("toolu_1", tool, input)}},
		claudetest.TextReply("All done."),
	}
}

// testPromptsInOrder sends three prompts at once; each is answered in
// turn, in the order sent.
func testPromptsInOrder(t *testing.T, e *env, c *runner.Core, r *rec) {
	t.Helper()
	e.api.SetResponder(echo)
	before := r.endCount()
	for _, p := range []string{"one", "two", "three"} {
		if err := c.SendPrompt(p); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "three more turns", func() bool { return r.endCount() == before+3 })
	msgs, _, ends := r.snapshot()
	var got []string
	for _, m := range msgs[len(msgs)-3:] {
		got = append(got, m.Text())
	}
	if strings.Join(got, "|") != "re: one|re: two|re: three" {
		t.Errorf("answers %q, want them in order", got)
	}
	for _, e := range ends[before:] {
		if e.Outcome != runner.Completed {
			t.Errorf("turn %q ended %s (%s)", e.Prompt, e.Outcome, e.Error)
		}
	}
}

func TestCoreAnthropic(t *testing.T) {
	e := newEnv(t, "")
	os.WriteFile(filepath.Join(e.root, "notes.txt"), []byte("x"), 0o644)
	c := e.core(engine.Anthropic, nil)
	r := record(c)
	if err := c.SendPrompt("early"); !errors.Is(err, runner.ErrNotRunning) {
		t.Errorf("SendPrompt before Start = %v, want ErrNotRunning", err)
	}
	e.api.Script(toolScript("list_dir", map[string]any{"path": "."})...)
	if err := c.Start(context.Background(), "what is here?"); err != nil {
		t.Fatal(err)
	}
	if c.SessionID() == "" || !c.IsRunning() {
		t.Fatal("no session or not running after Start")
	}
	if err := c.Start(context.Background(), ""); !errors.Is(err, runner.ErrRunning) {
		t.Errorf("second Start = %v, want ErrRunning", err)
	}
	if err := c.SendPrompt("  \n"); !errors.Is(err, runner.ErrEmptyPrompt) {
		t.Errorf("blank prompt = %v, want ErrEmptyPrompt", err)
	}
	waitFor(t, "the first turn", func() bool { return r.endCount() == 1 })
	msgs, _, _ := r.snapshot()
	checkToolTurn(t, msgs, "list_dir", "All done.")
	reqs := e.api.Requests()
	if res := reqs[len(reqs)-1].ToolResults(); len(res) != 1 || !strings.Contains(res[0].Content, "notes.txt") {
		t.Errorf("the tool did not run: %+v", res)
	}
	testPromptsInOrder(t, e, c, r)
	stop(t, c)
	_, exits, _ := r.snapshot()
	if len(exits) != 1 || exits[0] != 0 || c.IsRunning() {
		t.Errorf("exits %v running %v, want one OnExit(0)", exits, c.IsRunning())
	}
	stop(t, c) // again: nothing more
	if _, exits, _ := r.snapshot(); len(exits) != 1 {
		t.Errorf("a second Stop called OnExit again: %v", exits)
	}
}

func TestCoreClaudeCode(t *testing.T) {
	e := newEnv(t, claudetest.FindCLI(t))
	c := e.core(engine.ClaudeCode, nil)
	r := record(c)
	e.api.Script(toolScript("Bash", map[string]any{"command": "echo hi", "path": "."})...)
	if err := c.Start(context.Background(), "run echo"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the first turn", func() bool { return r.endCount() == 1 })
	msgs, _, ends := r.snapshot()
	if ends[0].Outcome != runner.Completed {
		t.Fatalf("turn ended %+v", ends[0])
	}
	checkToolTurn(t, msgs, "Bash", "All done.")
	testPromptsInOrder(t, e, c, r)
	// The conversation carried on in one Claude session: the last request
	// holds every prompt.
	reqs := e.api.Requests()
	last := reqs[len(reqs)-1]
	if n := len(last.Messages); n < 8 {
		t.Errorf("last request has %d messages: the session was not resumed", n)
	}
	stop(t, c)
}

// TestCoreStopMidTurn stops a turn that is streaming: OnExit(0), the
// harness has no turn left, the CLI process is gone.
func TestCoreStopMidTurn(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	e := newEnvBin(t, wrapper(t, claudetest.FindCLI(t), pidFile, false))
	c := e.core(engine.ClaudeCode, nil)
	r := record(c)
	e.api.Script(slowReply())
	if err := c.Start(context.Background(), "talk slowly"); err != nil {
		t.Fatal(err)
	}
	pid := waitPid(t, pidFile)
	waitFor(t, "the turn to stream", func() bool { return deltas(e, c.SessionID()) > 2 })
	if err := c.SendPrompt("queued behind"); err != nil {
		t.Fatal(err)
	}
	stop(t, c)
	_, exits, ends := r.snapshot()
	if len(exits) != 1 || exits[0] != 0 {
		t.Errorf("exits %v, want [0]", exits)
	}
	if len(ends) != 1 || ends[0].Outcome != runner.Interrupted {
		t.Errorf("turn ends %+v, want one interrupted", ends)
	}
	if e.h.IsRunning(c.SessionID()) || c.IsRunning() {
		t.Error("a turn or the runner still runs after Stop")
	}
	if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("process group %d outlived Stop (kill -0: %v)", pid, err)
	}
	if c.Pending() != 1 {
		t.Errorf("pending %d, want the queued prompt kept for the next Start", c.Pending())
	}
}

func newEnvBin(t *testing.T, bin string) *env { return newEnv(t, bin) }

func slowReply() claudetest.Reply {
	return claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text(strings.Repeat("slow words ", 400))}, ChunkSize: 4, ChunkDelay: 20 * time.Millisecond}
}

func waitPid(t *testing.T, pidFile string) int {
	t.Helper()
	var pid int
	waitFor(t, "the CLI's pid", func() bool {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	})
	return pid
}

// deltas counts the chat:delta events in session id's log.
func deltas(e *env, id string) int {
	l, err := e.h.EventLog(id)
	if err != nil {
		return 0
	}
	recs, _ := l.ReadAfter(0)
	n := 0
	for _, r := range recs {
		if strings.Contains(string(r.Event), `"chat:delta"`) {
			n++
		}
	}
	return n
}

// TestCoreCrashKeeperRestarts kills the CLI from outside mid-turn: the
// runner crashes (OnExit non-zero) and the Keeper restarts it on the same
// session, whose next turn resumes the conversation with the resume
// prompt.
func TestCoreCrashKeeperRestarts(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	e := newEnv(t, wrapper(t, claudetest.FindCLI(t), pidFile, false))
	lg := zerolog.New(zerolog.NewTestWriter(t)).With().Timestamp().Logger()
	c := e.core(engine.ClaudeCode, func(cfg *runner.Config) { cfg.Logger = &lg })
	k := runner.NewKeeper(runner.KeeperConfig{Runner: c, ResumePrompt: "RESUME-AFTER-CRASH", Logger: &lg})
	r := recordKeeper(k)
	e.api.Script(claudetest.TextReply("first answer"))
	if err := k.Start(context.Background(), "hello"); err != nil {
		t.Fatal(err)
	}
	sid := c.SessionID()
	waitFor(t, "the first turn", func() bool { return r.endCount() == 1 })
	os.Remove(pidFile)
	e.api.Script(slowReply())
	before := deltas(e, sid)
	if err := k.SendPrompt("talk slowly"); err != nil {
		t.Fatal(err)
	}
	pid := waitPid(t, pidFile)
	waitFor(t, "the turn to stream", func() bool { return deltas(e, sid) > before+2 && e.h.IsRunning(sid) })
	e.api.SetResponder(echo)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the crash and the resumed turn", func() bool { return r.endCount() == 3 })
	_, _, ends := r.snapshot()
	if ends[1].Outcome != runner.Crashed || ends[1].ExitCode == 0 {
		t.Errorf("killed turn ended %+v, want a crash with a non-zero code", ends[1])
	}
	if ends[2].Outcome != runner.Completed || ends[2].Prompt != "RESUME-AFTER-CRASH" || ends[2].SessionID != sid {
		t.Errorf("after the crash: %+v, want the resume prompt completed on session %s", ends[2], sid)
	}
	if c.SessionID() != sid || !c.IsRunning() {
		t.Errorf("session %s running %v after restart", c.SessionID(), c.IsRunning())
	}
	reqs := e.api.Requests()
	last := reqs[len(reqs)-1]
	if !strings.Contains(last.LastUserText(), "RESUME-AFTER-CRASH") || !strings.Contains(requestText(last), "first answer") {
		t.Errorf("the resumed turn did not continue the conversation: %q", requestText(last))
	}
	if st := k.Status(); !st.Running || st.CircuitOpen || st.TurnCount != 3 || st.Activity != "idle" {
		t.Errorf("status %+v", st)
	}
	stop(t, k)
}

func requestText(r *claudetest.Request) string {
	var b strings.Builder
	for _, m := range r.Messages {
		for _, c := range m.Content {
			b.WriteString(c.Text)
			b.WriteString("\n")
		}
	}
	return b.String()
}

// TestCoreBreakerOnDyingCLI: a CLI that dies at every start crashes the
// runner each time; the Keeper restarts it until the third crash in the
// window opens the circuit.
func TestCoreBreakerOnDyingCLI(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "claude")
	os.WriteFile(bin, []byte("#!/bin/sh\n[ \"$1\" = --version ] && echo '2.1.329 (Claude Code)' && exit 0\necho 'simulated crash' >&2\nexit 3\n"), 0o755)
	e := newEnv(t, bin)
	c := e.core(engine.ClaudeCode, nil)
	opened := make(chan string, 1)
	k := runner.NewKeeper(runner.KeeperConfig{Runner: c, OnCircuitOpen: func(reason string) { opened <- reason }})
	r := recordKeeper(k)
	if err := k.Start(context.Background(), "hello"); err != nil {
		t.Fatal(err)
	}
	var reason string
	select {
	case reason = <-opened:
	case <-time.After(60 * time.Second):
		t.Fatal("the circuit did not open")
	}
	_, _, ends := r.snapshot()
	if len(ends) != 3 {
		t.Errorf("%d turns, want 3 (the prompt, two restarts)", len(ends))
	}
	for _, x := range ends {
		if x.Outcome != runner.Crashed || x.Kind != event.ErrorProcess || x.ExitCode != 3 {
			t.Errorf("turn end %+v, want a process crash with code 3", x)
		}
	}
	st := k.Status()
	if !st.CircuitOpen || st.Running || st.Activity != "paused" || !strings.Contains(reason, "3 crashes") {
		t.Errorf("status %+v reason %q", st, reason)
	}
	if err := k.SendPrompt("anyone?"); !errors.Is(err, runner.ErrCircuitOpen) {
		t.Errorf("SendPrompt with the circuit open = %v", err)
	}
	stop(t, k)
}

// TestCoreFailedTurnsPause: three API errors in a row pause the Keeper;
// the runner keeps running; Resume lets prompts through again.
func TestCoreFailedTurnsPause(t *testing.T) {
	e := newEnv(t, "")
	c := e.core(engine.Anthropic, nil)
	paused := make(chan string, 2)
	k := runner.NewKeeper(runner.KeeperConfig{Runner: c, OnPause: func(reason string) { paused <- reason }})
	r := recordKeeper(k)
	e.api.Script(claudetest.ErrorReply(400, "bad one"), claudetest.ErrorReply(400, "bad two"), claudetest.ErrorReply(400, "bad three"))
	if err := k.Start(context.Background(), "p1"); err != nil {
		t.Fatal(err)
	}
	k.SendPrompt("p2")
	k.SendPrompt("p3")
	var reason string
	select {
	case reason = <-paused:
	case <-time.After(60 * time.Second):
		t.Fatal("not paused after three failed turns")
	}
	if !strings.Contains(reason, "3 consecutive failed turns") || !strings.Contains(reason, "bad three") {
		t.Errorf("reason %q", reason)
	}
	_, _, ends := r.snapshot()
	for _, x := range ends {
		if x.Outcome != runner.Failed || x.Kind != event.ErrorAPI {
			t.Errorf("turn end %+v, want failed api_error", x)
		}
	}
	if st := k.Status(); !st.Paused || !st.Running || st.Activity != "paused" {
		t.Errorf("status %+v", st)
	}
	// paused means paused: a prompt now is queued, not run, and waits
	if err := k.SendPrompt("while paused"); err != nil {
		t.Errorf("SendPrompt while paused = %v, want it queued", err)
	}
	if st := k.Status(); st.Waiting != 1 || r.endCount() != 3 {
		t.Errorf("status %+v after %d turns, want 1 waiting", st, r.endCount())
	}
	e.api.SetResponder(echo)
	k.Resume()
	if err := k.SendPrompt("after resume"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the turns after resume", func() bool { return r.endCount() == 5 })
	if _, _, ends := r.snapshot(); ends[3].Outcome != runner.Completed || ends[3].Prompt != "while paused" || ends[4].Prompt != "after resume" {
		t.Errorf("after resume %+v, %+v", ends[3], ends[4])
	}
	stop(t, k)
}

// TestCorePauseHoldsTheQueue (issue 24.5): pausing with 50 mentions
// queued lets the turn under way finish and starts no other until
// Resume; status says how many wait; Resume runs them all, in order.
func TestCorePauseHoldsTheQueue(t *testing.T) {
	e := newEnv(t, "")
	c := e.core(engine.Anthropic, nil)
	k := runner.NewKeeper(runner.KeeperConfig{Runner: c})
	r := recordKeeper(k)
	release, first := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var requests atomic.Int32
	e.api.SetResponder(func(req *claudetest.Request) claudetest.Reply {
		if requests.Add(1) == 1 {
			close(first)
			<-release // the first turn runs until the test lets it end
		}
		return echo(req)
	})
	if err := k.Start(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	for i := range 51 {
		if err := k.SendPrompt("m" + strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-first:
	case <-time.After(60 * time.Second):
		t.Fatal("the first turn never reached the model")
	}
	k.Pause()
	if st := k.Status(); !st.Paused || !st.Working || st.Waiting != 50 || st.Activity != "paused" {
		t.Fatalf("status while the first turn finishes: %+v", st)
	}
	once.Do(func() { close(release) })
	waitFor(t, "the first turn to end", func() bool { return r.endCount() == 1 })
	// no new turn starts: watch for a while (the next would start at once)
	watch := time.After(500 * time.Millisecond)
	for done := false; !done; {
		select {
		case <-watch:
			done = true
		case <-time.After(5 * time.Millisecond):
			if n := requests.Load(); n != 1 {
				t.Fatalf("paused, but %d requests reached the model", n)
			}
		}
	}
	if st := k.Status(); st.TurnCount != 1 || st.Waiting != 50 || st.Working || !st.Paused {
		t.Fatalf("paused status %+v, want 1 turn, 50 waiting", st)
	}
	k.Resume()
	waitFor(t, "the 50 queued turns", func() bool { return r.endCount() == 51 })
	_, _, ends := r.snapshot()
	for i, e := range ends {
		if e.Prompt != "m"+strconv.Itoa(i) || e.Outcome != runner.Completed {
			t.Fatalf("turn %d: %q %s, want m%d completed", i, e.Prompt, e.Outcome, i)
		}
	}
	if st := k.Status(); st.Waiting != 0 || st.TurnCount != 51 {
		t.Errorf("after resume %+v", st)
	}
	stop(t, k)
}

// TestCoreTurnTimeout: a turn past TurnTimeout is ended as a crash.
func TestCoreTurnTimeout(t *testing.T) {
	e := newEnv(t, "")
	c := e.core(engine.Anthropic, func(cfg *runner.Config) { cfg.TurnTimeout = 300 * time.Millisecond })
	r := record(c)
	e.api.Script(claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text("late")}, Delay: time.Minute})
	if err := c.Start(context.Background(), "take forever"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the timeout", func() bool { _, exits, _ := r.snapshot(); return len(exits) == 1 })
	_, exits, ends := r.snapshot()
	if exits[0] == 0 || len(ends) != 1 || !ends[0].TimedOut || ends[0].Outcome != runner.Crashed {
		t.Errorf("exits %v ends %+v, want a timed-out crash", exits, ends)
	}
	if c.IsRunning() || e.h.IsRunning(c.SessionID()) {
		t.Error("still running after the timeout")
	}
	if err := c.SendPrompt("x"); !errors.Is(err, runner.ErrNotRunning) {
		t.Errorf("SendPrompt after a crash = %v", err)
	}
	stop(t, c)
	if _, exits, _ := r.snapshot(); len(exits) != 1 {
		t.Errorf("Stop after a crash called OnExit: %v", exits)
	}
}

// TestCoreClearAndCompact: Clear moves the next prompt to a new session;
// Compact summarizes, then seeds a new session with the summary.
func TestCoreClearAndCompact(t *testing.T) {
	e := newEnv(t, "")
	c := e.core(engine.Anthropic, nil)
	r := record(c)
	e.api.SetResponder(func(req *claudetest.Request) claudetest.Reply {
		if strings.HasPrefix(req.LastUserText(), "Summarize this conversation") {
			return claudetest.TextReply("SUMMARY: we talked about apples")
		}
		return echo(req)
	})
	if err := c.Start(context.Background(), "apples"); err != nil {
		t.Fatal(err)
	}
	first := c.SessionID()
	if err := c.Clear(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.SendPrompt("pears")
	waitFor(t, "two turns", func() bool { return r.endCount() == 2 })
	second := c.SessionID()
	if second == first {
		t.Fatal("Clear kept the session")
	}
	reqs := e.api.Requests()
	if n := len(reqs[len(reqs)-1].Messages); n != 1 {
		t.Errorf("after Clear the request carried %d messages, want a fresh conversation", n)
	}
	if err := c.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.SendPrompt("plums")
	waitFor(t, "the compaction and the next turn", func() bool { return r.endCount() == 3 })
	if c.SessionID() == second {
		t.Fatal("Compact kept the session")
	}
	reqs = e.api.Requests()
	last := reqs[len(reqs)-1]
	if len(last.Messages) != 1 || !strings.Contains(last.LastUserText(), "SUMMARY: we talked about apples") || !strings.HasSuffix(last.LastUserText(), "plums") {
		t.Errorf("the new session was not seeded with the summary: %q", last.LastUserText())
	}
	// the turn reports the prompt as queued: a daemon still finds the
	// mention it answers
	r.mu.Lock()
	lastStart, lastEnd := r.starts[len(r.starts)-1].Prompt, r.ends[len(r.ends)-1].Prompt
	r.mu.Unlock()
	if lastStart != "plums" || lastEnd != "plums" {
		t.Errorf("the turn after a compaction reported the prompt %q / %q, want it as queued", lastStart, lastEnd)
	}
	msgs, _, _ := r.snapshot()
	for _, m := range msgs {
		if strings.HasPrefix(m.Text(), "SUMMARY") {
			t.Error("the compaction's summary was reported as a Message")
		}
	}
	stop(t, c)
}

// TestCoreStopKillsStubbornTurn: an agent that ignores the interrupt is
// killed once StopGrace has passed, and nothing is left running. The
// driver's own interrupt sequence would take 12 s here (5 s for the
// control request, 5 s after SIGINT, 2 s after SIGTERM); Stop's kill
// takes the 200 ms grace plus the driver's kill (SIGTERM, SIGKILL 2 s
// later).
func TestCoreStopKillsStubbornTurn(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	bin := filepath.Join(dir, "claude")
	os.WriteFile(bin, []byte("#!/bin/sh\n[ \"$1\" = --version ] && echo '2.1.329 (Claude Code)' && exit 0\ntrap '' INT TERM\necho $$ > '"+pidFile+"'\nexec sleep 600\n"), 0o755)
	e := newEnvGrace(t, bin, 5*time.Second)
	lg := zerolog.New(zerolog.NewTestWriter(t)).With().Timestamp().Logger()
	c := e.core(engine.ClaudeCode, func(cfg *runner.Config) { cfg.StopGrace = 200 * time.Millisecond; cfg.Logger = &lg })
	r := record(c)
	if err := c.Start(context.Background(), "never answered"); err != nil {
		t.Fatal(err)
	}
	pid := waitPid(t, pidFile)
	waitFor(t, "the turn", func() bool { return e.h.IsRunning(c.SessionID()) })
	begin := time.Now()
	stop(t, c)
	if d := time.Since(begin); d > 6*time.Second {
		t.Errorf("Stop took %s, want the kill soon after the 200 ms grace", d)
	}
	_, exits, ends := r.snapshot()
	if len(exits) != 1 || exits[0] != 0 || len(ends) != 1 || ends[0].Outcome != runner.Interrupted {
		t.Errorf("exits %v ends %+v", exits, ends)
	}
	if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("process group %d outlived Stop (kill -0: %v)", pid, err)
	}
}

// TestCoreAnthropicStopMidTurn: Stop ends a streaming native turn:
// OnExit(0), no turn left.
func TestCoreAnthropicStopMidTurn(t *testing.T) {
	e := newEnv(t, "")
	c := e.core(engine.Anthropic, func(cfg *runner.Config) { cfg.MaxQueue = 1 })
	r := record(c)
	e.api.Script(slowReply())
	if err := c.Start(context.Background(), "talk slowly"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the turn to stream", func() bool { return deltas(e, c.SessionID()) > 2 })
	if err := c.SendPrompt("waits"); err != nil {
		t.Fatal(err)
	}
	if err := c.SendPrompt("one too many"); !errors.Is(err, runner.ErrQueueFull) {
		t.Errorf("SendPrompt past MaxQueue = %v, want ErrQueueFull", err)
	}
	stop(t, c)
	_, exits, ends := r.snapshot()
	if len(exits) != 1 || exits[0] != 0 || len(ends) != 1 || ends[0].Outcome != runner.Interrupted {
		t.Errorf("exits %v ends %+v, want OnExit(0) after an interrupted turn", exits, ends)
	}
	if e.h.IsRunning(c.SessionID()) || c.IsRunning() {
		t.Error("still running after Stop")
	}
}

// TestCoreClaudeCodeFailedTurn: an API error under the real CLI is a
// failed turn (api_error), not a crash; the runner goes on.
func TestCoreClaudeCodeFailedTurn(t *testing.T) {
	e := newEnv(t, claudetest.FindCLI(t))
	c := e.core(engine.ClaudeCode, nil)
	r := record(c)
	// A responder, not a script: the CLI sends side requests of its own.
	e.api.SetResponder(func(req *claudetest.Request) claudetest.Reply {
		if !strings.Contains(req.LastUserText(), "second") {
			return claudetest.ErrorReply(400, "bad request")
		}
		return claudetest.TextReply("fine now")
	})
	if err := c.Start(context.Background(), "first"); err != nil {
		t.Fatal(err)
	}
	c.SendPrompt("second")
	waitFor(t, "two turns", func() bool { return r.endCount() == 2 })
	_, exits, ends := r.snapshot()
	if ends[0].Outcome != runner.Failed || ends[0].Kind != event.ErrorAPI || len(exits) != 0 {
		t.Errorf("first turn %+v exits %v, want a failed api_error turn and no exit", ends[0], exits)
	}
	if ends[1].Outcome != runner.Completed || ends[1].Final != "fine now" {
		t.Errorf("second turn %+v", ends[1])
	}
	stop(t, c)
}

// TestCorePauseHoldsTheSessionsCoreQueue (issue 32): a paused agent's
// session is held in the core too, so a prompt a person queues for it
// through another door (the console, agent serve) waits: StartTurn with Queue on
// the idle session queues instead of starting. Resume releases the core
// queue, and the queued prompt runs as a turn of the runner's session.
func TestCorePauseHoldsTheSessionsCoreQueue(t *testing.T) {
	e := newEnv(t, "")
	c := e.core(engine.Anthropic, nil)
	k := runner.NewKeeper(runner.KeeperConfig{Runner: c})
	var requests atomic.Int32
	e.api.SetResponder(func(req *claudetest.Request) claudetest.Reply {
		requests.Add(1)
		return echo(req)
	})
	if err := k.Start(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	sid := c.SessionID()
	k.Pause()
	if held, err := e.h.QueueHeld(sid); err != nil || !held {
		t.Fatalf("paused, the session's core queue held = %v, %v", held, err)
	}
	tr, err := e.h.StartTurn(context.Background(), harness.TurnRequest{SessionID: sid, Message: "from the console", Queue: true})
	if !errors.Is(err, harness.ErrQueued) || tr != nil {
		t.Fatalf("StartTurn with Queue on a paused agent's idle session = %v, %v; want queued", tr, err)
	}
	if n := requests.Load(); n != 0 {
		t.Fatalf("paused, %d requests reached the model", n)
	}
	k.Resume()
	if held, err := e.h.QueueHeld(sid); err != nil || held {
		t.Fatalf("resumed, the session's core queue held = %v, %v", held, err)
	}
	waitFor(t, "the queued prompt's turn", func() bool {
		l, _ := e.h.Queue(sid)
		return len(l) == 0 && requests.Load() == 1 && !e.h.IsRunning(sid)
	})
	stop(t, k)
}

// TestCoreStartReleasesAStaleHold: the core stores a hold, the runner's
// pause is not kept across processes; a runner that starts unpaused on a
// session a previous process left held releases it, so the session's
// core queue does not wait forever.
func TestCoreStartReleasesAStaleHold(t *testing.T) {
	e := newEnv(t, "")
	s, err := e.h.NewSession(harness.SessionSpec{ProjectRoot: e.root, Mode: "pipeline", Engine: engine.Anthropic})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.h.HoldQueue(s.ID, true); err != nil {
		t.Fatal(err)
	}
	c := e.core(engine.Anthropic, func(cfg *runner.Config) { cfg.ResumeSession = s.ID })
	if err := c.Start(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	if held, err := e.h.QueueHeld(s.ID); err != nil || held {
		t.Fatalf("after Start the session's core queue held = %v, %v; want released", held, err)
	}
	stop(t, c)
}
