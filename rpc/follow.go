package rpc

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/google/uuid"

	"github.com/chirality/harness"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/session"
)

// follow turns one harness turn's UI events into the protocol's
// notifications, in order: turn.started, the items, then exactly one of
// turn.completed (status completed or cancelled) or turn.error.
func (s *Server) follow(t *thread, at *activeTurn, ht *harness.Turn) {
	defer s.turns.Done()
	f := &follower{s: s, t: t, turn: at.turn, tools: map[string]toolItem{}, approvals: map[string]string{}}
	started := f.notify("turn.started", map[string]any{"turn": f.turn})
	_, _ = ht.Wait(context.Background(), func(rec session.Record) error {
		if rec.Typed.Type == event.TypeUserMessage && rec.Seq != 0 && !f.noted {
			// Where the turn is in the core: thread.fork and
			// thread.rollback name it by this.
			f.noted = true
			t.mu.Lock()
			t.meta.Turns = append(t.meta.Turns, turnRef{TurnID: at.turn.TurnID, Seq: started, Core: rec.Seq})
			t.mu.Unlock()
		}
		f.apply(*rec.Typed)
		return nil
	})
	f.finish()
	close(at.done)
}

// finish sends the turn's one ending, once the harness turn is over (its
// process:exit read): the thread is free for turn.start from then on.
func (f *follower) finish() {
	if f.ended {
		return
	}
	f.t.mu.Lock()
	f.t.turn = nil
	f.t.meta.Time.Updated = nowMS()
	if err := f.t.saveMeta(); err != nil {
		f.s.log.Error().Err(err).Msg("meta.json not saved")
	}
	f.t.mu.Unlock()
	switch {
	case f.status == "completed" || f.status == "cancelled":
		f.end(f.status)
	case f.failure != nil:
		f.errorEnd(f.failure)
	default:
		f.errorEnd(&event.SessionError{Error: "the turn ended without a result", Kind: event.ErrorProcess})
	}
}

type toolItem struct {
	itemID string
	name   string
	input  json.RawMessage
}

type follower struct {
	s    *Server
	t    *thread
	turn Turn

	text, reasoning       string // open items
	textBuf, reasoningBuf strings.Builder
	tools                 map[string]toolItem
	approvals             map[string]string // requestId → itemId
	plans                 map[string]string // planId → itemId
	ended                 bool
	noted                 bool                // the turn's place in the core is in meta.Turns
	status                string              // completed or cancelled, once known
	failure               *event.SessionError // how it failed, once known
	lastCost              float64
	lastUsage             json.RawMessage
}

