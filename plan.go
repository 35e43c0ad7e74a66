package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/session"
)

// Plan review (issue 32): when an agent ends a plan (Claude Code's
// ExitPlanMode, asked of the turn's Approver, also through
// claude-agent-acp), the turn publishes plan:ready with the plan as
// markdown and waits for a person, as an approval does (its deadline is
// the approvals'): approve lets the agent go on and the session's next
// turns run in the chosen mode; revise sends the feedback back and the
// agent keeps planning. Nobody in time, an interrupt or the turn's end
// is a revise no person made: only a person approves.

// PlanTool is the tool whose use ends a plan.
const PlanTool = "ExitPlanMode"

// MaxPlanFeedback bounds a revise's feedback, in bytes.
const MaxPlanFeedback = 64 << 10

// Errors of DecidePlan.
var (
	// ErrNoPlan: no plan of the session waits for a decision (409).
	ErrNoPlan = engine.NewError(engine.ErrConflict, "no plan is waiting for a decision in this session")
	// ErrInvalidPlanDecision: decision approve (mode default or
	// acceptEdits) or revise (with feedback) (400).
	ErrInvalidPlanDecision = engine.NewError(engine.ErrInvalid, `invalid plan decision: want decision "approve" (mode "default" or "acceptEdits") or "revise" (with feedback)`)
)

// PlanDecision is a person's answer to plan:ready.
type PlanDecision struct {
	// Decision is "approve" or "revise".
	Decision string `json:"decision"`
	// Mode is the permission mode approve continues in: "default" (the
	// default) or "acceptEdits". The session keeps it for its next turns.
	Mode string `json:"mode,omitempty"`
	// Feedback is what revise tells the agent (required with revise).
	Feedback string `json:"feedback,omitempty"`
}

// pendingPlan is a plan:ready waiting for a decision.
type pendingPlan struct {
	ev       event.PlanReady
	answer   chan engine.ApprovalDecision
	resolved bool
}

// DecidePlan answers the plan session id's running turn waits with. The
// first answer wins; a session with no plan waiting is ErrNoPlan, a bad
// decision ErrInvalidPlanDecision, a mode the server refuses
// ErrBypassRefused-like errors of UpdateSession. It returns once
// plan:resolved is stored and the agent has the answer.
func (h *Harness) DecidePlan(id string, d PlanDecision) error {
	switch {
	case d.Decision == event.PlanApprove && (d.Mode == "" || d.Mode == "default" || d.Mode == "acceptEdits") && d.Feedback == "":
		if d.Mode == "" {
			d.Mode = "default"
		}
	case d.Decision == event.PlanRevise && d.Mode == "" && strings.TrimSpace(d.Feedback) != "":
		if len(d.Feedback) > MaxPlanFeedback {
			return fmt.Errorf("%w: feedback over %d bytes", ErrInvalidPlanDecision, MaxPlanFeedback)
		}
	default:
		return ErrInvalidPlanDecision
	}
	if !session.ValidID(id) {
		return fmt.Errorf("%w %q", ErrInvalidID, id)
	}
	h.mu.Lock()
	lt := h.live[id]
	h.mu.Unlock()
	a := liveApprovals(lt)
	if a == nil {
		if _, err := h.Session(id); err != nil {
			return err
		}
		return ErrNoPlan
	}
	// One decision at a time: a loser must not change the mode.
	a.decideMu.Lock()
	defer a.decideMu.Unlock()
	p := a.waitingPlan()
	if p == nil {
		return ErrNoPlan
	}
	if d.Decision == event.PlanApprove {
		// The mode first: once the agent has the answer it goes on, and
		// the turn's end saves the session with it.
		mode := d.Mode
		if _, err := h.UpdateSession(id, SessionUpdate{PermissionMode: &mode}); err != nil {
			return err
		}
		return a.resolvePlan(p, engine.ApprovalDecision{Allow: true}, event.PlanResolved{Decision: event.PlanApprove, Mode: d.Mode, By: event.ByUser})
	}
	return a.resolvePlan(p, engine.ApprovalDecision{Message: "The person reviewed your plan and asks you to keep planning and revise it before you act:\n\n" + d.Feedback},
		event.PlanResolved{Decision: event.PlanRevise, Feedback: d.Feedback, By: event.ByUser})
}

