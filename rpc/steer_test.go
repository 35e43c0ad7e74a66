package rpc

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chirality/harness/claudecode/claudetest"
)

// turn.steer (an extension) puts a text into the thread's running turn:
// the model's next call carries it, and it is a user_message item of the
// turn; with no turn running it is -32003.
func TestTurnSteer(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	var asked []string
	asking, release := make(chan struct{}), make(chan struct{})
	var once, aonce sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free)
	e.api.SetResponder(func(r *claudetest.Request) claudetest.Reply {
		m := r.LastUserText()
		mu.Lock()
		asked = append(asked, m)
		mu.Unlock()
		if m == "hold" {
			aonce.Do(func() { close(asking) })
			<-release
		}
		return claudetest.TextReply("ok: " + m)
	})
	c := e.start(t)
	defer c.close()
	var created struct{ Thread Thread }
	c.result(1, "thread.create", map[string]any{}, &created)
	tid := created.Thread.ThreadID
	input := func(s string) []any { return []any{map[string]any{"type": "text", "text": s}} }
	if m := c.call(2, "turn.steer", map[string]any{"threadId": tid, "input": input("nothing runs")}); m.Error == nil || m.Error.Code != CodeTurnNotFound {
		t.Fatalf("turn.steer with no turn: %s", m.raw)
	}
	native := map[string]any{"providerID": "anthropic", "modelID": "haiku"}
	c.result(3, "turn.start", map[string]any{"threadId": tid, "input": input("hold"), "model": native}, nil)
	select {
	case <-asking:
	case <-time.After(60 * time.Second):
		t.Fatal("the turn never reached the model")
	}
	if m := c.call(4, "turn.steer", map[string]any{"threadId": tid, "input": input(" ")}); m.Error == nil || m.Error.Code != CodeInvalidParams {
		t.Fatalf("a blank steer: %s", m.raw)
	}
	c.result(5, "turn.steer", map[string]any{"threadId": tid, "input": input("use tabs")}, nil)
	free()
	steerItem := false
	c.next("the turn to end", func(m msg) bool {
		if m.Method == "item.completed" && strings.Contains(m.raw, `"use tabs"`) && strings.Contains(m.raw, "user_message") {
			steerItem = true
		}
		return m.Method == "turn.completed" || m.Method == "turn.error"
	})
	mu.Lock()
	got := slices.Clone(asked)
	mu.Unlock()
	if !slices.Equal(got, []string{"hold", "use tabs"}) {
		t.Fatalf("the model was asked %q", got)
	}
	if !steerItem {
		t.Error("the steered text is not a user_message item of the turn")
	}
	if m := c.call(6, "turn.steer", map[string]any{"threadId": tid, "input": input("late")}); m.Error == nil || m.Error.Code != CodeTurnNotFound {
		t.Fatalf("turn.steer after the turn: %s", m.raw)
	}
}

// plan.decide (an extension) on Claude Code in plan mode: the turn's
// ExitPlanMode arrives as plan.ready with the plan; revise sends the
// feedback to the model, approve lets the agent go on; with no plan
// waiting it is -32004.
func TestPlanDecide(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	feedback := false
	e.api.SetResponder(func(r *claudetest.Request) claudetest.Reply {
		mu.Lock()
		defer mu.Unlock()
		last := r.LastUserText()
		switch {
		case strings.Contains(last, "more tests"):
			feedback = true
			return claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse("toolu_p2", "ExitPlanMode", map[string]any{"plan": "# plan 2"})}}
		case strings.Contains(string(r.Body), "toolu_p2"):
			return claudetest.TextReply("going on")
		case strings.Contains(string(r.Body), "make a plan"):
			return claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse("toolu_p1", "ExitPlanMode", map[string]any{"plan": "# plan 1"})}}
		}
		return claudetest.TextReply("unrelated")
	})
	c := e.start(t)
	defer c.close()
	var created struct{ Thread Thread }
	c.result(1, "thread.create", map[string]any{}, &created)
	tid := created.Thread.ThreadID
	c.result(2, "thread.update", map[string]any{"threadId": tid, "permissionMode": "plan"}, nil)
	if m := c.call(3, "plan.decide", map[string]any{"threadId": tid, "decision": "approve"}); m.Error == nil || m.Error.Code != CodeApprovalMissing {
		t.Fatalf("plan.decide with no plan: %s", m.raw)
	}
	c.result(4, "turn.start", map[string]any{"threadId": tid, "input": []any{map[string]any{"type": "text", "text": "make a plan"}}}, nil)
	ready := c.next("plan.ready", func(m msg) bool { return m.Method == "plan.ready" })
	if ready.Params["plan"] != "# plan 1" {
		t.Fatalf("plan.ready %s", ready.raw)
	}
	if m := c.call(5, "plan.decide", map[string]any{"threadId": tid, "decision": "revise"}); m.Error == nil || m.Error.Code != CodeInvalidParams {
		t.Fatalf("revise without feedback: %s", m.raw)
	}
	c.result(6, "plan.decide", map[string]any{"threadId": tid, "decision": "revise", "feedback": "more tests"}, nil)
	ready = c.next("the second plan.ready", func(m msg) bool { return m.Method == "plan.ready" })
	if ready.Params["plan"] != "# plan 2" {
		t.Fatalf("second plan.ready %s", ready.raw)
	}
	c.result(7, "plan.decide", map[string]any{"threadId": tid, "decision": "approve", "mode": "acceptEdits"}, nil)
	end := c.next("the turn to end", func(m msg) bool { return m.Method == "turn.completed" || m.Method == "turn.error" })
	if end.Method != "turn.completed" {
		t.Fatalf("turn ended %s", end.raw)
	}
	mu.Lock()
	defer mu.Unlock()
	if !feedback {
		t.Error("the revise's feedback never reached the model")
	}
}
