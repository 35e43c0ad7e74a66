package claudecode_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chirality/harness/claudecode"
	"github.com/chirality/harness/event"
)

func decodeString(t *testing.T, input string) ([]event.Event, []*claudecode.LineError) {
	t.Helper()
	var lineErrs []*claudecode.LineError
	d := claudecode.NewDecoder(strings.NewReader(input), claudecode.DecoderOptions{
		SessionID:   "s",
		OnLineError: func(e *claudecode.LineError) { lineErrs = append(lineErrs, e) },
	})
	var evs []event.Event
	for d.Next() {
		evs = append(evs, d.Event())
	}
	if err := d.Err(); err != nil {
		t.Fatal(err)
	}
	return evs, lineErrs
}

func eventsJSON(evs []event.Event) string {
	var b strings.Builder
	for _, e := range evs {
		b.Write(e.AppendJSON(nil))
		b.WriteByte('\n')
	}
	return b.String()
}

func TestDecoderMapping(t *testing.T) {
	tests := []struct {
		name, input, want string
		lineErrors        int
	}{
		{
			name:  "key order does not matter",
			input: `{"event":{"delta":{"text":"hi","type":"text_delta"},"type":"content_block_delta","index":0},"type":"stream_event"}`,
			want:  `{"type":"chat:delta","sessionId":"s","text":"hi"}`,
		},
		{
			name:  "escapes and surrogate pairs",
			input: `{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a\"b\\c\n\u00e9\ud83c\udf89\u2028<"}}}`,
			want:  `{"type":"chat:delta","sessionId":"s","text":"a\"b\\c\né🎉\u2028\u003c"}`,
		},
		{
			// Recorded from the real CLI against a closed port.
			name:  "api_retry without an answer",
			input: `{"type":"system","subtype":"api_retry","attempt":3,"max_retries":10,"retry_delay_ms":2303,"error_status":null,"error":"unknown","session_id":"98fd","uuid":"10f5"}`,
			want:  `{"type":"session:retry","sessionId":"s","attempt":3,"maxRetries":10,"delayMs":2303,"error":"API unreachable"}`,
		},
		{
			// Recorded from the real CLI (2.1.329; usage shortened): --resume-session-at a uuid the transcript lacks.
			name:  "a cut whose message is gone",
			input: `{"type":"result","subtype":"error_during_execution","duration_ms":0,"duration_api_ms":0,"is_error":true,"num_turns":0,"stop_reason":null,"session_id":"5c1e1363-3fb4-4ba0-b4d3-f14ac1efbb47","total_cost_usd":0,"usage":{"input_tokens":0,"output_tokens":0},"modelUsage":{},"permission_denials":[],"uuid":"d9f0d2b3-b5b8-47af-b3ef-b352e506b1d9","errors":["No message found with message.uuid of: 11111111-2222-4333-8444-555555555555"],"result_index":0}`,
			want:  `{"type":"session:error","sessionId":"s","error":"No message found with message.uuid of: 11111111-2222-4333-8444-555555555555","kind":"resume_not_found","subtype":"error_during_execution"}`,
		},
		{
			name:  "thinking",
			input: `{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}}`,
			want:  `{"type":"thinking:delta","sessionId":"s","text":"hmm"}`,
		},
		{
			name:  "unknown types and subtypes are ignored",
			input: "{\"type\":\"rate_limit_event\",\"x\":1}\n{\"type\":\"system\",\"subtype\":\"task_started\"}\n{\"type\":\"keep_alive\"}\n{\"type\":\"stream_event\",\"event\":{\"type\":\"brand_new\",\"delta\":{\"type\":\"citations_delta\"}}}",
			want:  ``,
		},
		{
			name:       "malformed lines are skipped, decoding goes on",
			input:      "{\"type\":\"stream_event\",\"event\":{\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"a\"}}}\nnot json at all\n{\"type\":\"stream_event\",\"event\":{\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":7}}}\n{\"type\":\"stream_event\"\n{\"type\":\"stream_event\",\"event\":{\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"b\"}}}",
			want:       `{"type":"chat:delta","sessionId":"s","text":"a"}` + "\n" + `{"type":"chat:delta","sessionId":"s","text":"b"}`,
			lineErrors: 3,
		},
		{
			name:  "blank lines and CRLF",
			input: "\n\r\n   \n{\"type\":\"stream_event\",\"event\":{\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}}\r\n\n",
			want:  `{"type":"chat:delta","sessionId":"s","text":"x"}`,
		},
		{
			name: "tool input assembled from the stream when no assistant frame comes",
			input: `{"type":"stream_event","event":{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t1","name":"Read","input":{}}}}
{"type":"stream_event","event":{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"file_"}}}
{"type":"stream_event","event":{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"path\":\"a.go\"}"}}}
{"type":"stream_event","event":{"type":"content_block_stop","index":1}}`,
			want: `{"type":"tool:start","sessionId":"s","toolUseId":"t1","name":"Read","input":{"file_path":"a.go"}}`,
		},
		{
			name: "tool start once: assistant frame first, stream stop after",
			input: `{"type":"stream_event","event":{"type":"message_start","message":{"id":"m1"}}}
{"type":"stream_event","event":{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t1","name":"Bash","input":{}}}}
{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"command\":\"ls\"}"}}}
{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]}}
{"type":"stream_event","event":{"type":"content_block_stop","index":0}}`,
			want: `{"type":"tool:start","sessionId":"s","toolUseId":"t1","name":"Bash","input":{"command":"ls"}}`,
		},
		{
			name:  "assistant text without streaming is emitted once",
			input: `{"type":"assistant","message":{"id":"m9","content":[{"type":"thinking","thinking":"hm"},{"type":"text","text":"whole block"}]}}`,
			want:  `{"type":"thinking:delta","sessionId":"s","text":"hm"}` + "\n" + `{"type":"chat:delta","sessionId":"s","text":"whole block"}`,
		},
		{
			name: "streamed text is not repeated by the assistant frame",
			input: `{"type":"stream_event","event":{"type":"message_start","message":{"id":"m1"}}}
{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}}
{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"hi"}]}}`,
			want: `{"type":"chat:delta","sessionId":"s","text":"hi"}`,
		},
		{
			name: "subagent frames carry parentToolUseId",
			input: `{"type":"assistant","parent_tool_use_id":"task_1","message":{"id":"sub1","content":[{"type":"text","text":"sub says"},{"type":"tool_use","id":"t2","name":"Grep","input":{"pattern":"x"}}]}}
{"type":"user","parent_tool_use_id":"task_1","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":[{"type":"text","text":"line1"},{"type":"image","source":{}},{"type":"text","text":"line2"}],"is_error":true}]}}`,
			want: `{"type":"chat:delta","sessionId":"s","parentToolUseId":"task_1","text":"sub says"}
{"type":"tool:start","sessionId":"s","parentToolUseId":"task_1","toolUseId":"t2","name":"Grep","input":{"pattern":"x"}}
{"type":"tool:result","sessionId":"s","parentToolUseId":"task_1","toolUseId":"t2","content":"line1\n[image]\nline2","isError":true}`,
		},
		{
			name:  "success with is_error is an error",
			input: `{"type":"result","subtype":"success","is_error":true,"result":"Not logged in · Please run /login","total_cost_usd":0}`,
			want:  `{"type":"session:error","sessionId":"s","error":"Not logged in · Please run /login","kind":"not_logged_in","subtype":"success"}`,
		},
		{
			name:  "interrupted turn",
			input: "{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"[Request interrupted by user]\"}]}}\n{\"type\":\"result\",\"subtype\":\"error_during_execution\",\"is_error\":true,\"total_cost_usd\":0.5}",
			want:  `{"type":"session:error","sessionId":"s","error":"interrupted","kind":"interrupted","subtype":"error_during_execution","costUsd":0.5}`,
		},
		{
			name:  "budget",
			input: `{"type":"result","subtype":"error_max_budget_usd","is_error":true,"errors":["Reached maximum budget ($0.01)"]}`,
			want:  `{"type":"session:error","sessionId":"s","error":"Reached maximum budget ($0.01)","kind":"max_budget","subtype":"error_max_budget_usd"}`,
		},
		{
			name:  "a subagent's result does not end the turn",
			input: `{"type":"result","parent_tool_use_id":"task_1","subtype":"success","is_error":false,"result":"sub done"}`,
			want:  ``,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs, lineErrs := decodeString(t, tt.input)
			got := strings.TrimSuffix(eventsJSON(evs), "\n")
			if got != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}
			if len(lineErrs) != tt.lineErrors {
				t.Errorf("%d line errors, want %d: %v", len(lineErrs), tt.lineErrors, lineErrs)
			}
		})
	}
}

