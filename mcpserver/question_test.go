package mcpserver

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chirality/harness/event"
)

// The elicitation says when the use would run outside the agent's
// sandbox, and only then.
func TestQuestionSaysUnsandboxed(t *testing.T) {
	q := event.ApprovalRequested{ToolName: "shell", Input: json.RawMessage(`{"command":"make install"}`)}
	if got := question(q); strings.Contains(got, "sandbox") || !strings.Contains(got, "shell") || !strings.Contains(got, "make install") {
		t.Errorf("plain: %q", got)
	}
	q.Unsandboxed = true
	if got := question(q); !strings.Contains(got, "shell outside its sandbox") || !strings.Contains(got, "make install") {
		t.Errorf("unsandboxed: %q", got)
	}
}
