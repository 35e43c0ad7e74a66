package gateway

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/event"
)

// POST /turn takes 004's per-turn TurnOpts: systemPromptAppend reaches
// the model (the real Claude CLI against the fake) after the persona's
// prompt and toolsOverride narrows the tools it is offered; an override
// that would widen what the persona allows is 403, a malformed one 400,
// and neither starts anything.
func TestTurnOptionsThroughTheGateway(t *testing.T) {
	s := newServer(t, nil)
	if err := os.MkdirAll(filepath.Join(s.root, "agents"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.root, "agents", "AGENT_REVIEWER.md"),
		[]byte("---\ntools: \"Read,Grep,Glob\"\nauto_approve_tools: [\"Read\"]\n---\nYou review. Codeword: PERSONA-BODY.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, out := s.createJSON(map[string]any{"persona": "REVIEWER"})
	id := sessionID(t, out)
	turn := func(extra map[string]any) (int, string) {
		body := map[string]any{"sessionId": id, "message": "hello"}
		for k, v := range extra {
			body[k] = v
		}
		b, _ := json.Marshal(body)
		return s.do("POST", "/api/harness/turn?events=all", string(b))
	}
	for _, c := range []struct {
		extra map[string]any
		code  int
		says  string
	}{
		{map[string]any{"toolsOverride": "Read,Edit"}, 403, `\"Edit\"`},
		{map[string]any{"autoApproveToolsOverride": []string{"Grep"}}, 403, `\"Grep\"`},
		{map[string]any{"toolsOverride": ","}, 400, "toolsOverride"},
		{map[string]any{"disallowedToolsOverride": []string{""}}, 400, "disallowedToolsOverride"},
		{map[string]any{"systemPromptAppend": strings.Repeat("x", 32<<10+1)}, 400, "systemPromptAppend"},
		{map[string]any{"toolsOverride": 3}, 400, ""},
	} {
		code, body := turn(c.extra)
		if code != c.code || !strings.Contains(body, c.says) {
			t.Errorf("%.60v: %d %s, want %d saying %s", c.extra, code, body, c.code, c.says)
		}
	}
	if n := len(s.api.Requests()); n != 0 {
		t.Fatalf("refused turns made %d model requests", n)
	}

	s.api.Script(claudetest.TextReply("ok"))
	b, _ := json.Marshal(map[string]any{"sessionId": id, "message": "hello", "toolsOverride": "Read",
		"systemPromptAppend": "Codeword: GW-EXTRA.", "disallowedToolsOverride": []string{"Glob"}, "autoApproveToolsOverride": []string{}})
	resp := s.send("POST", "/api/harness/turn?events=all", string(b))
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("turn: %d", resp.StatusCode)
	}
	evs := events(readSSE(t, resp.Body, func(e sseEvent) bool { return e.Event.Type == event.TypeProcessExit }))
	if last := evs[len(evs)-1]; last.Event.Type != event.TypeProcessExit || !strings.Contains(last.Data, `"signal":null`) {
		t.Errorf("last event %s", last.Data)
	}
	var main *claudetest.Request
	for _, r := range s.api.Requests() {
		if len(r.Tools) > 0 {
			main = r
		}
	}
	if main == nil {
		t.Fatal("no model request with tools")
	}
	sys := main.SystemText()
	if !strings.Contains(sys, "GW-EXTRA") || strings.Index(sys, "PERSONA-BODY") > strings.Index(sys, "GW-EXTRA") {
		t.Errorf("the appended prompt is not after the persona's in the system prompt: %q", sys)
	}
	if !slices.Contains(main.Tools, "Read") || slices.Contains(main.Tools, "Grep") || slices.Contains(main.Tools, "Glob") {
		t.Errorf("toolsOverride Read: the model was offered %q", main.Tools)
	}
}
