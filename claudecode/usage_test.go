package claudecode_test

import (
	"testing"

	"github.com/chirality/harness/event"
)

// TestDecoderUsageAndRateLimit: a model call's usage (message_start's,
// completed by message_delta's) is one usage:update, a subagent's with
// its parent; a rate_limit_event is one rate_limit.
func TestDecoderUsageAndRateLimit(t *testing.T) {
	input := `{"type":"stream_event","event":{"type":"message_start","message":{"id":"m1","model":"claude-sonnet-5-5","usage":{"input_tokens":100,"cache_read_input_tokens":40,"cache_creation_input_tokens":8,"output_tokens":1}}}}
{"type":"stream_event","parent_tool_use_id":"toolu_9","event":{"type":"message_start","message":{"id":"m2","model":"claude-haiku-5-5","usage":{"input_tokens":3,"output_tokens":1}}}}
{"type":"stream_event","event":{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":25}}}
{"type":"stream_event","parent_tool_use_id":"toolu_9","event":{"type":"message_delta","delta":{},"usage":{"input_tokens":5,"output_tokens":2}}}
{"type":"stream_event","event":{"type":"message_delta","usage":{"output_tokens":99}}}
{"type":"rate_limit_event","rate_limit_info":{"status":"allowed_warning","resetsAt":1900000000,"rateLimitType":"five_hour","utilization":0.83},"uuid":"u","session_id":"c"}
{"type":"rate_limit_event","rate_limit_info":{"status":"allowed"},"uuid":"u2","session_id":"c"}
`
	evs, errs := decodeString(t, input)
	if len(errs) > 0 {
		t.Fatalf("line errors: %v", errs[0])
	}
	var usage []*event.UsageUpdate
	var parents []string
	var limits []*event.RateLimit
	for _, e := range evs {
		switch e.Type {
		case event.TypeUsageUpdate:
			usage = append(usage, e.Usage)
			parents = append(parents, e.ParentToolUseID)
		case event.TypeRateLimit:
			limits = append(limits, e.RateLimit)
		}
	}
	if len(usage) != 2 {
		t.Fatalf("%d usage:update, want 2 (a message_delta without its message_start adds none): %s", len(usage), eventsJSON(evs))
	}
	want := event.UsageUpdate{Model: "claude-sonnet-5-5", InputTokens: 100, OutputTokens: 25, CacheReadTokens: 40, CacheWriteTokens: 8}
	if *usage[0] != want || parents[0] != "" {
		t.Errorf("main call %+v (parent %q), want %+v", *usage[0], parents[0], want)
	}
	want = event.UsageUpdate{Model: "claude-haiku-5-5", InputTokens: 5, OutputTokens: 2}
	if *usage[1] != want || parents[1] != "toolu_9" {
		t.Errorf("subagent call %+v (parent %q), want %+v of toolu_9", *usage[1], parents[1], want)
	}
	if len(limits) != 2 {
		t.Fatalf("%d rate_limit, want 2", len(limits))
	}
	if l := limits[0]; l.Limit != "five_hour" || l.UsedPercent != 83 || l.Status != "allowed_warning" || l.ResetsAt != 1900000000 {
		t.Errorf("rate limit %+v", *l)
	}
	if l := limits[1]; l.Limit != "claude" || l.UsedPercent != -1 || l.Status != "allowed" {
		t.Errorf("rate limit without details %+v, want used -1 (unknown)", *l)
	}
}
