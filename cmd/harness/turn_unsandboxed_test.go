package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"testing"

	"github.com/chirality/harness/event"
)

// `turn` says on stderr when a use it asks about would run outside the
// agent's sandbox, and says nothing of the sandbox otherwise.
func TestTurnApprovalSaysUnsandboxed(t *testing.T) {
	var out, errOut bytes.Buffer
	w := bufio.NewWriter(&out)
	p := &textPrinter{out: w, errw: &errOut}
	for _, e := range []event.Event{
		{Type: event.TypeUserMessage, Text: "push"},
		{Type: event.TypeApprovalRequested, Approval: &event.ApprovalRequested{RequestID: "r1", ToolUseID: "t1", ToolName: "Bash", Input: json.RawMessage(`{"command":"git push"}`), Unsandboxed: true}},
		{Type: event.TypeApprovalRequested, Approval: &event.ApprovalRequested{RequestID: "r2", ToolUseID: "t2", ToolName: "Bash", Input: json.RawMessage(`{"command":"ls"}`)}},
	} {
		p.print(&e)
	}
	w.Flush()
	want := "? Bash wants to run (MAYBE OUTSIDE its sandbox) {\"command\":\"git push\"}\n? Bash wants to run {\"command\":\"ls\"}\n"
	if errOut.String() != want {
		t.Errorf("stderr %q, want %q", errOut.String(), want)
	}
}
