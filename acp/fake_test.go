package acp_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"bytes"
	"github.com/chirality/harness/acp"
	"github.com/chirality/harness/acp/acptest"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
)

func newFake(t *testing.T, mod func(*acp.Config)) *acp.Engine {
	t.Helper()
	cfg := acp.Config{
		Name: "fake", Command: []string{"fakeagent"}, Binary: os.Args[0],
		Env:       []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()},
		ExtraEnv:  []string{acptest.AgentEnv, "ACPTEST_STATE=" + t.TempDir()},
		StopGrace: 500 * time.Millisecond, InterruptGrace: time.Second,
	}
	if mod != nil {
		mod(&cfg)
	}
	e, err := acp.NewEngine(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := e.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return e
}

// collect reads a turn to its end, failing the test after d.
func collect(t *testing.T, tr engine.Turn, d time.Duration) ([]event.Event, error) {
	t.Helper()
	type res struct {
		evs []event.Event
		err error
	}
	ch := make(chan res, 1)
	go func() {
		var evs []event.Event
		for tr.Next() {
			evs = append(evs, tr.Event())
		}
		ch <- res{evs, tr.Err()}
	}()
	select {
	case r := <-ch:
		checkOrder(t, r.evs)
		return r.evs, r.err
	case <-time.After(d):
		_ = tr.Kill()
		r := <-ch
		t.Fatalf("turn did not end within %v; events: %v", d, types(r.evs))
		return nil, nil
	}
}

func types(evs []event.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, string(e.Type))
	}
	return out
}

// checkOrder applies the engine contract: session:init first (when
// present), exactly one end event, process:exit last, one tool:start per
// tool use before its result.
func checkOrder(t *testing.T, evs []event.Event) {
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
	if len(evs) == 0 || evs[len(evs)-1].Type != event.TypeProcessExit {
		t.Fatalf("stream does not end with process:exit: %v", types(evs))
	}
	ends, starts := 0, map[string]int{}
	for i, e := range evs {
		switch e.Type {
		case event.TypeSessionInit:
			if i != 0 {
				t.Errorf("session:init at %d: %v", i, types(evs))
			}
		case event.TypeSessionComplete, event.TypeSessionError:
			ends++
			if i != len(evs)-2 {
				t.Errorf("end event not just before process:exit: %v", types(evs))
			}
		case event.TypeProcessExit:
			if i != len(evs)-1 {
				t.Errorf("process:exit not last")
			}
		case event.TypeToolStart:
			starts[e.ToolStart.ToolUseID]++
		case event.TypeToolResult:
			if starts[e.ToolResult.ToolUseID] != 1 {
				t.Errorf("tool:result of %s without exactly one tool:start before it", e.ToolResult.ToolUseID)
			}
		}
		if e.SessionID == "" {
			t.Errorf("event %s without sessionId", e.Type)
		}
	}
	if ends != 1 {
		t.Errorf("%d end events: %v", ends, types(evs))
	}
	for id, n := range starts {
		if n != 1 {
			t.Errorf("tool %s started %d times", id, n)
		}
	}
}

func chat(evs []event.Event) string {
	var b strings.Builder
	for _, e := range evs {
		if e.Type == event.TypeChatDelta {
			b.WriteString(e.Text)
		}
	}
	return b.String()
}

func find(evs []event.Event, typ event.Type) *event.Event {
	for i := range evs {
		if evs[i].Type == typ {
			return &evs[i]
		}
	}
	return nil
}

func count(evs []event.Event, typ event.Type) int {
	n := 0
	for _, e := range evs {
		if e.Type == typ {
			n++
		}
	}
	return n
}

func run(t *testing.T, e *acp.Engine, req engine.Request) ([]event.Event, error) {
	t.Helper()
	if req.SessionKey == "" {
		req.SessionKey = "s1"
	}
	if req.Cwd == "" {
		req.Cwd = t.TempDir()
	}
	tr, err := e.StartTurn(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	return collect(t, tr, 30*time.Second)
}

// processGone polls until pid no longer exists (it was reaped).
func processGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("process %d still exists", pid)
}

