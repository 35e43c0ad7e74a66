package harness

import (
	"encoding/json"
	"testing"

	"github.com/chirality/harness/event"
)

// specEvent: an ACP agent's camelCase usage becomes 004's UsageInfo with
// its counts, none becomes zeros, Claude's is kept byte for byte; an
// engine's nil tools become []; the engine's payloads are not changed.
func TestSpecEventConformsUsageAndTools(t *testing.T) {
	claude := `{"input_tokens":20,"output_tokens":10,"cache_read_input_tokens":3,"service_tier":"standard"}`
	for _, tc := range []struct{ in, want string }{
		{`{"inputTokens":10,"outputTokens":5,"cachedReadTokens":2,"cachedWriteTokens":1,"totalTokens":18}`,
			`{"input_tokens":10,"output_tokens":5,"cache_read_input_tokens":2,"cache_creation_input_tokens":1}`},
		{`{}`, `{"input_tokens":0,"output_tokens":0,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}`},
		{``, `{"input_tokens":0,"output_tokens":0,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}`},
		{`{"input_tokens":null,"outputTokens":4}`, `{"input_tokens":0,"output_tokens":4,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}`},
		{claude, claude},
	} {
		c := &event.SessionComplete{CostUSD: 0.5, Usage: json.RawMessage(tc.in)}
		got := specEvent(event.Event{Type: event.TypeSessionComplete, Complete: c})
		if string(got.Complete.Usage) != tc.want || got.Complete.CostUSD != 0.5 {
			t.Errorf("usage %s became %s, want %s", tc.in, got.Complete.Usage, tc.want)
		}
		if string(c.Usage) != tc.in {
			t.Errorf("the engine's payload was changed: %s", c.Usage)
		}
	}
	init := &event.SessionInit{Model: "m"}
	got := specEvent(event.Event{Type: event.TypeSessionInit, Init: init})
	if b, _ := json.Marshal(got); got.Init.Tools == nil || init.Tools != nil || !json.Valid(b) {
		t.Errorf("session:init %s; the engine's tools %v", b, init.Tools)
	}
}
