package agentserver

import (
	"testing"

	"github.com/chirality/harness/event"
)

// usage:update and rate_limit reach the stream only when asked for
// (?usage=1), without ending the text block they came in the middle of.
func TestUsageEventsAreOptIn(t *testing.T) {
	evs := []event.Event{
		{Type: event.TypeUserMessage, Text: "hi"},
		{Type: event.TypeChatDelta, Text: "Hel"},
		{Type: event.TypeUsageUpdate, Usage: &event.UsageUpdate{InputTokens: 10, OutputTokens: 5, CacheReadTokens: 2, CostUSD: 0.25}},
		{Type: event.TypeRateLimit, RateLimit: &event.RateLimit{Limit: "five_hour", UsedPercent: 83, ResetsAt: 1900000000}},
		{Type: event.TypeChatDelta, Text: "lo"},
		{Type: event.TypeChatComplete, Text: "Hello"},
	}
	run := func(m *mapper) []Event {
		var out []Event
		for i := range evs {
			out = m.record(&evs[i], out)
		}
		return out
	}
	for _, e := range run(&mapper{}) {
		if e.Type == "usage" || e.Type == "rate_limit" {
			t.Fatalf("without usage=1 the stream has %+v", e)
		}
	}
	var types []string
	var u, rl *Event
	out := run(&mapper{usage: true})
	for i, e := range out {
		types = append(types, e.Type)
		switch e.Type {
		case "usage":
			u = &out[i]
		case "rate_limit":
			rl = &out[i]
		}
	}
	if u == nil || u.CostUSD != 0.25 || u.Tokens != 17 {
		t.Errorf("usage %+v in %v", u, types)
	}
	if rl == nil || rl.Limit != "five_hour" || rl.UsedPercent == nil || *rl.UsedPercent != 83 || rl.ResetsAt != 1900000000 {
		t.Errorf("rate_limit %+v in %v", rl, types)
	}
	texts := 0
	for _, e := range out {
		if e.Type == "text" {
			texts++
			if e.Content != "Hello" {
				t.Errorf("the text block was cut by the usage events: %q", e.Content)
			}
		}
	}
	if texts != 1 {
		t.Errorf("%d text events, want 1: %v", texts, types)
	}
}