// PendingPlan returns the plan session id's running turn waits with, or
// nil.
func (h *Harness) PendingPlan(id string) *event.PlanReady {
	h.mu.Lock()
	lt := h.live[id]
	h.mu.Unlock()
	if a := liveApprovals(lt); a != nil {
		if p := a.waitingPlan(); p != nil {
			ev := p.ev
			return &ev
		}
	}
	return nil
}

const noPlanText = "(the agent gave no plan text)"

// planText is the plan of an ExitPlanMode input ({"plan": markdown}).
func planText(input json.RawMessage) string {
	var in struct {
		Plan string `json:"plan"`
	}
	if json.Unmarshal(input, &in) != nil || strings.TrimSpace(in.Plan) == "" {
		return noPlanText
	}
	return in.Plan
}

// reviewPlan is Ask for the tool that ends a plan: plan:ready, then a
// person's decision, the deadline or the turn's end.
func (a *approvals) reviewPlan(ctx context.Context, q engine.ApprovalRequest) engine.ApprovalDecision {
	a.mu.Lock()
	if a.closedBy != "" {
		a.mu.Unlock()
		return engine.ApprovalDecision{Message: "The turn is ending; the plan was not reviewed."}
	}
	p := &pendingPlan{answer: make(chan engine.ApprovalDecision, 1), ev: event.PlanReady{
		PlanID:    "pln_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:16],
		Plan:      planText(a.r.planInput(q)),
		ToolUseID: q.ToolUseID,
		ExpiresAt: time.Now().Add(a.timeout).UTC().Format(time.RFC3339Nano),
	}}
	a.plans = append(a.plans, p)
	a.r.emit(event.Event{Type: event.TypePlanReady, PlanReady: &p.ev})
	a.mu.Unlock()

	timer := time.NewTimer(a.timeout)
	defer timer.Stop()
	select {
	case d := <-p.answer:
		return d
	case <-timer.C:
		msg := fmt.Sprintf("No one reviewed the plan within %s; keep planning, do not act on it.", a.timeout)
		_ = a.resolvePlan(p, engine.ApprovalDecision{Message: msg}, event.PlanResolved{Decision: event.PlanRevise, Feedback: msg, By: event.ByTimeout})
	case <-ctx.Done():
		msg := "The turn was interrupted; the plan was not approved."
		_ = a.resolvePlan(p, engine.ApprovalDecision{Message: msg}, event.PlanResolved{Decision: event.PlanRevise, Feedback: msg, By: event.ByInterrupt})
	}
	return <-p.answer
}

// waitingPlan is the plan waiting for a decision, or nil.
func (a *approvals) waitingPlan() *pendingPlan {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, p := range a.plans {
		if !p.resolved {
			return p
		}
	}
	return nil
}

// resolvePlan settles p with d, publishing plan:resolved, unless it is
// settled already (ErrNoPlan).
func (a *approvals) resolvePlan(p *pendingPlan, d engine.ApprovalDecision, res event.PlanResolved) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.resolvePlanLocked(p, d, res)
}

func (a *approvals) resolvePlanLocked(p *pendingPlan, d engine.ApprovalDecision, res event.PlanResolved) error {
	if p.resolved {
		return ErrNoPlan
	}
	p.resolved = true
	res.PlanID = p.ev.PlanID
	a.r.emit(event.Event{Type: event.TypePlanResolved, PlanResolved: &res})
	p.answer <- d
	return nil
}

// notePlan keeps the input of a tool:start of PlanTool: Claude Code asks
// its approval with an empty input, the plan is in the tool use's.
func (r *runner) notePlan(ts *event.ToolStart) {
	r.planMu.Lock()
	defer r.planMu.Unlock()
	if r.planInputs == nil {
		r.planInputs = map[string]json.RawMessage{}
	}
	if len(r.planInputs) < 64 {
		r.planInputs[ts.ToolUseID] = ts.Input
	}
}

// planInput is the input that holds q's plan: q's own when it has one,
// else its tool use's.
func (r *runner) planInput(q engine.ApprovalRequest) json.RawMessage {
	if planText(q.Input) != noPlanText {
		return q.Input
	}
	r.planMu.Lock()
	defer r.planMu.Unlock()
	if in, ok := r.planInputs[q.ToolUseID]; ok {
		return in
	}
	return q.Input
}
