package gateway

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chirality/harness"
	"github.com/chirality/harness/claudecode/claudetest"
)

// Plan review on claude-agent-acp (against the fake Messages API): in
// permission mode plan its ExitPlanMode reaches the core's Approver, so
// the session waits with plan:ready; an approve lets the agent go on.
// The adapter (0.101.0) sends neither the plan's text in the permission
// request (rawInput {}, content []) nor in the tool call, so plan:ready
// says the agent gave none.
func TestPlanRouteOnClaudeACP(t *testing.T) {
	a := acpAgents[1]
	bin, err := filepath.Abs("../node_modules/.bin/" + a.bin)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("the pinned %s is missing (make cli): %v", a.bin, err)
	}
	t.Setenv(a.binVar, bin)
	s := newServerWith(t, func(c *harness.Config) { c.ChildEnv = append(c.ChildEnv, a.env("")...); c.Approvals = true }, nil)
	s.api.SetResponder(func(r *claudetest.Request) claudetest.Reply {
		switch body := string(r.Body); {
		case len(r.Tools) == 0:
			return claudetest.TextReply("A title")
		case strings.Contains(body, "toolu_acpplan"):
			return claudetest.TextReply("implementing")
		case strings.Contains(body, "plan it"):
			return claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse("toolu_acpplan", "ExitPlanMode", map[string]any{"plan": "# acp plan"})}}
		}
		return claudetest.TextReply("")
	})
	id := s.createOn(a.name)
	if code, out := s.do("PATCH", "/api/harness/session/"+id, `{"permissionMode":"plan"}`); code != 200 {
		t.Fatalf("PATCH = %d %s", code, out)
	}
	resp := s.send("POST", "/api/harness/turn?events=all", `{"sessionId":"`+id+`","message":"plan it"}`)
	defer resp.Body.Close()
	waitFor(t, "plan:ready", func() bool { return s.h.PendingPlan(id) != nil })
	if p := s.h.PendingPlan(id); p.Plan == "" || p.PlanID == "" {
		t.Fatalf("plan %q", p.Plan)
	}
	if code, out := s.do("POST", "/api/harness/session/"+id+"/plan", `{"decision":"approve"}`); code != 200 {
		t.Fatalf("approve = %d %s", code, out)
	}
	waitFor(t, "the turn to end", func() bool { return !s.h.IsRunning(id) })
}
