package agentserver

import (
	"encoding/json"
	"testing"

	"github.com/chirality/harness/event"
)

// BenchmarkMapTurn: one turn of a session's log (200 streamed tokens, a
// tool call, 200 more) into the stream's events, with deltas: the work of
// GET /events per turn.
func BenchmarkMapTurn(b *testing.B) {
	turn := []event.Event{
		{Type: event.TypeUserMessage, Text: "hello"},
		{Type: event.TypeSessionInit, Init: &event.SessionInit{Model: "m"}},
	}
	for range 200 {
		turn = append(turn, event.Event{Type: event.TypeChatDelta, Text: "a token "})
	}
	turn = append(turn,
		event.Event{Type: event.TypeToolStart, ToolStart: &event.ToolStart{ToolUseID: "t1", Name: "Bash", Input: json.RawMessage(`{"command":"ls"}`)}},
		event.Event{Type: event.TypeToolResult, ToolResult: &event.ToolResult{ToolUseID: "t1", Content: "a\nb"}})
	for range 200 {
		turn = append(turn, event.Event{Type: event.TypeChatDelta, Text: "a token "})
	}
	turn = append(turn, event.Event{Type: event.TypeChatComplete, Text: "the end"},
		event.Event{Type: event.TypeSessionComplete, Complete: &event.SessionComplete{}},
		event.Event{Type: event.TypeProcessExit, Exit: &event.ProcessExit{}})
	m := &mapper{deltas: true, session: "s"}
	var out []Event
	n := 0
	b.ReportAllocs()
	for range b.N {
		for i := range turn {
			out = m.record(&turn[i], out[:0])
			n += len(out)
		}
	}
	if n == 0 {
		b.Fatal("no events")
	}
}
