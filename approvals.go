package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/permrule"
	"github.com/chirality/harness/session"
)

// ApprovalAnswer is a person's answer to an approval request.
type ApprovalAnswer struct {
	// Decision is "allow", "deny" or "always": allow, and remember the
	// exact use (the request's rule; UpdatedInput's use when that is
	// set) so that this session's later uses that permrule finds allowed
	// by it run without asking.
	Decision string `json:"decision"`
	// Message is what the model sees when denied ("" = a default).
	Message string `json:"message,omitempty"`
	// UpdatedInput replaces the tool's input when allowed.
	UpdatedInput json.RawMessage `json:"updatedInput,omitempty"`
}

// Approve answers approval request requestID of session id. The first
// answer wins: a request answered before (by anyone, a rule, a timeout
// or the end of its turn) is ErrApprovalResolved, an unknown one
// ErrApprovalNotFound, a decision other than allow/deny/always
// ErrInvalidDecision; a bad session is ErrInvalidID/ErrNotFound. It
// returns once approval:resolved is stored and published and the engine
// has the answer.
func (h *Harness) Approve(id, requestID string, a ApprovalAnswer) error {
	switch a.Decision {
	case "allow", "deny", "always":
	default:
		return fmt.Errorf("%w (got %q)", ErrInvalidDecision, a.Decision)
	}
	if len(a.UpdatedInput) > 0 && !json.Valid(a.UpdatedInput) {
		return fmt.Errorf("%w: updatedInput is not JSON", ErrInvalidDecision)
	}
	if !session.ValidID(id) {
		return fmt.Errorf("%w %q", ErrInvalidID, id)
	}
	h.mu.Lock()
	lt := h.live[id]
	past := h.answered[id][requestID]
	h.mu.Unlock()
	if asks := liveApprovals(lt); asks != nil {
		// A running turn's session passed every check when it started:
		// the answer goes straight to it, no file is read.
		return asks.answer(requestID, a)
	}
	if _, err := h.Session(id); err != nil {
		return err
	}
	if past {
		return ErrApprovalResolved
	}
	return ErrApprovalNotFound
}

// PendingApprovals returns the open approval requests of session id's
// running turn (none when it has none), oldest first.
func (h *Harness) PendingApprovals(id string) []event.ApprovalRequested {
	h.mu.Lock()
	lt := h.live[id]
	h.mu.Unlock()
	if asks := liveApprovals(lt); asks != nil {
		return asks.pendingList()
	}
	return nil
}

func liveApprovals(lt *liveTurn) *approvals {
	if lt == nil {
		return nil
	}
	return lt.approvals()
}

func liveRunner(lt *liveTurn) *runner {
	if lt == nil {
		return nil
	}
	return lt.runner()
}

// rememberAnswered keeps the request ids of a finished turn, so a late
// answer is told "already resolved" rather than "not found" (bounded).
func (h *Harness) rememberAnswered(id string, ids []string) {
	if len(ids) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	m := h.answered[id]
	if m == nil || len(m) > 1000 {
		m = map[string]bool{}
		h.answered[id] = m
	}
	for _, r := range ids {
		m[r] = true
	}
}

// approvals is the engine.Approver of one running turn: it publishes
// approval:requested through the turn's runner (so the request is in the
// event log, in order, before anyone can answer it), waits for Approve, a
// rule, the timeout or the end of the turn, and publishes
// approval:resolved exactly once.
type approvals struct {
	r       *runner
	timeout time.Duration

	mu       sync.Mutex
	byID     map[string]*pendingApproval
	order    []string
	closedBy string         // set once the turn is ending: new questions are denied
	plans    []*pendingPlan // plan:ready questions (plan.go)
	decideMu sync.Mutex     // one plan decision at a time (DecidePlan)
}

type pendingApproval struct {
	req      event.ApprovalRequested
	rule     string // what "always" remembers
	answer   chan engine.ApprovalDecision
	resolved bool
	// protected: the use writes a protected path (protectedWrite), or
	// may run outside the agent's sandbox (q.Unsandboxed): no rule allows it
	// and "always" allows it once, remembering nothing.
	protected bool
}

var _ engine.Approver = (*approvals)(nil)

// Ask implements engine.Approver.
func (a *approvals) Ask(ctx context.Context, q engine.ApprovalRequest) engine.ApprovalDecision {
	if q.ToolName == PlanTool {
		return a.reviewPlan(ctx, q) // a plan's end is a person's review, not a tool's approval
	}
	rule := ruleFor(q)
	a.mu.Lock()
	if a.closedBy != "" {
		a.mu.Unlock()
		return engine.ApprovalDecision{Message: "The turn is ending; the tool was not run."}
	}
	p := &pendingApproval{rule: rule, answer: make(chan engine.ApprovalDecision, 1), req: event.ApprovalRequested{
		RequestID: "apr_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:16],
		ToolUseID: q.ToolUseID, ToolName: q.ToolName, Input: q.Input, Suggestions: q.Suggestions, Rule: rule,
		ExpiresAt: time.Now().Add(a.timeout).UTC().Format(time.RFC3339Nano), Unsandboxed: q.Unsandboxed,
	}}
	if len(p.req.Input) == 0 {
		p.req.Input = json.RawMessage(`{}`)
	}
	if len(p.req.Suggestions) == 0 {
		p.req.Suggestions = json.RawMessage(`null`)
	}
	a.byID[p.req.RequestID] = p
	a.order = append(a.order, p.req.RequestID)
	p.protected = a.r.protectedWrite(q) || a.r.unsandboxed(q)
	byRule := !p.protected && permrule.Allowed(a.r.rules(), q.ToolName, q.Input)
	// Published under a.mu: no answer can be taken before the request is
	// in the log, and the end of the turn cannot slip in between.
	a.r.emit(event.Event{Type: event.TypeApprovalRequested, Approval: &p.req})
	if byRule {
		a.resolveLocked(p, engine.ApprovalDecision{Allow: true}, event.ByRule, "")
	}
	a.mu.Unlock()

	timer := time.NewTimer(a.timeout)
	defer timer.Stop()
	select {
	case d := <-p.answer:
		return d
	case <-timer.C:
		a.resolve(p, engine.ApprovalDecision{Message: fmt.Sprintf("No one answered within %s, so the tool was not run.", a.timeout)}, event.ByTimeout)
	case <-ctx.Done():
		a.resolve(p, engine.ApprovalDecision{Message: "The turn was interrupted; the tool was not run."}, event.ByInterrupt)
	}
	return <-p.answer
}

