package agentserver

import (
	"testing"

	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engine"
)

// Plan review over the agent server (Claude Code in plan mode, the real
// CLI on the fake model): the plan event carries the plan; POST /plan
// revises (409 once decided), then approves in acceptEdits; plan_resolved
// says what was decided.
func TestPlanOverHTTP(t *testing.T) {
	e := newEnv(t, engine.ClaudeCode, "")
	if code, body := e.post("/session", `{"permissionMode":"plan"}`); code != 200 {
		t.Fatalf("POST /session: %d %s", code, body)
	}
	plan := func(text string) claudetest.Reply {
		return claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse("", "ExitPlanMode", map[string]any{"plan": text})}}
	}
	e.api.Script(plan("# plan 1"), plan("# plan 2"), claudetest.TextReply("going on"))
	s := e.openStream("", "")
	if code, _ := e.post("/plan", `{"decision":"approve"}`); code != 409 {
		t.Errorf("a decision with no plan: %d, want 409", code)
	}
	e.prompt("make a plan")
	evs := s.until(t, func(ev Event) bool { return ev.Type == "plan" })
	if p := evs[len(evs)-1]; p.Plan != "# plan 1" || p.PlanID == "" || p.ExpiresAt == "" {
		t.Fatalf("plan event %+v", p)
	}
	if code, _ := e.post("/plan", `{"decision":"revise"}`); code != 400 {
		t.Errorf("revise without feedback: %d, want 400", code)
	}
	if code, body := e.post("/plan", `{"decision":"revise","feedback":"more tests"}`); code != 200 {
		t.Fatalf("revise: %d %s", code, body)
	}
	evs = s.until(t, func(ev Event) bool { return ev.Type == "plan" })
	if p := evs[len(evs)-1]; p.Plan != "# plan 2" {
		t.Fatalf("second plan %+v", p)
	}
	if code, body := e.post("/plan", `{"decision":"approve","mode":"acceptEdits"}`); code != 200 {
		t.Fatalf("approve: %d %s", code, body)
	}
	var decided []string
	for _, ev := range append(evs, s.until(t, isEnd)...) {
		if ev.Type == "plan_resolved" {
			decided = append(decided, ev.Decision+":"+ev.Mode+ev.Feedback+":"+ev.By)
		}
	}
	if len(decided) != 2 || decided[0] != "revise:more tests:user" || decided[1] != "approve:acceptEdits:user" {
		t.Fatalf("plan_resolved %q", decided)
	}
}
