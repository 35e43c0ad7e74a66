package harness

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/event"
)

// planEnv is a Harness that asks (Approvals) and a Claude Code session
// in plan mode, whose fake model ends a plan with ExitPlanMode.
func planEnv(t *testing.T) (*testEnv, string) {
	t.Helper()
	e := newTestEnv(t, func(c *Config) { c.Approvals = true })
	s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct"})
	if err != nil {
		t.Fatal(err)
	}
	plan := "plan"
	if _, err := e.h.UpdateSession(s.ID, SessionUpdate{PermissionMode: &plan}); err != nil {
		t.Fatal(err)
	}
	return e, s.ID
}

func exitPlan(id, text string) claudetest.Reply {
	return claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse(id, PlanTool, map[string]any{"plan": text})}}
}

// Claude Code in plan mode (the real CLI on the fake model): its
// ExitPlanMode is a plan:ready with the plan's markdown; a revise sends
// the feedback back and the agent plans again; an approve in acceptEdits
// lets it go on, and the session's next turn runs in acceptEdits.
func TestPlanReviewClaudeCode(t *testing.T) {
	e, id := planEnv(t)
	var mu sync.Mutex
	var sawFeedback bool
	e.api.SetResponder(func(req *claudetest.Request) claudetest.Reply {
		mu.Lock()
		defer mu.Unlock()
		body := string(req.Body)
		switch {
		case strings.Contains(req.LastUserText(), "second turn"):
			return claudetest.TextReply("second turn done")
		case strings.Contains(body, "approved your plan") || (strings.Contains(body, "plan v2") && !strings.Contains(req.LastUserText(), "keep planning")):
			return claudetest.TextReply("implementing plan v2")
		case strings.Contains(req.LastUserText(), "use a table"):
			sawFeedback = true
			return exitPlan("toolu_plan2", "# plan v2\n\n1. a table")
		case strings.Contains(body, "plan the work"):
			return exitPlan("toolu_plan1", "# plan v1\n\n1. a list")
		}
		return claudetest.TextReply("unrelated")
	})
	ctx := context.Background()
	if err := e.h.DecidePlan(id, PlanDecision{Decision: "approve"}); !errors.Is(err, ErrNoPlan) {
		t.Fatalf("a decision with no turn = %v, want ErrNoPlan", err)
	}
	tr, err := e.h.StartTurn(ctx, TurnRequest{SessionID: id, Message: "plan the work"})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "plan v1", func() bool { p := e.h.PendingPlan(id); return p != nil && strings.Contains(p.Plan, "plan v1") })
	for _, bad := range []PlanDecision{{Decision: "yes"}, {Decision: "revise"}, {Decision: "approve", Mode: "bypassPermissions"}, {Decision: "approve", Feedback: "x"}} {
		if err := e.h.DecidePlan(id, bad); !errors.Is(err, ErrInvalidPlanDecision) {
			t.Errorf("DecidePlan(%+v) = %v, want ErrInvalidPlanDecision", bad, err)
		}
	}
	if err := e.h.DecidePlan(id, PlanDecision{Decision: "revise", Feedback: "use a table"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "plan v2", func() bool { p := e.h.PendingPlan(id); return p != nil && strings.Contains(p.Plan, "plan v2") })
	if err := e.h.DecidePlan(id, PlanDecision{Decision: "approve", Mode: "acceptEdits"}); err != nil {
		t.Fatal(err)
	}
	<-tr.Done()
	if err := tr.Err(); err != nil {
		t.Fatalf("turn: %v", err)
	}
	mu.Lock()
	if !sawFeedback {
		t.Error("the revise's feedback never reached the model")
	}
	mu.Unlock()
	s, err := e.h.Session(id)
	if err != nil || s.PermissionMode != "acceptEdits" {
		t.Fatalf("session mode after approve = %q (%v), want acceptEdits", s.PermissionMode, err)
	}
	evs := logEvents(t, e, e.h, id)
	var ready, resolved []stored
	text := ""
	for _, ev := range evs {
		switch ev.Type {
		case event.TypePlanReady:
			ready = append(ready, ev)
		case event.TypePlanResolved:
			resolved = append(resolved, ev)
		case event.TypeChatComplete:
			text += ev.Text
		}
	}
	if len(ready) != 2 || len(resolved) != 2 || ready[0].PlanReady.Plan != "# plan v1\n\n1. a list" {
		t.Fatalf("plan:ready %d, plan:resolved %d", len(ready), len(resolved))
	}
	if r := resolved[0].PlanResolved; r.Decision != "revise" || r.Feedback != "use a table" || r.By != "user" || r.PlanID != ready[0].PlanReady.PlanID {
		t.Errorf("first plan:resolved %+v", r)
	}
	if r := resolved[1].PlanResolved; r.Decision != "approve" || r.Mode != "acceptEdits" || r.PlanID != ready[1].PlanReady.PlanID {
		t.Errorf("second plan:resolved %+v", r)
	}
	for _, ev := range evs {
		if ev.Type == event.TypeApprovalRequested && ev.Approval.ToolName == PlanTool {
			t.Error("ExitPlanMode was asked as a tool approval, not a plan review")
		}
	}
	if !strings.Contains(text, "implementing plan v2") {
		t.Errorf("the agent did not go on after the approval: %q", text)
	}
	// The next turn runs in the mode the person chose.
	tr2, err := e.h.StartTurn(ctx, TurnRequest{SessionID: id, Message: "second turn"})
	if err != nil {
		t.Fatal(err)
	}
	<-tr2.Done()
	var mode string
	for _, ev := range logEvents(t, e, e.h, id) {
		if ev.Type == event.TypeSessionInit {
			mode = ev.Init.PermissionMode
		}
	}
	if mode != "acceptEdits" {
		t.Errorf("the next turn's session:init permission mode = %q, want acceptEdits", mode)
	}
}
