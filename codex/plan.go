package codex

import (
	"encoding/json"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
)

// Plan mode (issue 32). Codex 0.169 plans in its "plan" collaboration
// mode: turn/start's collaborationMode {mode: "plan", settings: {model,
// reasoning_effort, developer_instructions: null}} (an experimental field:
// initialize opts in with capabilities.experimentalApi) puts Codex's own
// Plan Mode instructions before the model, and the model's
// <proposed_plan> block comes out of its answer as an item of type
// "plan" (item/plan/delta, then item/completed with the markdown; the
// agent message keeps the rest). The turn then ends: the plan waits for
// the client, as Codex's TUI asks "Implement this plan?".
//
// Here a turn in permission mode plan runs in that mode. When a Codex turn
// completes with a plan item, the engine reports it as the use of the
// tool that ends a plan (tool:start ToolPlan, input {"plan": markdown})
// and asks Request.Approver, which the core answers with plan:ready and a
// person's decision (the root package's plan.go):
//
//	approve   tool:result; the turn ends (session:complete) and the core
//	          queues the request's Next, ImplementPrompt ("Implement the
//	          plan."), as the session's next turn, which runs in the mode
//	          the person chose like any turn of it: a fresh child, the
//	          thread resumed with that mode's approval policy and sandbox
//	          (the protected-path profile included), and collaboration
//	          mode default, since the thread is still in plan mode
//	revise    tool:result (an error, the feedback); another Codex turn in
//	          plan mode with the feedback as its message
//	no answer tool:result (an error); the turn ends (session:complete):
//	          only a person sends Codex on, and only a person's feedback
//	          makes it plan again. Interrupted: session:error interrupted.
//
// Without an Approver the plan is reported the same way (tool:start,
// then a tool:result saying nobody reviewed it) and the turn ends.
//
// Codex keeps a thread's collaboration mode: thread/resume reports it
// (collaborationMode.mode), and a thread left in plan mode (as every plan
// turn leaves it) would go on planning in a turn of another permission
// mode.
// Such a turn sends collaborationMode default; so does a turn on a fork,
// whose mode thread/fork does not report. Other turns send none (Codex
// keeps its own default, and the model sees no mode message).
//
// Why the next turn and not the same one: a turn in the same child would
// have to switch the read-only thread to the mode's sandbox with
// turn/start's approvalPolicy and permissions (the protected-path
// profile, protect.go), which Codex reports active; on 0.169 an approved
// command of that turn still wrote a protected file now and then. The
// implementation is instead an ordinary turn of the chosen mode. (The
// cause, found later, was not the profile, nor resuming: Codex retries
// an approved command the sandbox seemed to deny without any sandbox,
// and whether it judged a failed write a denial varied from run to run.
// The profile's denied reads where a person is asked keep that retry in
// the sandbox on new, resumed and forked threads alike: protect.go,
// TestRealCodexApprovedCommandKeepsProtectedReadOnly.)
//
// While a plan waits, no Codex turn runs: Steer answers
// engine.ErrNotRunning.

// ToolPlan is the tool name a Codex plan is reported under: the core's
// harness.PlanTool, the tool whose use ends a plan (Claude Code's).
const ToolPlan = "ExitPlanMode"

// ImplementPrompt is the message of the turn that implements an approved
// plan (what Codex's TUI sends).
const ImplementPrompt = "Implement the plan."

// Collaboration modes of turn/start's collaborationMode.
const (
	collabPlan    = "plan"
	collabDefault = "default"
)

// collabFor is the collaboration mode a turn of permission mode mode
// sends: plan for plan; default to leave a plan-mode thread (threadMode,
// what thread/resume reported) or a fork (fork: its mode is not
// reported); else none ("").
func collabFor(mode, threadMode string, fork bool) string {
	switch {
	case mode == "plan":
		return collabPlan
	case threadMode == collabPlan || fork:
		return collabDefault
	}
	return ""
}

// collaboration is turn/start's collaborationMode: Codex's preset
// instructions for mode (developer_instructions null), the thread's model
// and reasoning effort (the mode's settings take precedence over both).
func collaboration(mode, model, effort string) map[string]any {
	settings := map[string]any{"model": model, "developer_instructions": nil, "reasoning_effort": nil}
	if effort != "" {
		settings["reasoning_effort"] = effort
	}
	return map[string]any{"mode": mode, "settings": settings}
}

// planItem is the plan a Codex turn proposed (its last plan item).
type planItem struct {
	ID   string
	Text string
}

// reviewPlan reports the plan p as the use of ToolPlan and asks the
// Approver (from a goroutine of its own, once the events before it were
// read), reading what the child sends meanwhile. ok is false when there
// was nobody to ask (no Approver, or the stream ended). err is set when
// the child went away while the plan waited.
func (t *Turn) reviewPlan(m *mapper, p *planItem) (dec engine.ApprovalDecision, ok bool, err error) {
	in, _ := json.Marshal(map[string]string{"plan": p.Text})
	t.emit(event.Event{Type: event.TypeToolStart, ToolStart: &event.ToolStart{ToolUseID: p.ID, Name: ToolPlan, Input: in}})
	approver := t.req.Approver
	if approver == nil {
		t.emit(event.Event{Type: event.TypeToolResult, ToolResult: &event.ToolResult{ToolUseID: p.ID, IsError: true,
			Content: "Nobody reviews plans in this session (no approver): the plan was not approved."}})
		return engine.ApprovalDecision{NoAnswer: true}, false, nil
	}
	answer := make(chan engine.ApprovalDecision, 1)
	req := engine.ApprovalRequest{ToolUseID: p.ID, ToolName: ToolPlan, Input: in, Next: ImplementPrompt}
	t.approvals.Add(1)
	if !t.s.Defer(func() {
		go func() {
			defer t.approvals.Done()
			answer <- approver.Ask(t.ctx, req)
		}()
	}) {
		t.approvals.Done()
		return engine.ApprovalDecision{NoAnswer: true}, false, nil
	}
	for {
		select {
		case dec = <-answer:
			res := &event.ToolResult{ToolUseID: p.ID, Content: "The person approved the plan."}
			if !dec.Allow {
				res.IsError, res.Content = true, dec.Message
			}
			t.emit(event.Event{Type: event.TypeToolResult, ToolResult: res})
			return dec, true, nil
		case msg, open := <-t.peer.in:
			if !open {
				// Ask returns once the turn's context ends (Kill, and
				// run's cancel after converse): not waited for here.
				return dec, false, t.fail(event.ErrorProcess, "codex app-server exited while the plan waited for a decision")
			}
			m.handle(msg) // between turns: notifications, nothing that ends one
		}
	}
}
