package rpc

import (
	"testing"
)

// A retried model API request reaches the client as turn.retry, with the
// retry's numbers and the line to show, before the turn ends.
func TestRetryNotification(t *testing.T) {
	e := newEnv(t)
	e.api.FailThenAnswer(1, "Recovered.")
	c := e.start(t)
	defer c.close()
	var created struct{ Thread Thread }
	c.result(1, "thread.create", map[string]any{}, &created)
	c.result(2, "turn.start", map[string]any{"threadId": created.Thread.ThreadID, "input": []any{map[string]any{"type": "text", "text": "hi"}}}, nil)
	m := c.next("turn.retry", func(m msg) bool {
		return m.Method == "turn.retry" || m.Method == "turn.completed" || m.Method == "turn.error"
	})
	if m.Method != "turn.retry" {
		t.Fatalf("the turn ended without a retry: %s", m.raw)
	}
	p := m.Params
	if p["threadId"] != created.Thread.ThreadID || p["turnId"] == "" || p["attempt"] != float64(1) || p["maxRetries"] != float64(10) ||
		p["apiErrorStatus"] != float64(529) || p["error"] != "overloaded" || p["seq"] == nil {
		t.Errorf("turn.retry %s", m.raw)
	}
	if s, _ := p["message"].(string); len(s) < len("Retrying 1/10 in ") || s[:len("Retrying 1/10 in ")] != "Retrying 1/10 in " {
		t.Errorf("message %q", s)
	}
	if end := c.next("turn end", func(m msg) bool { return m.Method == "turn.completed" || m.Method == "turn.error" }); end.Method != "turn.completed" {
		t.Errorf("turn ended %s", end.raw)
	}
}
