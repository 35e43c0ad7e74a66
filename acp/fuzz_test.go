package acp_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/chirality/harness/acp"
	"github.com/chirality/harness/event"
)

// FuzzDecodeUpdate: any session/update params decode without panic
// (ErrBadUpdate or an Update), and whatever decodes maps to events that
// keep the contract: a tool:start at most once per tool call, before its
// result, and valid JSON inputs.
func FuzzDecodeUpdate(f *testing.F) {
	for _, s := range []string{
		`{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"},"messageId":"m"}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"hmm"}}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t","title":"ls","kind":"execute","status":"pending","rawInput":{}}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t","status":"completed","content":[{"type":"content","content":{"type":"text","text":"a"}},{"type":"diff","path":"/a","newText":"x"},{"type":"terminal","terminalId":"1"}],"rawOutput":"a"}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[{"content":"a","priority":"high","status":"in_progress"}]}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"usage_update","used":1,"size":2,"cost":{"amount":0.5,"currency":"USD"}}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"brand_new"}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":7,"rawInput":"x"}}`,
		`{"update":{"sessionUpdate":"tool_call_update","toolCallId":"t","status":"failed","content":"nope","_meta":{"claudeCode":{"toolName":"Bash"}}}}`,
		`{"update":[]}`, `[]`, `null`, `{"update":{"sessionUpdate":5}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, params []byte) {
		n, err := acp.DecodeUpdate(params)
		if err != nil {
			if !errors.Is(err, acp.ErrBadUpdate) {
				t.Fatalf("error %v is not ErrBadUpdate", err)
			}
			return
		}
		if n.Update.Kind == "" {
			t.Fatal("decoded an update without a kind")
		}
		m := acp.NewMapper()
		evs := m.Handle(n.Update)
		evs = append(evs, m.Handle(n.Update)...) // the same update twice
		evs = append(evs, m.EnsureStarted(n.Update)...)
		evs = append(evs, m.Flush()...)
		starts := map[string]int{}
		for _, e := range evs {
			switch e.Type {
			case event.TypeToolStart:
				starts[e.ToolStart.ToolUseID]++
				if starts[e.ToolStart.ToolUseID] > 1 {
					t.Fatalf("tool %q started twice", e.ToolStart.ToolUseID)
				}
				if !json.Valid(e.ToolStart.Input) {
					t.Fatalf("tool:start input %q is not JSON", e.ToolStart.Input)
				}
			case event.TypeToolResult:
				if starts[e.ToolResult.ToolUseID] != 1 {
					t.Fatalf("result of %q before its start", e.ToolResult.ToolUseID)
				}
			}
			if _, err := e.MarshalJSON(); err != nil {
				t.Fatal(err)
			}
		}
	})
}
