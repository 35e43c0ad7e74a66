package gateway

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chirality/harness"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engine"
)

// POST /session/{id}/plan on Claude Code in plan mode (the real CLI on
// the fake model): 409 while no plan waits, 400 for a bad decision, 200
// approving in acceptEdits; the agent goes on and the session keeps the
// mode.
func TestPlanRoute(t *testing.T) {
	s := newServerWith(t, func(c *harness.Config) { c.Approvals = true }, nil)
	s.api.SetResponder(func(r *claudetest.Request) claudetest.Reply {
		if strings.Contains(string(r.Body), "toolu_plan") {
			return claudetest.TextReply("implementing")
		}
		if strings.Contains(string(r.Body), "plan it") {
			return claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse("toolu_plan", "ExitPlanMode", map[string]any{"plan": "# the plan"})}}
		}
		return claudetest.TextReply("unrelated")
	})
	id := s.createOn(engine.ClaudeCode)
	if code, out := s.do("PATCH", "/api/harness/session/"+id, `{"permissionMode":"plan"}`); code != 200 {
		t.Fatalf("PATCH = %d %s", code, out)
	}
	path := "/api/harness/session/" + id + "/plan"
	if code, out := s.do("POST", path, `{"decision":"approve"}`); code != http.StatusConflict {
		t.Fatalf("a decision with no plan = %d %s, want 409", code, out)
	}
	resp := s.send("POST", "/api/harness/turn?events=all", `{"sessionId":"`+id+`","message":"plan it"}`)
	defer resp.Body.Close()
	waitFor(t, "plan:ready", func() bool { return s.h.PendingPlan(id) != nil })
	if p := s.h.PendingPlan(id); p.Plan != "# the plan" {
		t.Fatalf("plan %q", p.Plan)
	}
	if code, out := s.do("POST", path, `{"decision":"approve","mode":"bypassPermissions"}`); code != http.StatusBadRequest {
		t.Fatalf("approve in bypassPermissions = %d %s, want 400", code, out)
	}
	if code, out := s.do("POST", path, `{"decision":"approve","mode":"acceptEdits"}`); code != 200 || !strings.Contains(out, `"decided":true`) {
		t.Fatalf("approve = %d %s", code, out)
	}
	if code, _ := s.do("POST", path, `{"decision":"revise","feedback":"late"}`); code != http.StatusConflict {
		t.Fatalf("a second decision = %d, want 409", code)
	}
	waitFor(t, "the turn to end", func() bool { return !s.h.IsRunning(id) })
	code, out := s.do("GET", "/api/harness/session/"+id, "")
	if code != 200 || !strings.Contains(out, `"permissionMode":"acceptEdits"`) {
		t.Fatalf("the session after approve: %d %s", code, out)
	}
}
