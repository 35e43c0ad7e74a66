package harness

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/codex"
	"github.com/chirality/harness/codex/codextest"
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
	if err := e.h.DecidePlan(id, PlanDecision{Decision: "approve"}); !errors.Is(err, ErrNoPlan) {
		t.Fatalf("a decision with no turn = %v, want ErrNoPlan", err)
	}
	reviseThenApprove(t, e, id, func() {
		for _, bad := range []PlanDecision{{Decision: "yes"}, {Decision: "revise"}, {Decision: "approve", Mode: "bypassPermissions"}, {Decision: "approve", Feedback: "x"}} {
			if err := e.h.DecidePlan(id, bad); !errors.Is(err, ErrInvalidPlanDecision) {
				t.Errorf("DecidePlan(%+v) = %v, want ErrInvalidPlanDecision", bad, err)
			}
		}
	})
	mu.Lock()
	if !sawFeedback {
		t.Error("the revise's feedback never reached the model")
	}
	mu.Unlock()
	checkPlanReviewed(t, e, id, "# plan v1\n\n1. a list")
	text := ""
	for _, ev := range logEvents(t, e, e.h, id) {
		if ev.Type == event.TypeChatComplete {
			text += ev.Text
		}
	}
	if !strings.Contains(text, "implementing plan v2") {
		t.Errorf("the agent did not go on after the approval: %q", text)
	}
	nextTurnInAcceptEdits(t, e, id)
}

// reviseThenApprove starts id's turn "plan the work" and, as the person,
// revises plan v1 with "use a table" (after atFirst, when set), approves
// plan v2 in acceptEdits and waits for the turn, which must complete.
func reviseThenApprove(t *testing.T, e *testEnv, id string, atFirst func()) {
	t.Helper()
	tr, err := e.h.StartTurn(context.Background(), TurnRequest{SessionID: id, Message: "plan the work"})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "plan v1", func() bool { p := e.h.PendingPlan(id); return p != nil && strings.Contains(p.Plan, "plan v1") })
	if atFirst != nil {
		atFirst()
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
}

// checkPlanReviewed: after reviseThenApprove, the session is in
// acceptEdits and its log has two plan:ready (the first plan1) and their
// plan:resolved (the user's revise, then approve), and no plan asked as
// a tool approval.
func checkPlanReviewed(t *testing.T, e *testEnv, id, plan1 string) {
	t.Helper()
	s, err := e.h.Session(id)
	if err != nil || s.PermissionMode != "acceptEdits" {
		t.Fatalf("session mode after approve = %q (%v), want acceptEdits", s.PermissionMode, err)
	}
	var ready, resolved []stored
	for _, ev := range logEvents(t, e, e.h, id) {
		switch ev.Type {
		case event.TypePlanReady:
			ready = append(ready, ev)
		case event.TypePlanResolved:
			resolved = append(resolved, ev)
		case event.TypeApprovalRequested:
			if ev.Approval.ToolName == PlanTool {
				t.Error("the plan was asked as a tool approval, not a plan review")
			}
		}
	}
	if len(ready) != 2 || len(resolved) != 2 || ready[0].PlanReady.Plan != plan1 {
		t.Fatalf("plan:ready %d, plan:resolved %d", len(ready), len(resolved))
	}
	if r := resolved[0].PlanResolved; r.Decision != "revise" || r.Feedback != "use a table" || r.By != "user" || r.PlanID != ready[0].PlanReady.PlanID {
		t.Errorf("first plan:resolved %+v", r)
	}
	if r := resolved[1].PlanResolved; r.Decision != "approve" || r.Mode != "acceptEdits" || r.PlanID != ready[1].PlanReady.PlanID {
		t.Errorf("second plan:resolved %+v", r)
	}
}

