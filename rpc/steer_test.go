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