func TestDecoderLongLines(t *testing.T) {
	big := strings.Repeat("é", 3<<20) // 6 MB of two-byte runes: far past any 64 KiB reader
	line, _ := json.Marshal(map[string]any{"type": "stream_event", "event": map[string]any{
		"type": "content_block_delta", "delta": map[string]any{"type": "text_delta", "text": big}}})
	evs, errs := decodeString(t, string(line)+"\n"+string(line)) // the second without a final newline
	if len(errs) != 0 || len(evs) != 2 || evs[0].Text != big || evs[1].Text != big {
		t.Fatalf("%d events, %d errors", len(evs), len(errs))
	}

	var lineErrs []*claudecode.LineError
	d := claudecode.NewDecoder(strings.NewReader(string(line)+"\n"+`{"type":"result","subtype":"success","result":"ok"}`),
		claudecode.DecoderOptions{MaxLineBytes: 1 << 20, OnLineError: func(e *claudecode.LineError) { lineErrs = append(lineErrs, e) }})
	var got []event.Type
	for d.Next() {
		got = append(got, d.Event().Type)
	}
	if len(lineErrs) != 1 || !lineErrs[0].Oversize || lineErrs[0].Line != 1 {
		t.Errorf("line errors = %v", lineErrs)
	}
	if len(got) != 2 || got[0] != event.TypeChatComplete {
		t.Errorf("events after the oversized line = %v", got)
	}
}

