package gateway

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/chirality/harness/event"
)

// sampleEvents is one event of every type as the core makes them, every
// field set, and the payloads with optional parts left out.
func sampleEvents() []event.Event {
	code := 1
	raw := json.RawMessage(`{"command":"ls"}`)
	out := []event.Event{}
	for _, p := range eventPayloads {
		if p.Payload == nil {
			out = append(out, event.Event{Type: p.Type, SessionID: "s1", Text: "hi"})
		}
	}
	full := []event.Event{
		{Type: event.TypeSessionInit, Init: &event.SessionInit{ConversationID: "t", Model: "m", Tools: []string{"Bash"}, CLIVersion: "1", PermissionMode: "default", Cwd: "/p", Engine: "codex", MCPServers: []event.MCPServerStatus{{Name: "x", Status: "failed", Error: "e"}}}},
		{Type: event.TypeToolStart, ToolStart: &event.ToolStart{ToolUseID: "t", Name: "Bash", Input: raw}},
		{Type: event.TypeToolStart, ToolStart: &event.ToolStart{ToolUseID: "t", Name: "Bash"}},
		{Type: event.TypeToolResult, ToolResult: &event.ToolResult{ToolUseID: "t", Content: "ok", IsError: true}},
		{Type: event.TypeSessionComplete, Complete: &event.SessionComplete{CostUSD: 0.1, Usage: raw, NumTurns: 2, DurationMS: 3, Checkpoint: "u"}},
		{Type: event.TypeSessionComplete, Complete: &event.SessionComplete{}},
		{Type: event.TypeSessionInit, Init: &event.SessionInit{ConversationID: "c", Model: "m", Tools: []string{}}},
		{Type: event.TypeSessionError, Error: &event.SessionError{Error: "e", Kind: event.ErrorProcess, Subtype: "s", APIErrorStatus: 500, ExitCode: &code, StderrTail: "x", CostUSD: 1}},
		{Type: event.TypeSessionRetry, Retry: &event.SessionRetry{Attempt: 1, MaxRetries: 3, DelayMS: 10, Error: "e", APIErrorStatus: 529}},
		{Type: event.TypeProcessExit, Exit: &event.ProcessExit{Code: -1, Signal: "SIGKILL"}},
		{Type: event.TypeProcessExit, Exit: &event.ProcessExit{}},
		{Type: event.TypeApprovalRequested, Approval: &event.ApprovalRequested{RequestID: "r", ToolUseID: "t", ToolName: "Bash", Input: raw, Suggestions: json.RawMessage(`[{"type":"addRules"}]`), Rule: "Bash(ls)", ExpiresAt: "2026-01-02T03:04:05Z"}},
		{Type: event.TypeApprovalResolved, Resolved: &event.ApprovalResolved{RequestID: "r", Decision: event.DecisionDeny, By: event.ByTimeout, Message: "m"}},
		{Type: event.TypeSessionForked, Forked: &event.SessionForked{From: "s0", AtSeq: 3}},
		{Type: event.TypeSessionRewound, Rewound: &event.SessionRewound{ToTurn: 1, Files: []string{"a"}, Conversation: true}},
		{Type: event.TypeSessionRewound, Rewound: &event.SessionRewound{ToTurn: 1}},
		{Type: event.TypeTrustRequired, Trust: &event.TrustRequired{Kind: "persona", Name: "R", Path: "/p", Hash: "h", Changes: []event.TrustChange{{Field: "tools", Trusted: "a", Now: "b"}}, Rules: []string{"Edit"}, Message: "m"}},
		{Type: event.TypePromptQueued, Queued: &event.PromptQueued{PromptID: "p", Position: 0, Message: "m"}},
		{Type: event.TypePromptDequeued, Dequeued: &event.PromptDequeued{PromptID: "p", Reason: event.DequeuedFailed, Error: "e"}},
	}
	for _, e := range full {
		e.SessionID, e.ParentToolUseID, e.Time = "s1", "tu", 1700000000000
		out = append(out, e)
	}
	return out
}

// TestEventsMatchTheirSchemas: every event's wire form (the hand-written
// encoder's) fits the Event schema and its type's own schema; so the
// schemas made from the payload types say what the encoder writes.
func TestEventsMatchTheirSchemas(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(openAPI)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range sampleEvents() {
		var v map[string]any
		if err := json.Unmarshal(append([]byte(`{"seq":1,`), e.AppendJSON(nil)[1:]...), &v); err != nil {
			t.Fatalf("%s: %v", e.Type, err)
		}
		for _, name := range []string{"Event", eventName(e.Type), "KnownEvent"} {
			s := doc.Components.Schemas[name]
			if s == nil {
				t.Fatalf("no schema %s", name)
			}
			if err := s.Value.VisitJSON(v); err != nil {
				t.Errorf("%s does not fit %s: %v\n%s", e.Type, name, err, e.AppendJSON(nil))
			}
		}
	}
	// And a wrong one does not.
	bad := map[string]any{"seq": 1.0, "type": "process:exit", "sessionId": "s", "code": "x", "signal": nil}
	if doc.Components.Schemas["ProcessExitEvent"].Value.VisitJSON(bad) == nil {
		t.Error("a process:exit with a string code fits its schema")
	}
}

// TestEveryEventTypeHasASchema: event.Types and eventPayloads name the
// same types, so a new event type cannot go without a schema.
func TestEveryEventTypeHasASchema(t *testing.T) {
	var got []event.Type
	for _, p := range eventPayloads {
		got = append(got, p.Type)
	}
	if !reflect.DeepEqual(got, event.Types) {
		t.Errorf("eventPayloads has %v, event.Types %v", got, event.Types)
	}
}
