package claudecode

import (
	"bytes"
	"encoding/json"

	"github.com/chirality/harness/engine"
)

// canUseTool is the CLI's question with --permission-prompt-tool stdio:
//
//	{"type":"control_request","request_id":"…","request":{"subtype":"can_use_tool",
//	 "tool_name":"Bash","input":{…},"tool_use_id":"toolu_…","permission_suggestions":[…]}}
type canUseTool struct {
	ID      string `json:"request_id"`
	Request struct {
		Subtype     string          `json:"subtype"`
		ToolName    string          `json:"tool_name"`
		Input       json.RawMessage `json:"input"`
		ToolUseID   string          `json:"tool_use_id"`
		Suggestions json.RawMessage `json:"permission_suggestions"`
	} `json:"request"`
}

func isCanUseTool(raw []byte) bool {
	return bytes.Contains(raw, []byte(`"can_use_tool"`))
}

// askApproval asks the turn's Approver (on a goroutine of its own, so the
// reader keeps reading) and answers the CLI on stdin:
// {"behavior":"allow","updatedInput":{…}} or {"behavior":"deny","message":"…"}.
func (t *Turn) askApproval(raw []byte) {
	defer t.late.Done()
	var q canUseTool
	if err := json.Unmarshal(raw, &q); err != nil || q.ID == "" || q.Request.Subtype != "can_use_tool" {
		t.stdin.refuse(raw)
		return
	}
	t.asking.Add(1) // a steer meanwhile waits for the answer (Steer)
	defer t.asking.Add(-1)
	input := q.Request.Input
	if len(input) == 0 || string(input) == "null" {
		input = json.RawMessage(`{}`)
	}
	d := (*t.approver.Load()).Ask(t.approvals, engine.ApprovalRequest{
		ToolUseID: q.Request.ToolUseID, ToolName: q.Request.ToolName, Input: input, Suggestions: q.Request.Suggestions,
	})
	var answer map[string]any
	if d.Allow {
		upd := input
		if len(d.UpdatedInput) > 0 {
			upd = d.UpdatedInput
		}
		answer = map[string]any{"behavior": "allow", "updatedInput": upd}
	} else {
		msg := d.Message
		if msg == "" {
			msg = "The user denied this tool use."
		}
		answer = map[string]any{"behavior": "deny", "message": msg}
	}
	if err := t.stdin.writeLine(map[string]any{"type": "control_response", "response": map[string]any{
		"subtype": "success", "request_id": q.ID, "response": answer,
	}}); err != nil {
		t.log.Debug().Str("session", t.key).Err(err).Msg("approval answer not delivered: the CLI's stdin is closed")
	}
}
