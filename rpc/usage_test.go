package rpc

import (
	"testing"

	"github.com/chirality/harness/usage"
)

// usage.get answers what the directory's sessions used: a turn on the
// real CLI (fake model: 10 in, 5 out a call) counts, grouped by engine;
// a bad grouping is invalid params.
func TestUsageGet(t *testing.T) {
	e := newEnv(t)
	c := e.start(t)
	defer c.close()
	var created struct{ Thread Thread }
	c.result(1, "thread.create", map[string]any{"title": "work"}, &created)
	c.result(2, "turn.start", map[string]any{"threadId": created.Thread.ThreadID, "input": []any{map[string]any{"type": "text", "text": "hello"}}}, nil)
	c.next("turn.completed", isNote("turn.completed"))
	var rep usage.Report
	c.result(3, "usage.get", map[string]any{"by": "engine"}, &rep)
	if rep.Total.Turns != 1 || rep.Total.InputTokens < 10 || rep.Total.OutputTokens < 5 || rep.Total.CostUSD <= 0 ||
		len(rep.Groups) != 1 || rep.Groups[0].Key != "claude-code" {
		t.Errorf("usage.get: %+v", rep)
	}
	if m := c.call(4, "usage.get", map[string]any{"by": "week"}); m.Error == nil || m.Error.Code != CodeInvalidParams {
		t.Errorf("usage.get by week: %s", m.raw)
	}
}
