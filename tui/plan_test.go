package tui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
)

// A plan card shows the plan and the keys; typed text and Enter keep
// planning with it as feedback; e approves in acceptEdits; the outcome
// replaces the keys.
func TestPlanCard(t *testing.T) {
	var decided []string
	m := scripted(70, 30, Event{Type: "user", Content: "plan it"}, Event{Type: "status", State: "thinking"})
	m.act.DecidePlan = func(d, mode, feedback string) tea.Cmd { decided = append(decided, d+"/"+mode+"/"+feedback); return nil }
	m.Update(EventMsg{Type: "plan", Timestamp: 1, PlanID: "p1", Plan: "# The plan\n\n1. edit main.go"})
	f := plain(m.Frame())
	for _, want := range []string{"The agent has a plan", "edit main.go", "a approve · e approve, accept edits", "Plan ready:"} {
		if !strings.Contains(f, want) {
			t.Fatalf("the card lacks %q:\n%s", want, f)
		}
	}
	for _, r := range "tests" {
		m.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	m.Update(tea.KeyPressMsg{Code: tea.KeyEnter})
	if len(decided) != 1 || decided[0] != "revise//tests" || len(m.input) != 0 {
		t.Fatalf("decided %q, input %q", decided, string(m.input))
	}
	m.Update(EventMsg{Type: "plan_resolved", Timestamp: 1, PlanID: "p1", Decision: "revise", Feedback: "tests", By: "user"})
	if f := plain(m.Frame()); !strings.Contains(f, "back to planning (user): tests") || strings.Contains(f, "Plan ready") {
		t.Fatalf("after revise:\n%s", f)
	}
	m.Update(EventMsg{Type: "plan", Timestamp: 1, PlanID: "p2", Plan: "# Plan 2"})
	m.Update(tea.KeyPressMsg{Code: 'e', Text: "e"})
	if len(decided) != 2 || decided[1] != "approve/acceptEdits/" {
		t.Fatalf("decided %q", decided)
	}
	m.Update(EventMsg{Type: "plan_resolved", Timestamp: 1, PlanID: "p2", Decision: "approve", Mode: "acceptEdits", By: "user"})
	if f := plain(m.Frame()); !strings.Contains(f, "approved, goes on in acceptEdits (user)") {
		t.Fatalf("after approve:\n%s", f)
	}
	// No plan waiting: a and e are text.
	m.Update(tea.KeyPressMsg{Code: 'a', Text: "a"})
	if string(m.input) != "a" || len(decided) != 2 {
		t.Fatalf("input %q decided %q", string(m.input), decided)
	}
	if _, err := DecodeEvent([]byte(`{"type":"plan_resolved","timestamp":1,"planId":"p","decision":"maybe"}`)); err == nil {
		t.Error("a plan_resolved with decision maybe decoded")
	}
}
