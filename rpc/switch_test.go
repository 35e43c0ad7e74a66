package rpc

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chirality/harness/claudecode/claudetest"
)

// turn.start takes agent and model per turn (the seed protocol): a turn
// with another agent and model on an existing thread runs with them, the
// thread remembers the latest, and a later turn without them keeps them.
// The engine stays the thread's: another providerID is -32602.
func TestTurnSwitchesAgentAndModel(t *testing.T) {
	e := newEnv(t)
	for id, word := range map[string]string{"PLANNER": "CODEWORD-PLUM", "BUILDER": "CODEWORD-FIG"} {
		p := filepath.Join(e.cwd, "agents", "AGENT_"+id+".md")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("---\ndescription: "+id+"\n---\nYou are the "+id+". "+word+".\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e.api.Script(claudetest.TextReply("planned"), claudetest.TextReply("built"), claudetest.TextReply("again"))
	c := e.start(t)
	defer c.close()
	var created struct{ Thread Thread }
	c.result(1, "thread.create", map[string]any{}, &created)
	tid := created.Thread.ThreadID
	turn := func(id int, params map[string]any) {
		t.Helper()
		params["threadId"] = tid
		params["input"] = []any{map[string]any{"type": "text", "text": "go"}}
		c.result(id, "turn.start", params, nil)
		if end := c.next("turn end", func(m msg) bool { return m.Method == "turn.completed" || m.Method == "turn.error" }); end.Method != "turn.completed" {
			t.Fatalf("turn %d: %s", id, end.raw)
		}
	}
	last := func() *claudetest.Request {
		reqs := e.api.Requests()
		return reqs[len(reqs)-1]
	}
	stored := func() meta {
		t.Helper()
		var m meta
		b, err := os.ReadFile(filepath.Join(e.cwd, ".harness", "threads", tid, "meta.json"))
		if err == nil {
			err = json.Unmarshal(b, &m)
		}
		if err != nil {
			t.Fatal(err)
		}
		return m
	}

	turn(2, map[string]any{"agent": "PLANNER", "model": map[string]any{"providerID": "anthropic", "modelID": "model-one"}})
	if r := last(); r.Model != "model-one" || !strings.Contains(r.SystemText(), "CODEWORD-PLUM") {
		t.Fatalf("first turn: model %q, system %q", r.Model, r.SystemText())
	}

	turn(3, map[string]any{"agent": "BUILDER", "model": map[string]any{"providerID": "anthropic", "modelID": "model-two"}})
	r := last()
	if r.Model != "model-two" || !strings.Contains(r.SystemText(), "CODEWORD-FIG") || strings.Contains(r.SystemText(), "CODEWORD-PLUM") {
		t.Fatalf("switched turn: model %q, system %q", r.Model, r.SystemText())
	}
	if !strings.Contains(requestText(r), "planned") {
		t.Errorf("the switched turn lost the conversation: %q", requestText(r))
	}
	if m := stored(); m.Agent != "BUILDER" || m.Model != "model-two" {
		t.Errorf("the thread remembers agent %q model %q", m.Agent, m.Model)
	}

	turn(4, map[string]any{})
	if r := last(); r.Model != "model-two" || !strings.Contains(r.SystemText(), "CODEWORD-FIG") {
		t.Errorf("a turn without agent and model: model %q, system %q", r.Model, r.SystemText())
	}

	for id, params := range map[int]map[string]any{
		5: {"agent": "NOBODY"},
		6: {"model": map[string]any{"providerID": "claude-code", "modelID": "haiku"}},
	} {
		params["threadId"] = tid
		params["input"] = []any{map[string]any{"type": "text", "text": "go"}}
		if m := c.call(id, "turn.start", params); m.Error == nil || m.Error.Code != CodeInvalidParams {
			t.Errorf("turn.start %v: %s, want -32602", params, m.raw)
		}
	}
	if m := stored(); m.Agent != "BUILDER" || m.Model != "model-two" {
		t.Errorf("a refused turn changed the thread: agent %q model %q", m.Agent, m.Model)
	}
}

func requestText(r *claudetest.Request) string {
	var b strings.Builder
	for _, m := range r.Messages {
		for _, c := range m.Content {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

// turn.start takes 004's per-turn options (an extension): the appended
// prompt reaches the model after the agent's, toolsOverride narrows the
// tools it is offered; an override that would widen, or a malformed one,
// is -32602 and starts nothing.
func TestTurnStartTakesTurnOptions(t *testing.T) {
	e := newEnv(t)
	p := filepath.Join(e.cwd, "agents", "AGENT_REVIEWER.md")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("---\ntools: \"Read,Grep,Glob\"\n---\nYou review. CODEWORD-AGENT.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := e.start(t)
	defer c.close()
	var created struct{ Thread Thread }
	c.result(1, "thread.create", map[string]any{}, &created)
	tid := created.Thread.ThreadID
	params := func(extra map[string]any) map[string]any {
		m := map[string]any{"threadId": tid, "agent": "REVIEWER", "input": []any{map[string]any{"type": "text", "text": "go"}}}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	for id, extra := range map[int]map[string]any{
		2: {"toolsOverride": "Read,Edit"},
		3: {"autoApproveToolsOverride": []string{"Read"}},
		4: {"disallowedToolsOverride": []string{""}},
		5: {"systemPromptAppend": strings.Repeat("x", 32<<10+1)},
	} {
		if m := c.call(id, "turn.start", params(extra)); m.Error == nil || m.Error.Code != CodeInvalidParams {
			t.Errorf("turn.start %.60v: %s, want -32602", extra, m.raw)
		}
	}
	if n := len(e.api.Requests()); n != 0 {
		t.Fatalf("refused turns made %d model requests", n)
	}
	e.api.Script(claudetest.TextReply("reviewed"))
	c.result(10, "turn.start", params(map[string]any{"toolsOverride": "Read", "systemPromptAppend": "CODEWORD-EXTRA."}), nil)
	if end := c.next("turn end", func(m msg) bool { return m.Method == "turn.completed" || m.Method == "turn.error" }); end.Method != "turn.completed" {
		t.Fatalf("turn: %s", end.raw)
	}
	var main *claudetest.Request
	for _, r := range e.api.Requests() {
		if len(r.Tools) > 0 {
			main = r
		}
	}
	if main == nil {
		t.Fatal("no model request with tools")
	}
	sys := main.SystemText()
	if !strings.Contains(sys, "CODEWORD-EXTRA") || strings.Index(sys, "CODEWORD-AGENT") > strings.Index(sys, "CODEWORD-EXTRA") {
		t.Errorf("the appended prompt is not after the agent's: %q", sys)
	}
	if !slices.Contains(main.Tools, "Read") || slices.Contains(main.Tools, "Grep") {
		t.Errorf("toolsOverride Read: the model was offered %q", main.Tools)
	}
}