func TestEventJSONRoundTrip(t *testing.T) {
	code := 3
	evs := []event.Event{
		{Type: event.TypeSessionInit, SessionID: "s", Init: &event.SessionInit{ConversationID: "c", Model: "m", Tools: []string{"Bash"}}},
		{Type: event.TypeChatDelta, SessionID: "s", ParentToolUseID: "p", Text: "hi \x00 \t ☃"},
		{Type: event.TypeToolStart, SessionID: "s", ToolStart: &event.ToolStart{ToolUseID: "t", Name: "Bash", Input: json.RawMessage(`{"a":1}`)}},
		{Type: event.TypeToolResult, SessionID: "s", ToolResult: &event.ToolResult{ToolUseID: "t", Content: "out", IsError: false}},
		{Type: event.TypeSessionComplete, SessionID: "s", Complete: &event.SessionComplete{CostUSD: 0, Usage: json.RawMessage(`{}`)}},
		{Type: event.TypeSessionError, SessionID: "s", Error: &event.SessionError{Error: "boom", Kind: event.ErrorProcess, ExitCode: &code}},
		{Type: event.TypeProcessExit, SessionID: "s", Exit: &event.ProcessExit{Code: -1, Signal: "SIGKILL"}},
	}
	for _, e := range evs {
		b, err := json.Marshal(e)
		if err != nil || !json.Valid(b) {
			t.Fatalf("%s: invalid JSON %s (%v)", e.Type, b, err)
		}
		var back event.Event
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: %v", e.Type, err)
		}
		again, _ := json.Marshal(back)
		if string(again) != string(b) {
			t.Errorf("round trip changed %s into %s", b, again)
		}
	}
	// Invalid UTF-8 becomes U+FFFD, as encoding/json does: the output is
	// always valid JSON.
	b, _ := json.Marshal(event.Event{Type: event.TypeChatDelta, Text: "bad \xff byte"})
	if !json.Valid(b) || !strings.Contains(string(b), `bad \ufffd byte`) {
		t.Errorf("invalid UTF-8 encoded as %s", b)
	}
	// Fields the GUI relies on are present even at their zero value.
	b, _ = json.Marshal(evs[3])
	if !strings.Contains(string(b), `"isError":false`) {
		t.Errorf("tool:result without isError: %s", b)
	}
	b, _ = json.Marshal(evs[4])
	if !strings.Contains(string(b), `"costUsd":0`) {
		t.Errorf("session:complete without costUsd: %s", b)
	}
}