func TestTextTurnKeepsTheAgentForTheNextTurn(t *testing.T) {
	e := newFake(t, nil)
	cwd := t.TempDir()
	evs, err := run(t, e, engine.Request{Message: "hello", Cwd: cwd, SystemPrompt: "be terse"})
	if err != nil {
		t.Fatal(err)
	}
	init := evs[0].Init
	if init == nil || init.Engine != "fake" || init.ConversationID == "" || init.CLIVersion != "0.1.0" {
		t.Fatalf("session:init = %+v", init)
	}
	got := chat(evs)
	if !strings.Contains(got, "be terse") || !strings.HasSuffix(got, "| hello") {
		t.Errorf("first prompt lacks the preamble block then the message: %q", got)
	}
	if c := find(evs, event.TypeChatComplete); c == nil || c.Text != got {
		t.Errorf("chat:complete = %+v, want the whole message", c)
	}
	if find(evs, event.TypeThinkingDelta) == nil {
		t.Error("no thinking:delta")
	}
	if x := evs[len(evs)-1].Exit; x.Code != 0 {
		t.Errorf("process:exit = %+v", x)
	}
	pid := e.Pid("s1")
	if pid == 0 {
		t.Fatal("the session's agent did not stay")
	}
	evs, err = run(t, e, engine.Request{Message: "recall", Cwd: cwd, SystemPrompt: "be terse", Resume: init.ConversationID})
	if err != nil {
		t.Fatal(err)
	}
	if got := chat(evs); !strings.HasPrefix(got, "you said: ") || !strings.HasSuffix(got, "hello") {
		t.Errorf("second turn does not remember the first: %q", got)
	}
	if evs[0].Init.ConversationID != init.ConversationID || e.Pid("s1") != pid {
		t.Errorf("second turn ran on another session or process")
	}
	evs, _ = run(t, e, engine.Request{Message: "again", Cwd: cwd, SystemPrompt: "be terse", Resume: init.ConversationID})
	if strings.Contains(chat(evs), "be terse") {
		t.Errorf("the preamble was sent again: %q", chat(evs))
	}
	e.Close("s1")
	processGone(t, pid)
	if e.Pid("s1") != 0 {
		t.Error("Close left the agent")
	}
}

func TestCrashMidTurnThenResume(t *testing.T) {
	e := newFake(t, nil)
	cwd := t.TempDir()
	evs, err := run(t, e, engine.Request{Message: "crash now", Cwd: cwd})
	var te *engine.TurnError
	if !errors.As(err, &te) || te.Kind != event.ErrorProcess {
		t.Fatalf("err = %v, want a process TurnError", err)
	}
	se := find(evs, event.TypeSessionError).Error
	if se.Kind != event.ErrorProcess || se.ExitCode == nil || *se.ExitCode != 3 {
		t.Errorf("session:error = %+v", se)
	}
	if x := evs[len(evs)-1].Exit; x.Code != 3 {
		t.Errorf("process:exit = %+v, want the agent's status 3", x)
	}
	if chat(evs) != "about to crash" {
		t.Errorf("chat = %q", chat(evs))
	}
	if e.Pid("s1") != 0 {
		t.Error("a dead agent is still the session's")
	}
	// The next turn starts a new agent that loads the session.
	evs, err = run(t, e, engine.Request{Message: "recall", Cwd: cwd, Resume: evs[0].Init.ConversationID})
	if err != nil {
		t.Fatal(err)
	}
	if got := chat(evs); got != "you said: crash now" {
		t.Errorf("after session/load: %q", got)
	}
}

func TestUnknownUpdateKindsAreIgnored(t *testing.T) {
	e := newFake(t, nil)
	evs, err := run(t, e, engine.Request{Message: "unknown"})
	if err != nil {
		t.Fatal(err)
	}
	if got := chat(evs); got != "[hologram]still here" {
		t.Errorf("chat = %q", got)
	}
	if n := count(evs, event.TypeToolStart); n != 0 {
		t.Errorf("%d tool:start from a tool call without a usable id", n)
	}
}

