package codex_test

import (
	"strings"
	"testing"

	"github.com/chirality/harness/codex/codextest"
	"github.com/chirality/harness/engine"
)

// TestRealCodexSwitch: a model, a persona (baseInstructions) and a
// permission mode changed between turns of one thread reach the next
// model request (thread/resume takes them all): the new model, the new
// persona as the thread's first input (the old one gone), the new
// sandbox in Codex's permissions text.
func TestRealCodexSwitch(t *testing.T) {
	g := newRig(t)
	g.fake.Script(codextest.Reply{Text: "one"})
	r := g.turn(t, engine.Request{SessionKey: "sw", Message: "first", Model: "model-a", SystemPrompt: "PERSONA-A"}, nil)
	if r.err != nil {
		t.Fatal(r.err)
	}
	reqs := g.fake.Requests()
	if first := reqs[len(reqs)-1]; first.Model != "model-a" || first.Texts()[0] != "PERSONA-A" {
		t.Fatalf("first request: model %q, first input %.40q", first.Model, first.Texts()[0])
	}
	g.fake.Script(codextest.Reply{Text: "two"})
	r = g.turn(t, engine.Request{SessionKey: "sw", Message: "second", Resume: r.events[0].Init.ConversationID,
		Model: "model-b", SystemPrompt: "PERSONA-B", PermissionMode: "plan"}, nil)
	if r.err != nil {
		t.Fatal(r.err)
	}
	reqs = g.fake.Requests()
	last := reqs[len(reqs)-1]
	texts := last.Texts()
	if last.Model != "model-b" {
		t.Errorf("second request's model %q, want model-b", last.Model)
	}
	if texts[0] != "PERSONA-B" {
		t.Errorf("second request's first input %.60q, want the new persona", texts[0])
	}
	all := strings.Join(texts, "\n")
	if strings.Contains(all, "PERSONA-A") {
		t.Error("the old persona is still in the second request")
	}
	if !has(texts, "first") || !has(texts, "second") {
		t.Errorf("the second request lost the conversation: %q", texts)
	}
	if i := strings.LastIndex(all, "<permissions instructions>"); i < 0 || !strings.Contains(all[i:], "`read-only`") {
		t.Errorf("the plan mode's read-only sandbox is not in the second request's last permissions text")
	}
}
