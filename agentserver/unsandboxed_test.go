package agentserver

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chirality/harness/event"
)

// An approval of a use that would run outside the agent's sandbox says
// so (unsandboxed: true); any other approval has no unsandboxed field.
func TestApprovalSaysUnsandboxed(t *testing.T) {
	m := &mapper{}
	var out []Event
	out = m.record(&event.Event{Type: event.TypeUserMessage, Text: "hi"}, out)
	out = m.record(&event.Event{Type: event.TypeApprovalRequested, Approval: &event.ApprovalRequested{
		RequestID: "r1", ToolUseID: "t1", ToolName: "Bash", Input: json.RawMessage(`{"command":"ls"}`), Unsandboxed: true}}, out)
	out = m.record(&event.Event{Type: event.TypeApprovalRequested, Approval: &event.ApprovalRequested{
		RequestID: "r2", ToolUseID: "t2", ToolName: "Bash", Input: json.RawMessage(`{"command":"pwd"}`)}}, out)
	var got []string
	for _, ev := range out {
		if ev.Type != "approval" {
			continue
		}
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(b))
	}
	if len(got) != 2 {
		t.Fatalf("approvals %q, want two", got)
	}
	if !strings.Contains(got[0], `"requestId":"r1"`) || !strings.Contains(got[0], `"unsandboxed":true`) {
		t.Errorf("unsandboxed approval %s: no \"unsandboxed\":true", got[0])
	}
	if !strings.Contains(got[1], `"requestId":"r2"`) || strings.Contains(got[1], "unsandboxed") {
		t.Errorf("sandboxed approval %s: has an unsandboxed field", got[1])
	}
}
