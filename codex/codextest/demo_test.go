package codextest

import (
	"encoding/json"
	"strings"
	"testing"
)

func demoRequest(t *testing.T, items ...map[string]any) *Request {
	t.Helper()
	r := &Request{Tools: []string{"exec_command"}}
	for _, it := range items {
		b, err := json.Marshal(it)
		if err != nil {
			t.Fatal(err)
		}
		r.Input = append(r.Input, b)
	}
	return r
}

func userText(s string) map[string]any {
	return map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": s}}}
}

// The demo model on the Responses API answers as on the Messages API:
// reasoning, markdown, then `ls -la`; the listing's follow-up is a
// summary; only the explicit error command fails.
func TestDemoResponder(t *testing.T) {
	demo := DemoResponder(DemoOptions{Error: func(p string) bool { return strings.HasPrefix(p, "/demo error") }})

	first := demo(demoRequest(t, userText("<environment_context>cwd</environment_context>"), userText("any error handling issues?")))
	if first.Status != 0 || first.Reasoning == "" || !strings.Contains(first.Text, "any error handling issues?") ||
		first.Call == nil || first.Call.Command != "ls -la" {
		t.Fatalf("first answer = %+v", first)
	}
	listing := "total 8\ndrwxr-xr-x 2 u u 4096 Jan 1 00:00 .\ndrwxr-xr-x 9 u u 4096 Jan 1 00:00 ..\n-rw-r--r-- 1 u u 1 Jan 1 00:00 a.txt\n-rw-r--r-- 1 u u 1 Jan 1 00:00 b.txt\n"
	follow := demo(demoRequest(t, userText("hi"), map[string]any{"type": "function_call", "call_id": "c1", "name": "exec_command", "arguments": "{}"},
		map[string]any{"type": "function_call_output", "call_id": "c1", "output": "Exit code: 0\nOutput:\n" + listing}))
	if follow.Call != nil || !strings.Contains(follow.Text, "**2 entries**") {
		t.Fatalf("summary = %+v", follow)
	}
	// Issue 34.3: a listing that did not run is said so, not "0 entries".
	denied := demo(demoRequest(t, userText("hi"), map[string]any{"type": "function_call", "call_id": "c1", "name": "exec_command", "arguments": "{}"},
		map[string]any{"type": "function_call_output", "call_id": "c1", "output": "exec command rejected by user"}))
	if !strings.Contains(denied.Text, "did not run: exec command rejected by user") || strings.Contains(denied.Text, "entries") {
		t.Fatalf("a denied listing = %+v", denied)
	}
	if r := demo(demoRequest(t, userText("/demo error"))); r.Status != 400 {
		t.Fatalf("/demo error answered %+v", r)
	}
	if r := demo(demoRequest(t, userText("a long one"))); len(r.Text) < 1000 || r.Call != nil {
		t.Fatalf("long answer = %d bytes", len(r.Text))
	}
}

// One listed entry is "1 entry", not "1 entries".
func TestEntriesWord(t *testing.T) {
	for n, want := range map[int]string{0: "entries", 1: "entry", 2: "entries"} {
		if got := entriesWord(n); got != want {
			t.Errorf("%d: %q, want %q", n, got, want)
		}
	}
}

// In Codex's plan collaboration mode the demo model proposes DemoPlan in
// a <proposed_plan> block; out of it, the same prompt gets the usual
// answer.
func TestDemoResponderPlans(t *testing.T) {
	demo := DemoResponder(DemoOptions{})
	dev := func(text string) map[string]any {
		return map[string]any{"type": "message", "role": "developer", "content": []any{map[string]any{"type": "input_text", "text": text}}}
	}
	plan := demo(demoRequest(t, dev("<collaboration_mode># Plan Mode (Conversational)\n…"), userText("add a line")))
	if plan.Call != nil || !strings.Contains(plan.Text, "<proposed_plan>\n"+DemoPlan+"\n</proposed_plan>") {
		t.Fatalf("plan mode answer = %+v", plan)
	}
	after := demo(demoRequest(t, dev("<collaboration_mode># Plan Mode (Conversational)\n…"), userText("add a line"),
		dev("<collaboration_mode># Collaboration Mode: Default\n…"), userText("Implement the plan.")))
	if after.Call == nil || strings.Contains(after.Text, "proposed_plan") {
		t.Fatalf("default mode answer = %+v", after)
	}
}