// nextTurnInAcceptEdits runs id's turn "second turn", which must complete
// and start in the mode the person chose.
func nextTurnInAcceptEdits(t *testing.T, e *testEnv, id string) {
	t.Helper()
	tr, err := e.h.StartTurn(context.Background(), TurnRequest{SessionID: id, Message: "second turn"})
	if err != nil {
		t.Fatal(err)
	}
	<-tr.Done()
	if err := tr.Err(); err != nil {
		t.Fatalf("second turn: %v", err)
	}
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

// codexPlanEnv is a Harness that asks (Approvals) and a Codex session
// (the pinned codex on the fake Responses API) in plan mode.
func codexPlanEnv(t *testing.T) (*testEnv, *codextest.FakeAPI, string) {
	t.Helper()
	e, fake := codexEnv(t)
	s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct", Engine: "codex"})
	if err != nil {
		t.Fatal(err)
	}
	plan := "plan"
	if _, err := e.h.UpdateSession(s.ID, SessionUpdate{PermissionMode: &plan}); err != nil {
		t.Fatal(err)
	}
	return e, fake, s.ID
}

// codexEnv is a Harness that asks (Approvals) with the pinned codex on
// the fake Responses API.
func codexEnv(t *testing.T) (*testEnv, *codextest.FakeAPI) {
	t.Helper()
	bin, err := filepath.Abs("node_modules/.bin/codex")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("the pinned codex is missing (make cli): %v", err)
	}
	t.Setenv("HARNESS_CODEX_BIN", bin)
	fake, err := codextest.NewFakeAPI(codextest.Reply{Text: "default answer"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fake.Close() })
	codexHome := filepath.Join(t.TempDir(), "codex")
	if _, err := fake.WriteConfig(codexHome); err != nil {
		t.Fatal(err)
	}
	e := newTestEnv(t, func(c *Config) {
		c.Approvals = true
		c.ChildEnv = append(c.ChildEnv, "CODEX_HOME="+codexHome)
	})
	return e, fake
}

// Codex in plan mode through the core: its plan is a plan:ready with the
// markdown; a revise's feedback is the next plan turn's message; an
// approve in acceptEdits ends the turn and queues "Implement the plan.",
// which runs next, in acceptEdits and out of Codex's plan mode (its model
// request is in Codex's default collaboration mode; the engine's own test
// shows the implementation writing); the turn after it too.
func TestPlanReviewCodex(t *testing.T) {
	if codex.ToolPlan != PlanTool || codex.ImplementPrompt == "" {
		t.Fatalf("codex reports its plans as %q, the core reviews %q", codex.ToolPlan, PlanTool)
	}
	e, fake, id := codexPlanEnv(t)
	fake.SetResponder(func(req *codextest.Request) codextest.Reply {
		switch {
		case req.CollaborationMode() == "plan" && strings.Contains(req.LastUserText(), "use a table"):
			return codextest.Reply{Text: "<proposed_plan>\n# plan v2\n\n1. a table\n</proposed_plan>"}
		case req.CollaborationMode() == "plan":
			return codextest.Reply{Text: "My plan:\n<proposed_plan>\n# plan v1\n\n1. a list\n</proposed_plan>"}
		}
		return codextest.Reply{Text: "done: " + req.LastUserText()}
	})
	reviseThenApprove(t, e, id, nil)
	// The approve ended the turn and queued "Implement the plan.", which
	// runs as the session's next turn.
	waitFor(t, "the queued implementation turn", func() bool {
		n := 0
		for _, ev := range logEvents(t, e, e.h, id) {
			if ev.Type == event.TypeSessionComplete || ev.Type == event.TypeSessionError {
				n++
			}
		}
		return n == 2 && !e.h.IsRunning(id)
	})
	queued := 0
	for _, ev := range logEvents(t, e, e.h, id) {
		if ev.Type == event.TypePromptQueued && ev.Queued.Message == codex.ImplementPrompt {
			queued++
		}
	}
	if queued != 1 {
		t.Errorf("%d prompt:queued %q, want 1", queued, codex.ImplementPrompt)
	}
	reqs := fake.Requests()
	var modes []string
	for _, q := range reqs {
		modes = append(modes, q.CollaborationMode())
	}
	if len(reqs) != 3 || strings.Join(modes, ",") != "plan,plan,default" || !strings.Contains(reqs[1].LastUserText(), "use a table") || reqs[2].LastUserText() != codex.ImplementPrompt {
		t.Fatalf("model requests' collaboration modes %q (want plan,plan,default), the revise's %q", modes, reqs[min(1, len(reqs)-1)].LastUserText())
	}
	checkPlanReviewed(t, e, id, "# plan v1\n\n1. a list\n")
	nextTurnInAcceptEdits(t, e, id)
	reqs = fake.Requests()
	if last := reqs[len(reqs)-1]; last.CollaborationMode() != "default" || last.LastUserText() != "second turn" {
		t.Errorf("the next turn's request: mode %q, %q", last.CollaborationMode(), last.LastUserText())
	}
}