// answer takes a person's answer.
func (a *approvals) answer(requestID string, ans ApprovalAnswer) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.byID[requestID]
	switch {
	case p == nil:
		return ErrApprovalNotFound
	case p.resolved:
		return ErrApprovalResolved
	}
	d := engine.ApprovalDecision{Allow: ans.Decision != "deny", Message: ans.Message,
		UpdatedInput: ans.UpdatedInput, Always: ans.Decision == "always"}
	if !d.Allow && d.Message == "" {
		d.Message = "The user denied this tool use."
	}
	rule := p.rule
	if len(ans.UpdatedInput) > 0 {
		// the person rewrote the input: remember what they wrote, the
		// use that runs
		rule = ruleFor(engine.ApprovalRequest{ToolName: p.req.ToolName, Input: ans.UpdatedInput})
	}
	if d.Always && rule != "" && !p.protected {
		a.r.addRule(rule)
	}
	a.resolveLocked(p, d, event.ByUser, ans.Message)
	return nil
}

// resolve settles p unless it is settled already.
func (a *approvals) resolve(p *pendingApproval, d engine.ApprovalDecision, by string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.resolveLocked(p, d, by, d.Message)
}

func (a *approvals) resolveLocked(p *pendingApproval, d engine.ApprovalDecision, by, msg string) {
	if p.resolved {
		return
	}
	p.resolved = true
	decision := event.DecisionDeny
	if d.Allow {
		decision = event.DecisionAllow
	}
	a.r.emit(event.Event{Type: event.TypeApprovalResolved,
		Resolved: &event.ApprovalResolved{RequestID: p.req.RequestID, Decision: decision, By: by, Message: msg}})
	p.answer <- d
}

// closeAll denies every open request (by says why: interrupt, shutdown)
// and every later one: the turn is ending.
func (a *approvals) closeAll(by string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closedBy == "" {
		a.closedBy = by
	}
	msg := "The turn was interrupted; the tool was not run."
	if by == event.ByShutdown {
		msg = "The server is shutting down; the tool was not run."
	}
	for _, id := range a.order {
		a.resolveLocked(a.byID[id], engine.ApprovalDecision{Message: msg}, by, msg)
	}
	for _, p := range a.plans {
		_ = a.resolvePlanLocked(p, engine.ApprovalDecision{Message: msg, NoAnswer: true}, event.PlanResolved{Decision: event.PlanRevise, Feedback: msg, By: by})
	}
}

func (a *approvals) pendingList() []event.ApprovalRequested {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []event.ApprovalRequested
	for _, id := range a.order {
		if p := a.byID[id]; !p.resolved {
			out = append(out, p.req)
		}
	}
	return out
}

func (a *approvals) ids() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.order)
}

// ruleFor is the rule "always" remembers for q: the exact use
// (permrule.Exact), never the agent's suggestions, which are wider than
// what the person saw (Claude Code suggests Bash(npm test:*) for
// `npm test`). approval:requested carries it as rule. It is "" when the
// use has no subject to name (an empty command): such a use is allowed
// once, never remembered.
func ruleFor(q engine.ApprovalRequest) string {
	r := permrule.Exact(q.ToolName, q.Input)
	if _, err := permrule.Parse(r); err != nil {
		return ""
	}
	return r
}

// addRule remembers rule, a person's "always": in the trust record,
// outside the project, which is what later turns and a restarted harness
// honour, and in the session file (spec 004's rules, shown by GET
// /session/{id}), which grants nothing by itself.
func (r *runner) addRule(rule string) {
	r.rulesMu.Lock()
	if slices.Contains(r.ruleList, rule) {
		r.rulesMu.Unlock()
		return
	}
	r.ruleList = append(r.ruleList, rule)
	r.rulesMu.Unlock()
	if err := r.h.trust.AddRule(r.s.ProjectRoot, r.s.ID, rule); err != nil {
		r.log.Error().Str("sessionId", r.s.ID).Err(err).Str("rule", rule).Msg("the person's rule could not be kept in the trust record: it holds for this turn only")
	}
	r.smu.Lock()
	defer r.smu.Unlock()
	if !slices.Contains(r.s.Rules, rule) {
		r.s.Rules = append(r.s.Rules, rule)
	}
	r.saveLocked("always-allow rule")
}

// rules are the session's always-allow rules. They have a lock of their
// own: a question must not wait for a session save (an fsync) to read them.
func (r *runner) rules() []string {
	r.rulesMu.Lock()
	defer r.rulesMu.Unlock()
	return slices.Clone(r.ruleList)
}

// saveLocked saves the session; the caller holds smu.
func (r *runner) saveLocked(why string) {
	if err := r.h.store.Save(r.s); err != nil && !errors.Is(err, session.ErrNotFound) {
		r.log.Error().Str("sessionId", r.s.ID).Err(err).Str("after", why).Msg("session could not be saved")
	}
}