func TestUnservedRequestIsMethodNotFound(t *testing.T) {
	e := newFake(t, nil)
	evs, err := run(t, e, engine.Request{Message: "unserved"})
	if err != nil {
		t.Fatal(err)
	}
	if got := chat(evs); got != "unserved: -32601" {
		t.Errorf("chat = %q", got)
	}
}

// An agent that never answers a prompt it was sent is stopped
// InterruptGrace after Interrupt. The interrupt comes once session/prompt
// is on the agent's stdin: one that comes before it ends the turn without
// a prompt and keeps the (idle) agent, which
// TestInterruptBeforeThePromptKeepsTheAgent covers. (Interrupting right
// after session:init raced the two, and failed one run in six.)
func TestNeverAnsweringAgentIsStoppedOnInterrupt(t *testing.T) {
	e := newFake(t, nil)
	prompted := make(chan struct{})
	var once sync.Once
	acp.SetTap(e, func(dir string, b []byte) {
		if dir == "out" && bytes.Contains(b, []byte(`"session/prompt"`)) {
			once.Do(func() { close(prompted) })
		}
	})
	tr, err := e.StartTurn(context.Background(), engine.Request{SessionKey: "s1", Message: "hang", Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	pid := tr.(*acp.Turn).Pid()
	if !tr.Next() || tr.Event().Type != event.TypeSessionInit {
		t.Fatal("no session:init")
	}
	select {
	case <-prompted:
	case <-time.After(10 * time.Second):
		t.Fatal("session/prompt was not sent")
	}
	start := time.Now()
	_ = tr.Interrupt()
	evs, err := collect(t, tr, 10*time.Second)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("interrupt took %v", d)
	}
	var te *engine.TurnError
	if !errors.As(err, &te) || te.Kind != event.ErrorInterrupted {
		t.Errorf("err = %v, want interrupted", err)
	}
	if x := evs[len(evs)-1].Exit; x.Signal != "SIGKILL" {
		t.Errorf("process:exit = %+v", x)
	}
	processGone(t, pid)
}

// An Interrupt before the prompt is sent ends the turn interrupted at
// once, sends no prompt, and keeps the agent for the session's next turn,
// which it answers.
func TestInterruptBeforeThePromptKeepsTheAgent(t *testing.T) {
	e := newFake(t, nil)
	var mu sync.Mutex
	prompts := 0
	acp.SetTap(e, func(dir string, b []byte) {
		if dir == "out" && bytes.Contains(b, []byte(`"session/prompt"`)) {
			mu.Lock()
			prompts++
			mu.Unlock()
		}
	})
	cwd := t.TempDir()
	tr, err := e.StartTurn(context.Background(), engine.Request{SessionKey: "s1", Message: "hang", Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	pid := tr.(*acp.Turn).Pid()
	_ = tr.Interrupt() // before session:init is read: the turn is still setting up
	evs, err := collect(t, tr, 10*time.Second)
	var te *engine.TurnError
	if !errors.As(err, &te) || te.Kind != event.ErrorInterrupted {
		t.Fatalf("err = %v, want interrupted", err)
	}
	mu.Lock()
	n := prompts
	mu.Unlock()
	if n != 0 {
		// The interrupt came after the prompt was out: then the agent is
		// stopped (TestNeverAnsweringAgentIsStoppedOnInterrupt). It cannot
		// here: Interrupt was called before StartTurn's setup could end.
		t.Fatalf("a prompt was sent after Interrupt (%d); events %v", n, evs)
	}
	if x := evs[len(evs)-1].Exit; x == nil || x.Code == 0 || x.Signal != "" {
		t.Errorf("process:exit = %+v, want a non-zero code and no signal (the agent goes on)", x)
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Errorf("the idle agent %d was stopped: %v", pid, err)
	}
	evs, err = run(t, e, engine.Request{SessionKey: "s1", Message: "hello", Cwd: cwd})
	if err != nil {
		t.Fatalf("next turn: %v", err)
	}
	if got := evs[0].Init; got == nil {
		t.Fatalf("next turn: %v", evs)
	}
}

// An agent that never answers is stopped by Kill; the ctx the turn was
// started with is not what stops it (engine.Engine's rule: engines'
// TestExitCodeTable).
func TestNeverAnsweringAgentIsKilled(t *testing.T) {
	e := newFake(t, nil)
	tr, err := e.StartTurn(context.Background(), engine.Request{SessionKey: "s1", Message: "hang", Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if !tr.Next() {
		t.Fatal("no event")
	}
	_ = tr.Kill()
	_, err = collect(t, tr, 10*time.Second)
	var te *engine.TurnError
	if !errors.As(err, &te) || te.Kind != event.ErrorKilled {
		t.Errorf("err = %v, want killed", err)
	}
}

func TestInterruptEndsTheTurnAndKeepsTheAgent(t *testing.T) {
	e := newFake(t, nil)
	tr, err := e.StartTurn(context.Background(), engine.Request{SessionKey: "s1", Message: "slow", Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	for tr.Next() {
		if tr.Event().Type == event.TypeChatDelta {
			break
		}
	}
	_ = tr.Interrupt()
	evs, err := collect(t, tr, 10*time.Second)
	var te *engine.TurnError
	if !errors.As(err, &te) || te.Kind != event.ErrorInterrupted {
		t.Fatalf("err = %v", err)
	}
	if se := find(evs, event.TypeSessionError).Error; se.Subtype != "cancelled" {
		t.Errorf("session:error = %+v, want the agent's own cancelled", se)
	}
	if x := evs[len(evs)-1].Exit; x.Code != 1 || x.Signal != "" {
		t.Errorf("process:exit = %+v", x)
	}
	if e.Pid("s1") == 0 {
		t.Error("an interrupted turn stopped the session's agent")
	}
	if _, err := run(t, e, engine.Request{Message: "hello"}); err != nil {
		t.Errorf("the next turn: %v", err)
	}
}

// approver answers from a script and records what the stream had shown
// when it was asked.
type approver struct {
	mu     sync.Mutex
	seen   *[]event.Event
	asked  []engine.ApprovalRequest
	before []bool // whether the tool:start had been read
	dec    engine.ApprovalDecision
	ask    bool // set Request.Approver
	block  bool
}

func (a *approver) Ask(ctx context.Context, q engine.ApprovalRequest) engine.ApprovalDecision {
	a.mu.Lock()
	started := false
	for _, e := range *a.seen {
		if e.Type == event.TypeToolStart && e.ToolStart.ToolUseID == q.ToolUseID {
			started = true
		}
	}
	a.asked = append(a.asked, q)
	a.before = append(a.before, started)
	a.mu.Unlock()
	if a.block {
		<-ctx.Done()
		return engine.ApprovalDecision{}
	}
	return a.dec
}

func runWithApprover(t *testing.T, e *acp.Engine, req engine.Request, a *approver) ([]event.Event, error) {
	t.Helper()
	var mu sync.Mutex
	var evs []event.Event
	a.seen = &evs
	req.SessionKey, req.Cwd, req.Message = "s1", t.TempDir(), "permission"
	if a.ask || a.block {
		req.Approver = a
	}
	tr, err := e.StartTurn(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for tr.Next() {
			a.mu.Lock()
			mu.Lock()
			evs = append(evs, tr.Event())
			mu.Unlock()
			a.mu.Unlock()
			if a.block && tr.Event().Type == event.TypeToolStart {
				go func() {
					for {
						a.mu.Lock()
						n := len(a.asked)
						a.mu.Unlock()
						if n > 0 {
							_ = tr.Interrupt()
							return
						}
						time.Sleep(5 * time.Millisecond)
					}
				}()
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("turn did not end")
	}
	checkOrder(t, evs)
	return evs, tr.Err()
}

func TestPermissionPolicy(t *testing.T) {
	cases := []struct {
		name    string
		mode    string
		allowed []string
		dec     *engine.ApprovalDecision
		want    string
	}{
		{"asked and allowed", "default", nil, &engine.ApprovalDecision{Allow: true}, "ran (yes)"},
		// "always" is remembered by the core, never by the agent's
		// allow_always (a rule of the agent's making, wider than the use)
		{"asked and always allowed", "acceptEdits", nil, &engine.ApprovalDecision{Allow: true, Always: true}, "ran (yes)"},
		{"asked and denied", "default", nil, &engine.ApprovalDecision{Allow: false, Message: "no"}, "denied"},
		{"dontAsk with a rule", "dontAsk", []string{"execute(touch:*)"}, nil, "ran (yes)"},
		{"dontAsk without a rule", "dontAsk", []string{"execute(rm:*)"}, nil, "denied"},
		{"empty mode", "", nil, nil, "denied"},
		{"bypass", "bypassPermissions", nil, nil, "ran (yes)"},
	}
	e := newFake(t, nil)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := &approver{ask: c.dec != nil}
			if c.dec != nil {
				a.dec = *c.dec
			}
			evs, err := runWithApprover(t, e, engine.Request{PermissionMode: c.mode, AllowedTools: c.allowed}, a)
			if err != nil {
				t.Fatal(err)
			}
			res := find(evs, event.TypeToolResult)
			if res == nil || !strings.HasPrefix(res.ToolResult.Content, c.want) || res.ToolResult.IsError != (c.want == "denied") {
				t.Fatalf("tool:result = %+v, want %q", res, c.want)
			}
			if c.dec != nil {
				if len(a.asked) != 1 || !a.before[0] || a.asked[0].ToolName != "execute" || !strings.Contains(string(a.asked[0].Input), "touch marker") {
					t.Errorf("asked %+v (tool:start read before: %v)", a.asked, a.before)
				}
			} else if len(a.asked) != 0 {
				t.Errorf("asked %d times in mode %q", len(a.asked), c.mode)
			}
			e.Close("s1")
		})
	}
}

func TestPendingPermissionIsCancelledByInterrupt(t *testing.T) {
	e := newFake(t, nil)
	a := &approver{block: true}
	evs, err := runWithApprover(t, e, engine.Request{PermissionMode: "default"}, a)
	var te *engine.TurnError
	if !errors.As(err, &te) || te.Kind != event.ErrorInterrupted {
		t.Fatalf("err = %v", err)
	}
	if res := find(evs, event.TypeToolResult); res == nil || res.ToolResult.Content != "cancelled" {
		t.Errorf("tool:result = %+v, want the agent's cancelled", res)
	}
}

func TestToolStartOnceWhenInputComesLate(t *testing.T) {
	e := newFake(t, nil)
	evs, err := run(t, e, engine.Request{Message: "lateinput"})
	if err != nil {
		t.Fatal(err)
	}
	if n := count(evs, event.TypeToolStart); n != 1 {
		t.Fatalf("%d tool:start", n)
	}
	ts := find(evs, event.TypeToolStart).ToolStart
	if string(ts.Input) != `{"command":"ls -l"}` || ts.Name != "execute" {
		t.Errorf("tool:start = %s %s", ts.Name, ts.Input)
	}
	if n := count(evs, event.TypeToolResult); n != 1 {
		t.Errorf("%d tool:result", n)
	}
	if res := find(evs, event.TypeToolResult).ToolResult; res.Content != "a.txt" || res.IsError {
		t.Errorf("tool:result = %+v", res)
	}
}

func TestPlanIsShownAsThinking(t *testing.T) {
	e := newFake(t, nil)
	evs, err := run(t, e, engine.Request{Message: "plan"})
	if err != nil {
		t.Fatal(err)
	}
	th := find(evs, event.TypeThinkingDelta)
	if th == nil || th.Text != "Plan:\n[x] read\n[ ] write\n" {
		t.Errorf("thinking = %+v", th)
	}
}

func TestRefusalIsAnError(t *testing.T) {
	e := newFake(t, nil)
	evs, err := run(t, e, engine.Request{Message: "refuse"})
	var te *engine.TurnError
	if !errors.As(err, &te) || te.Kind != event.ErrorExecution {
		t.Fatalf("err = %v", err)
	}
	if se := find(evs, event.TypeSessionError).Error; se.Subtype != "refusal" {
		t.Errorf("session:error = %+v", se)
	}
	if x := evs[len(evs)-1].Exit; x.Code != 1 {
		t.Errorf("process:exit = %+v", x)
	}
}

// TestSelfCancelledTurnRestartsTheAgent: an agent that cancels a prompt
// by itself (Copilot 1.0.102 when its ACP event stream lags) answers no
// later prompt of that session, so the engine stops it; the next turn
// starts a new agent that loads the session, and does not hang.
func TestSelfCancelledTurnRestartsTheAgent(t *testing.T) {
	e := newFake(t, nil)
	cwd := t.TempDir()
	evs, err := run(t, e, engine.Request{Message: "hello", Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	sid, pid := evs[0].Init.ConversationID, e.Pid("s1")
	evs, err = run(t, e, engine.Request{Message: "selfcancel", Cwd: cwd, Resume: sid})
	var te *engine.TurnError
	if !errors.As(err, &te) || te.Kind != event.ErrorExecution || !strings.Contains(te.Message, "by itself") {
		t.Fatalf("err = %v, want an execution TurnError", err)
	}
	if se := find(evs, event.TypeSessionError).Error; se.Subtype != "cancelled" {
		t.Errorf("session:error = %+v", se)
	}
	if chat(evs) != "partial" {
		t.Errorf("chat = %q", chat(evs))
	}
	processGone(t, pid)
	if e.Pid("s1") != 0 {
		t.Error("the agent that cancelled by itself is still the session's")
	}
	evs, err = run(t, e, engine.Request{Message: "recall", Cwd: cwd, Resume: sid})
	if err != nil {
		t.Fatalf("the turn after a self-cancel: %v (%v)", err, types(evs))
	}
	if got := chat(evs); got != "you said: selfcancel" || evs[0].Init.ConversationID != sid {
		t.Errorf("after the restart: %q on session %q", got, evs[0].Init.ConversationID)
	}
	if p := e.Pid("s1"); p == 0 || p == pid {
		t.Errorf("the session's agent after the restart: pid %d (was %d)", p, pid)
	}
}

func TestBusyAndClosed(t *testing.T) {
	e := newFake(t, nil)
	tr, err := e.StartTurn(context.Background(), engine.Request{SessionKey: "s1", Message: "slow", Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.StartTurn(context.Background(), engine.Request{SessionKey: "s1", Message: "x", Cwd: t.TempDir()}); !errors.Is(err, engine.ErrBusy) {
		t.Errorf("second turn: %v", err)
	}
	pid := tr.(*acp.Turn).Pid()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan []event.Event)
	go func() {
		var evs []event.Event
		for tr.Next() {
			evs = append(evs, tr.Event())
		}
		done <- evs
	}()
	if err := e.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	evs := <-done
	if se := find(evs, event.TypeSessionError); se == nil || se.Error.Kind != event.ErrorInterrupted {
		t.Errorf("shutdown ended the turn with %v", types(evs))
	}
	processGone(t, pid)
	if _, err := e.StartTurn(context.Background(), engine.Request{SessionKey: "s2", Message: "x", Cwd: t.TempDir()}); !errors.Is(err, engine.ErrClosed) {
		t.Errorf("after shutdown: %v", err)
	}
}

// Shutdown through the engine's turn registry: an agent that ignores
// session/cancel (InterruptGrace far away) is killed when Shutdown's
// context ends; Shutdown returns that context's error, the turn's stream
// ends with the SIGKILL, the agent is gone and no turn starts afterwards.
func TestShutdownKillsATurnThatIgnoresInterrupt(t *testing.T) {
	e := newFake(t, func(c *acp.Config) { c.InterruptGrace = time.Hour })
	prompted := make(chan struct{})
	var once sync.Once
	acp.SetTap(e, func(dir string, b []byte) {
		if dir == "out" && bytes.Contains(b, []byte(`"session/prompt"`)) {
			once.Do(func() { close(prompted) })
		}
	})
	tr, err := e.StartTurn(context.Background(), engine.Request{SessionKey: "s1", Message: "hang", Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	pid := tr.(*acp.Turn).Pid()
	select {
	case <-prompted:
	case <-time.After(10 * time.Second):
		t.Fatal("session/prompt was not sent")
	}
	type res struct {
		evs []event.Event
		err error
	}
	read := make(chan res, 1)
	go func() {
		var evs []event.Event
		for tr.Next() {
			evs = append(evs, tr.Event())
		}
		read <- res{evs, tr.Err()}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := e.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v, want the context's deadline (the turn had to be killed)", err)
	}
	var r res
	select {
	case r = <-read:
	case <-time.After(10 * time.Second):
		t.Fatal("the turn's stream did not end after Shutdown returned")
	}
	if len(r.evs) == 0 || r.evs[len(r.evs)-1].Type != event.TypeProcessExit || r.evs[len(r.evs)-1].Exit.Signal != "SIGKILL" {
		t.Errorf("the turn ended with %v, want process:exit by SIGKILL", types(r.evs))
	}
	if r.err == nil {
		t.Error("the killed turn reports no error")
	}
	processGone(t, pid)
	if _, err := e.StartTurn(context.Background(), engine.Request{SessionKey: "s1", Message: "x", Cwd: t.TempDir()}); !errors.Is(err, engine.ErrClosed) {
		t.Errorf("a turn after Shutdown: %v, want ErrClosed", err)
	}
}

func TestIdleAgentIsStopped(t *testing.T) {
	e := newFake(t, func(c *acp.Config) { c.IdleTimeout = 200 * time.Millisecond })
	if _, err := run(t, e, engine.Request{Message: "hello"}); err != nil {
		t.Fatal(err)
	}
	pid := e.Pid("s1")
	if pid == 0 {
		t.Fatal("no agent after the turn")
	}
	processGone(t, pid)
	deadline := time.Now().Add(5 * time.Second)
	for e.Pid("s1") != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if e.Pid("s1") != 0 {
		t.Error("the idle agent is still the session's")
	}
}

func TestMissingBinary(t *testing.T) {
	e, err := acp.NewEngine(acp.Config{Name: "nothere", Command: []string{"no-such-agent-xyz"}, Install: "npm install nothing"})
	if err != nil {
		t.Fatal(err)
	}
	st := e.Check(context.Background())
	if st.Available || st.Kind != "acp" || !strings.Contains(st.Reason, "npm install nothing") || !strings.Contains(st.Reason, "HARNESS_NOTHERE_BIN") {
		t.Errorf("status = %+v", st)
	}
	_, err = e.StartTurn(context.Background(), engine.Request{SessionKey: "s", Message: "x", Cwd: t.TempDir()})
	if !errors.Is(err, engine.ErrUnavailable) {
		t.Errorf("err = %v", err)
	}
}

func TestBadConfig(t *testing.T) {
	for _, c := range []acp.Config{{Name: "", Command: []string{"x"}}, {Name: "Bad Name", Command: []string{"x"}}, {Name: "ok"}} {
		if _, err := acp.NewEngine(c); !errors.Is(err, acp.ErrConfig) {
			t.Errorf("%+v: %v", c, err)
		}
	}
}

func TestChildEnv(t *testing.T) {
	base := []string{"PATH=/bin", "ANTHROPIC_API_KEY=sk-1", "GITHUB_TOKEN=gh-1", "COPILOT_PROVIDER_API_KEY=cp-1", "HOME=/h"}
	got := strings.Join(acp.ChildEnv(base, []string{"X=1"}, []string{"COPILOT_PROVIDER_API_KEY"}), " ")
	if got != "PATH=/bin COPILOT_PROVIDER_API_KEY=cp-1 HOME=/h X=1" {
		t.Errorf("copilot env = %s", got)
	}
	got = strings.Join(acp.ChildEnv(base, nil, []string{"ANTHROPIC_API_KEY"}), " ")
	if got != "PATH=/bin ANTHROPIC_API_KEY=sk-1 HOME=/h" {
		t.Errorf("anthropic env = %s", got)
	}
}
