package rpc

import (
	"maps"
	"testing"

	"github.com/chirality/harness/engine"
)

// JSON-RPC 2.0 member names are case-sensitive: a request whose id is
// spelt "ID" has no id, so it is a notification and is never answered;
// and an id that can be read is answered even when another member is of
// the wrong type ("If there was an error in detecting the id … it MUST be
// Null": here there is none). Driven through the door (Serve).
func TestMemberNamesAreExact(t *testing.T) {
	e := newEnv(t)
	c := e.start(t)
	defer c.close()
	c.send(`{"jsonrpc":"2.0","ID":1,"method":"thread.list"}`) // a notification: no answer
	c.send(`{"JSONRPC":"2.0","id":2,"method":"thread.list"}`) // no "jsonrpc": -32600, id 2
	c.send(`{"jsonrpc":"2.0","id":3,"method":7}`)             // method not a string: -32600, id 3
	c.send(`{"jsonrpc":"2.0","id":4,"Method":"thread.list"}`) // no "method": -32600, id 4
	c.send(`{"jsonrpc":"2.0","id":5,"method":"thread.list"}`) // answered in order after them
	want := []struct {
		id   string
		code int
	}{{"2", CodeInvalidRequest}, {"3", CodeInvalidRequest}, {"4", CodeInvalidRequest}, {"5", 0}}
	for _, w := range want {
		m := c.next("an answer", func(m msg) bool { return m.Method == "" })
		code := 0
		if m.Error != nil {
			code = m.Error.Code
		}
		if string(m.ID) != w.id || code != w.code {
			t.Fatalf("answer %s, want id %s code %d (the \"ID\" notification must not be answered)", m.raw, w.id, w.code)
		}
	}
}

// turn.completed carries the turn's usage as the protocol's example shows
// it, 004's UsageInfo (input_tokens, output_tokens), on every engine: an
// ACP agent reports camelCase (the fake: inputTokens 3, outputTokens 2),
// which the core rewrites before it is stored, so thread.get's replay
// says the same.
func TestTurnCompletedUsageOnAnACPAgent(t *testing.T) {
	e := newEnv(t)
	e.extra = func() []engine.Engine { return []engine.Engine{fakeACP(t)} }
	c := e.start(t)
	defer c.close()
	var created struct{ Thread Thread }
	c.result(1, "thread.create", map[string]any{}, &created)
	var r struct{ TurnID string }
	c.result(2, "turn.start", map[string]any{"threadId": created.Thread.ThreadID, "input": []any{map[string]any{"type": "text", "text": "hi"}},
		"model": map[string]any{"providerID": "fakeacp"}}, &r)
	end := c.next("turn end", func(m msg) bool { return m.Method == "turn.completed" || m.Method == "turn.error" })
	want := map[string]any{"input_tokens": 3.0, "output_tokens": 2.0, "cache_read_input_tokens": 0.0, "cache_creation_input_tokens": 0.0}
	if u, _ := end.Params["usage"].(map[string]any); end.Method != "turn.completed" || !maps.Equal(u, want) {
		t.Fatalf("turn end %s: want usage %v", end.raw, want)
	}
	var got struct{ Events []map[string]any }
	c.result(3, "thread.get", map[string]any{"threadId": created.Thread.ThreadID}, &got)
	last := got.Events[len(got.Events)-1]
	params, _ := last["params"].(map[string]any)
	if u, _ := params["usage"].(map[string]any); last["method"] != "turn.completed" || !maps.Equal(u, want) {
		t.Fatalf("thread.get's last notification %v: want usage %v", last, want)
	}
}
