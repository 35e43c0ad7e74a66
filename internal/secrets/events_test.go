package secrets_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chirality/harness/event"
	"github.com/chirality/harness/internal/secrets"
)

// Events: a secret split across the deltas of a block is replaced whole,
// what a block holds back comes out before the event that ends it, as a
// delta of that block (its type, parent and session), and every other
// event is scrubbed in all its strings, nested payloads included.
func TestEventsScrubsATurn(t *testing.T) {
	const secret = "events-test-secret-value-31"
	secrets.Register(secret)
	delta := func(typ event.Type, parent, text string) event.Event {
		return event.Event{Type: typ, SessionID: "s1", ParentToolUseID: parent, Text: text}
	}
	in := []event.Event{
		delta(event.TypeChatDelta, "", "key: events-te"),
		delta(event.TypeChatDelta, "", "st-secret-val"),
		delta(event.TypeChatDelta, "", "ue-31 ok e"), // "e" may start a secret: held
		delta(event.TypeThinkingDelta, "", "events-test-secret-value-31"),
		delta(event.TypeChatDelta, "toolu_1", "sub events"),
		{Type: event.TypeToolResult, SessionID: "s1", ToolResult: &event.ToolResult{ToolUseID: "toolu_1", Content: "ANTHROPIC_API_KEY=" + secret + "\nghp_abcdefghijklmnopqrstuvwxyz0123456789"}},
		{Type: event.TypeSessionError, SessionID: "s1", Error: &event.SessionError{Error: "failed: " + secret, Kind: event.ErrorProcess, StderrTail: "auth " + secret}},
		delta(event.TypeChatDelta, "", "last events-test-"),
	}
	var s secrets.Events
	var out []event.Event
	for _, ev := range in {
		out = s.Add(out, ev)
	}
	out = s.Flush(out)

	var types []string
	text := map[string]string{}
	for _, ev := range out {
		types = append(types, string(ev.Type)+"/"+ev.ParentToolUseID)
		if ev.SessionID != "s1" {
			t.Errorf("%s lost its session: %q", ev.Type, ev.SessionID)
		}
		b, _ := json.Marshal(ev)
		if strings.Contains(string(b), secret) || strings.Contains(string(b), "ghp_abc") {
			t.Errorf("%s carries a secret: %s", ev.Type, b)
		}
		if ev.Text != "" {
			text[string(ev.Type)+"/"+ev.ParentToolUseID] += ev.Text + "|"
		}
	}
	wantTypes := "chat:delta/,chat:delta/,chat:delta/,thinking:delta/,chat:delta/toolu_1,chat:delta/toolu_1,tool:result/,session:error/,chat:delta/,chat:delta/"
	if got := strings.Join(types, ","); got != wantTypes {
		t.Errorf("events\n %s\nwant\n %s", got, wantTypes)
	}
	if got := text["chat:delta/"]; strings.ReplaceAll(got, "|", "") != "key: [REDACTED] ok elast events-test-" {
		t.Errorf("the answer's deltas %q", got)
	}
	if got := text["thinking:delta/"]; got != "[REDACTED]|" {
		t.Errorf("thinking %q: a delta that is all secret comes out at its block's end, replaced", got)
	}
	for _, ev := range out {
		switch ev.Type {
		case event.TypeToolResult:
			if ev.ToolResult.Content != "ANTHROPIC_API_KEY=[REDACTED]\n[REDACTED]" || ev.ToolResult.ToolUseID != "toolu_1" {
				t.Errorf("tool:result %+v", ev.ToolResult)
			}
		case event.TypeSessionError:
			if ev.Error.Error != "failed: [REDACTED]" || ev.Error.StderrTail != "auth [REDACTED]" || ev.Error.Kind != event.ErrorProcess {
				t.Errorf("session:error %+v", ev.Error)
			}
		}
	}
}

// An event without a secret is given as it is: the same payload, not a
// decoded copy.
func TestEventsKeepsCleanEvents(t *testing.T) {
	var s secrets.Events
	tr := &event.ToolResult{ToolUseID: "toolu_2", Content: "nothing to hide"}
	out := s.Add(nil, event.Event{Type: event.TypeToolResult, SessionID: "s2", ToolResult: tr})
	if len(out) != 1 || out[0].ToolResult != tr {
		t.Errorf("a clean event was rebuilt: %+v", out)
	}
}

// The cost Events adds to a turn: a round of 1,000 twenty-byte deltas and
// the chat:complete that repeats them, with the values of a typical
// environment registered.
func BenchmarkEventsRound(b *testing.B) {
	registerStreamSecrets()
	secrets.Register("another-secret-value-1", "ghp_registeredtoken0123456789abcdefgh", "a-webhook-url-secret-xyz")
	words := strings.Fields(strings.Repeat("The function reads the config file, checks each key and returns an error when one is missing. ", 60))
	var round []event.Event
	var whole strings.Builder
	for _, w := range words[:1000] {
		round = append(round, event.Event{Type: event.TypeChatDelta, SessionID: "s", Text: w + " "})
		whole.WriteString(w + " ")
	}
	round = append(round, event.Event{Type: event.TypeChatComplete, SessionID: "s", Text: whole.String()})
	var s secrets.Events
	var out []event.Event
	b.SetBytes(int64(2 * whole.Len()))
	b.ReportAllocs()
	for b.Loop() {
		for _, ev := range round {
			out = s.Add(out[:0], ev)
		}
	}
}
