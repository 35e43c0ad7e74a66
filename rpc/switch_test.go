package rpc

import (
	"encoding/json"
	"os"
	"path/filepath"
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