func newItemID() string { return "item_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:16] }

func (f *follower) notify(method string, p map[string]any) int64 {
	p["threadId"], p["turnId"] = f.turn.ThreadID, f.turn.TurnID
	return f.s.notify(f.t, method, p)
}

func (f *follower) item(itemID, typ string, data any) map[string]any {
	it := map[string]any{"itemId": itemID, "threadId": f.turn.ThreadID, "turnId": f.turn.TurnID, "type": typ}
	if data != nil {
		it["data"] = data
	}
	return it
}

func (f *follower) started(itemID, typ string, data any) {
	f.notify("item.started", map[string]any{"itemId": itemID, "item": f.item(itemID, typ, data)})
}

func (f *follower) completed(itemID, typ string, data any) {
	f.notify("item.completed", map[string]any{"itemId": itemID, "item": f.item(itemID, typ, data)})
}

func (f *follower) delta(itemID, kind, d string) {
	f.notify("item.delta", map[string]any{"itemId": itemID, "kind": kind, "delta": d})
}

// closeText and closeReasoning end the open assistant item of their kind.
func (f *follower) closeText()      { f.closeItem(&f.text, &f.textBuf, "text") }
func (f *follower) closeReasoning() { f.closeItem(&f.reasoning, &f.reasoningBuf, "reasoning") }

func (f *follower) closeItem(id *string, buf *strings.Builder, kind string) {
	if *id == "" {
		return
	}
	f.completed(*id, "assistant_message", map[string]any{"kind": kind, "text": buf.String()})
	*id = ""
	buf.Reset()
}

// artifactTools are the tools whose input names a file they write.
var artifactTools = map[string]bool{"Write": true, "Edit": true, "MultiEdit": true, "NotebookEdit": true}

func (f *follower) apply(ev event.Event) {
	if f.ended {
		return
	}
	switch ev.Type {
	case event.TypeUserMessage:
		id := newItemID()
		f.started(id, "user_message", map[string]any{"text": ev.Text})
		f.completed(id, "user_message", map[string]any{"text": ev.Text})
	case event.TypeThinkingDelta:
		f.closeText()
		if f.reasoning == "" {
			f.reasoning = newItemID()
			f.started(f.reasoning, "assistant_message", map[string]any{"kind": "reasoning"})
		}
		f.reasoningBuf.WriteString(ev.Text)
		f.delta(f.reasoning, "reasoning", ev.Text)
	case event.TypeChatDelta:
		f.closeReasoning()
		if f.text == "" {
			f.text = newItemID()
			f.started(f.text, "assistant_message", map[string]any{"kind": "text"})
		}
		f.textBuf.WriteString(ev.Text)
		f.delta(f.text, "text", ev.Text)
	case event.TypeChatComplete:
		f.closeReasoning()
		if f.text == "" && ev.Text != "" { // an engine that did not stream it
			f.text = newItemID()
			f.started(f.text, "assistant_message", map[string]any{"kind": "text"})
			f.textBuf.WriteString(ev.Text)
		}
		f.closeText()
	case event.TypeToolStart:
		f.closeText()
		f.closeReasoning()
		ti := toolItem{itemID: newItemID(), name: ev.ToolStart.Name, input: ev.ToolStart.Input}
		f.tools[ev.ToolStart.ToolUseID] = ti
		f.started(ti.itemID, "tool_exec", map[string]any{"toolUseId": ev.ToolStart.ToolUseID, "name": ti.name, "input": ti.input})
	case event.TypeToolResult:
		ti, ok := f.tools[ev.ToolResult.ToolUseID]
		if !ok {
			ti = toolItem{itemID: newItemID(), name: "tool"}
			f.started(ti.itemID, "tool_exec", map[string]any{"toolUseId": ev.ToolResult.ToolUseID, "name": ti.name})
		}
		// The tool's output as a log (engines that stream it send several
		// deltas; the Claude Code CLI gives it whole).
		log := newItemID()
		f.started(log, "tool_log", map[string]any{"toolItemId": ti.itemID})
		if ev.ToolResult.Content != "" {
			f.delta(log, "tool_output", ev.ToolResult.Content)
		}
		f.completed(log, "tool_log", map[string]any{"toolItemId": ti.itemID, "output": ev.ToolResult.Content})
		f.completed(ti.itemID, "tool_exec", map[string]any{"toolUseId": ev.ToolResult.ToolUseID, "name": ti.name, "input": ti.input,
			"output": ev.ToolResult.Content, "isError": ev.ToolResult.IsError})
		if artifactTools[ti.name] && !ev.ToolResult.IsError {
			var in struct {
				FilePath     string `json:"file_path"`
				NotebookPath string `json:"notebook_path"`
			}
			_ = json.Unmarshal(ti.input, &in)
			if p := in.FilePath + in.NotebookPath; p != "" {
				a := newItemID()
				data := map[string]any{"path": p, "tool": ti.name, "toolItemId": ti.itemID}
				f.started(a, "artifact", data)
				f.completed(a, "artifact", data)
			}
		}
	case event.TypeApprovalRequested:
		f.closeText()
		f.closeReasoning()
		a := ev.Approval
		id := newItemID()
		f.approvals[a.RequestID] = id
		f.s.mu.Lock()
		f.s.approvals[a.RequestID] = f.turn.ThreadID
		f.s.mu.Unlock()
		f.started(id, "approval", map[string]any{"requestId": a.RequestID, "tool": a.ToolName, "input": a.Input})
		f.notify("approval.requested", map[string]any{"requestId": a.RequestID, "itemId": id, "tool": a.ToolName,
			"input": a.Input, "options": []string{"once", "always", "reject"}})
	case event.TypeApprovalResolved:
		r := ev.Resolved
		id, ok := f.approvals[r.RequestID]
		f.s.mu.Lock()
		delete(f.s.approvals, r.RequestID)
		f.s.mu.Unlock()
		if ok {
			f.completed(id, "approval", map[string]any{"requestId": r.RequestID, "decision": r.Decision, "by": r.By, "message": r.Message})
		}
	case event.TypePlanReady:
		f.closeText()
		f.closeReasoning()
		pr := ev.PlanReady
		id := newItemID()
		if f.plans == nil {
			f.plans = map[string]string{}
		}
		f.plans[pr.PlanID] = id
		f.started(id, "plan", map[string]any{"planId": pr.PlanID, "plan": pr.Plan})
		f.notify("plan.ready", map[string]any{"planId": pr.PlanID, "itemId": id, "plan": pr.Plan, "expiresAt": pr.ExpiresAt,
			"options": []string{"approve", "revise"}})
	case event.TypePlanResolved:
		r := ev.PlanResolved
		if id, ok := f.plans[r.PlanID]; ok {
			f.completed(id, "plan", map[string]any{"planId": r.PlanID, "decision": r.Decision, "mode": r.Mode, "feedback": r.Feedback, "by": r.By})
		}
	case event.TypeSessionRetry:
		r := ev.Retry
		p := map[string]any{"attempt": r.Attempt, "maxRetries": r.MaxRetries, "delayMs": r.DelayMS, "error": r.Error, "message": r.Summary()}
		if r.APIErrorStatus != 0 {
			p["apiErrorStatus"] = r.APIErrorStatus
		}
		f.notify("turn.retry", p)
	case event.TypeSessionComplete:
		f.lastCost, f.lastUsage = ev.Complete.CostUSD, ev.Complete.Usage
		f.status = "completed"
	case event.TypeSessionError:
		switch ev.Error.Kind {
		case event.ErrorResumeNotFound:
			// The core starts a fresh conversation with the same message.
		case event.ErrorInterrupted, event.ErrorKilled:
			f.status = "cancelled"
		default:
			f.failure = ev.Error
		}
	case event.TypeProcessExit:
		f.finish()
	}
}

// end sends turn.completed (status completed or cancelled).
func (f *follower) end(status string) {
	if f.ended {
		return
	}
	f.closeText()
	f.closeReasoning()
	f.ended = true
	now := nowMS()
	f.turn.Status, f.turn.Time.Completed = status, &now
	p := map[string]any{"turn": f.turn}
	if status == "completed" {
		p["costUsd"] = f.lastCost
		if len(f.lastUsage) > 0 {
			p["usage"] = f.lastUsage
		}
	}
	f.notify("turn.completed", p)
}

func (f *follower) errorEnd(e *event.SessionError) {
	if f.ended {
		return
	}
	f.closeText()
	f.closeReasoning()
	f.ended = true
	now := nowMS()
	f.turn.Status, f.turn.Time.Completed = "error", &now
	f.notify("turn.error", map[string]any{"turn": f.turn, "error": map[string]any{"message": e.Error, "kind": e.Kind}})
}
