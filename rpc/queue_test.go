package rpc

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chirality/harness/claudecode/claudetest"
)

// turn.start with queue (an extension) on a busy thread queues the text
// in the session's prompt queue; the core runs it once the thread's turn
// ends. Without queue a busy thread is still -32002.
func TestTurnStartQueue(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	var asked []string
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free)
	e.api.SetResponder(func(r *claudetest.Request) claudetest.Reply {
		m := r.LastUserText()
		mu.Lock()
		asked = append(asked, m)
		mu.Unlock()
		if m == "hold" {
			<-release
		}
		return claudetest.TextReply("ok")
	})
	seen := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(asked)
	}
	wait := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	c := e.start(t)
	defer c.close()
	var created struct{ Thread Thread }
	c.result(1, "thread.create", map[string]any{}, &created)
	input := func(s string) []any { return []any{map[string]any{"type": "text", "text": s}} }
	native := map[string]any{"providerID": "anthropic", "modelID": "haiku"}
	c.result(2, "turn.start", map[string]any{"threadId": created.Thread.ThreadID, "input": input("hold"), "model": native}, nil)
	wait("the held turn to reach the model", func() bool { return len(seen()) == 1 })
	if m := c.call(3, "turn.start", map[string]any{"threadId": created.Thread.ThreadID, "input": input("no queue")}); m.Error == nil || m.Error.Code != CodeTurnBusy {
		t.Fatalf("a busy thread without queue: %s", m.raw)
	}
	var q struct {
		Queued   bool   `json:"queued"`
		PromptID string `json:"promptId"`
		Position int    `json:"position"`
	}
	c.result(4, "turn.start", map[string]any{"threadId": created.Thread.ThreadID, "input": input("queued one"), "queue": true}, &q)
	if !q.Queued || q.PromptID == "" || q.Position != 0 {
		t.Fatalf("queued result %+v", q)
	}
	free()
	c.next("the thread's turn to end", func(m msg) bool { return m.Method == "turn.completed" || m.Method == "turn.error" })
	wait("the queued text to run", func() bool { return len(seen()) == 2 })
	if got := seen(); !slices.Equal(got, []string{"hold", "queued one"}) {
		t.Fatalf("the model was asked %q", got)
	}
}
