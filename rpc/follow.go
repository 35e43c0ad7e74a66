package rpc

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/chirality/harness"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/event/fold"
	"github.com/chirality/harness/session"
)

// follow turns one harness turn's UI events into the protocol's
// notifications, in order: turn.started, the items, then exactly one of
// turn.completed (status completed or cancelled) or turn.error.
func (s *Server) follow(t *thread, at *activeTurn, ht *harness.Turn, prev chan struct{}) {
	defer s.turns.Done()
	if prev != nil {
		<-prev // the previous turn's end is sent: seqs of two turns never interleave
	}
	f := &follower{s: s, t: t, turn: at.turn, tools: map[string]toolItem{}, approvals: map[string]string{}}
	// t.rec is held while what was sent and what meta.json says of the
	// turn differ: from turn.started to its first record (where the turn
	// is noted), then while each record is applied, so thread.get, which
	// renders the turn from the log up to To, gives what was sent. The
	// notifications made meanwhile are written once it is let go (never
	// while held: thread.get takes it with the writer held).
	hold := func() {
		t.rec.Lock()
		t.mu.Lock()
		t.buffering = true
		t.mu.Unlock()
	}
	release := func() {
		t.mu.Lock()
		t.buffering = false
		lines := t.pending
		t.pending = nil
		t.mu.Unlock()
		t.rec.Unlock()
		for _, b := range lines {
			_ = s.out.write(b)
		}
	}
	hold()
	held := true
	started := f.notify("turn.started", map[string]any{"turn": f.turn})
	ref := -1                 // the turn's index in meta.Turns, once noted
	mine := func() *turnRef { // the caller holds t.mu
		if ref >= 0 && ref < len(t.meta.Turns) && t.meta.Turns[ref].TurnID == at.turn.TurnID {
			return &t.meta.Turns[ref]
		}
		return nil
	}
	_, _ = ht.Wait(context.Background(), func(rec session.Record) error {
		if !held {
			hold()
		}
		if rec.Typed.Type == event.TypeUserMessage && rec.Seq != 0 && !f.noted {
			// Where the turn is in the core: thread.fork and
			// thread.rollback name it by this.
			f.noted = true
			t.mu.Lock()
			t.meta.Turns = append(t.meta.Turns, turnRef{TurnID: at.turn.TurnID, Seq: started, Core: rec.Seq,
				From: ht.StartSeq, Started: at.turn.Time.Started})
			ref = len(t.meta.Turns) - 1
			t.mu.Unlock()
		}
		f.record(rec.Seq, rec.Typed)
		if rec.Seq != 0 {
			t.mu.Lock()
			if r := mine(); r != nil {
				r.To = rec.Seq
			}
			t.mu.Unlock()
		}
		release()
		held = false
		return nil
	})
	if !held {
		hold()
	}
	f.finish()
	t.mu.Lock()
	if r := mine(); r != nil {
		r.End = f.last
		if err := t.saveMeta(); err != nil {
			s.log.Error().Err(err).Msg("meta.json not saved")
		}
	}
	t.mu.Unlock()
	release()
	close(at.done)
}

// record applies one record of the core's log: its seq names the items it
// opens and its time is the turn's end when it ends it, so rendering the
// same records again (after a restart, from the one log) gives the same
// notifications.
func (f *follower) record(seq int64, ev *event.Event) {
	if seq != 0 && seq != f.seq {
		f.seq, f.opened = seq, 0
	}
	if ev.Time != 0 {
		f.at = ev.Time
	}
	f.apply(*ev)
}

// finish sends the turn's one ending, once the harness turn is over (its
// process:exit read): the thread is free for turn.start from then on.
func (f *follower) finish() {
	if f.ended {
		return
	}
	if f.emit == nil { // the turn ends (not a rendering of an ended one)
		f.t.mu.Lock()
		f.t.turn = nil
		f.t.meta.Time.Updated = nowMS()
		if err := f.t.saveMeta(); err != nil {
			f.s.log.Error().Err(err).Msg("meta.json not saved")
		}
		f.t.mu.Unlock()
	}
	switch {
	case f.status == "completed" || f.status == "cancelled":
		f.end(f.status)
	case f.failure != nil:
		f.errorEnd(f.failure)
	default:
		f.errorEnd(&event.SessionError{Error: "the turn ended without a result", Kind: event.ErrorProcess})
	}
}

// toolItem is a tool call's tool_exec item.
type toolItem struct {
	itemID string
}

type follower struct {
	s    *Server
	t    *thread
	turn Turn

	fold      fold.Fold           // the turn's events as items
	block     string              // the item id of the open text or reasoning item
	tools     map[string]toolItem // toolUseId → its open tool_exec item
	approvals map[string]string   // requestId → itemId
	plans     map[string]string   // planId → itemId
	ended     bool
	noted     bool                // the turn's place in the core is in meta.Turns
	status    string              // completed or cancelled, once known
	failure   *event.SessionError // how it failed, once known
	lastCost  float64
	lastUsage json.RawMessage
	seq       int64 // the core record applied
	opened    int   // items opened from it so far
	at        int64 // its time (Unix ms; 0 = not stamped)
	last      int64 // the seq of the last notification
	// emit sends a notification (nil: Server.notify, stored and sent);
	// it returns the notification's seq. Set, the follower renders a
	// turn that has ended again and leaves the thread as it is.
	emit func(method string, p map[string]any) int64
}

// newItemID names the next item the record being applied opens:
// item_<its core seq>_<n>, the same however often the record is rendered.
// Before any record (never, for a turn's items) it is random.
func (f *follower) newItemID() string {
	if f.seq == 0 {
		return "item_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:16]
	}
	f.opened++
	return "item_" + strconv.FormatInt(f.seq, 10) + "_" + strconv.Itoa(f.opened)
}

// now is the time of the record being applied (the clock's when it has
// none).
func (f *follower) now() int64 {
	if f.at != 0 {
		return f.at
	}
	return nowMS()
}

func (f *follower) notify(method string, p map[string]any) int64 {
	p["threadId"], p["turnId"] = f.turn.ThreadID, f.turn.TurnID
	if f.emit != nil {
		f.last = f.emit(method, p)
	} else {
		f.last = f.s.notify(f.t, method, p)
	}
	return f.last
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

// artifactTools are the tools whose input names a file they write.
var artifactTools = map[string]bool{"Write": true, "Edit": true, "MultiEdit": true, "NotebookEdit": true}

func (f *follower) apply(ev event.Event) {
	if f.ended {
		return
	}
	u := f.fold.Add(&ev)
	for _, it := range u.Items() {
		f.render(&it)
	}
}

// plan renders plan review: plan:ready opens a plan item and asks the
// client (plan.ready, answered with plan.decide), plan:resolved ends it.
func (f *follower) plan(it *fold.Item) {
	if pr := it.Plan.Ready; it.New && pr != nil {
		id := f.newItemID()
		if f.plans == nil {
			f.plans = map[string]string{}
		}
		f.plans[pr.PlanID] = id
		f.started(id, "plan", map[string]any{"planId": pr.PlanID, "plan": pr.Plan})
		f.notify("plan.ready", map[string]any{"planId": pr.PlanID, "itemId": id, "plan": pr.Plan, "expiresAt": pr.ExpiresAt,
			"options": []string{"approve", "revise"}})
	}
	if r := it.Plan.Resolved; it.Done {
		if id, ok := f.plans[r.PlanID]; ok {
			f.completed(id, "plan", map[string]any{"planId": r.PlanID, "decision": r.Decision, "mode": r.Mode, "feedback": r.Feedback, "by": r.By})
		}
	}
}

// flush ends the open assistant item, if any.
func (f *follower) flush() {
	u := f.fold.Flush()
	for _, it := range u.Items() {
		f.render(&it)
	}
}

// render sends the notifications of one update of an item of the fold.
func (f *follower) render(it *fold.Item) {
	switch it.Kind {
	case fold.KindUser:
		id := f.newItemID()
		f.started(id, "user_message", map[string]any{"text": it.Text})
		f.completed(id, "user_message", map[string]any{"text": it.Text})
	case fold.KindText, fold.KindReasoning:
		kind := string(it.Kind)
		if it.New {
			f.block = f.newItemID()
		}
		id := f.block
		if it.Done {
			f.block = ""
		}
		if it.New {
			f.started(id, "assistant_message", map[string]any{"kind": kind})
		}
		if it.Done { // a block given whole (chat:complete) has no delta
			f.completed(id, "assistant_message", map[string]any{"kind": kind, "text": it.Text})
		} else {
			f.delta(id, kind, it.Delta)
		}
	case fold.KindTool:
		ti := f.tools[it.Tool.ID]
		if it.New {
			ti = toolItem{itemID: f.newItemID()}
			f.tools[it.Tool.ID] = ti
		}
		if it.Done {
			delete(f.tools, it.Tool.ID)
		}
		f.tool(ti.itemID, it)
	case fold.KindApproval:
		a := it.Approval
		if it.New && a.Request != nil {
			id := f.newItemID()
			f.approvals[a.ID] = id
			f.s.mu.Lock()
			f.s.approvals[a.ID] = f.turn.ThreadID
			f.s.mu.Unlock()
			f.started(id, "approval", map[string]any{"requestId": a.ID, "tool": a.Request.ToolName, "input": a.Request.Input})
			p := map[string]any{"requestId": a.ID, "itemId": id, "tool": a.Request.ToolName,
				"input": a.Request.Input, "options": []string{"once", "always", "reject"}}
			if a.Request.Unsandboxed {
				// Once allowed it runs outside the agent's sandbox: the
				// client says so, and "always" is not offered (the core
				// would allow it once and remember nothing).
				p["unsandboxed"], p["options"] = true, []string{"once", "reject"}
			}
			f.notify("approval.requested", p)
		}
		if r := a.Resolved; it.Done {
			id, ok := f.approvals[r.RequestID]
			delete(f.approvals, r.RequestID)
			f.s.mu.Lock()
			delete(f.s.approvals, r.RequestID)
			f.s.mu.Unlock()
			if ok {
				f.completed(id, "approval", map[string]any{"requestId": r.RequestID, "decision": r.Decision, "by": r.By, "message": r.Message})
			}
		}
	case fold.KindPlan:
		f.plan(it)
	case fold.KindStatus:
		if r := it.Event.Retry; it.Event.Type == event.TypeSessionRetry {
			p := map[string]any{"attempt": r.Attempt, "maxRetries": r.MaxRetries, "delayMs": r.DelayMS, "error": r.Error, "message": r.Summary()}
			if r.APIErrorStatus != 0 {
				p["apiErrorStatus"] = r.APIErrorStatus
			}
			f.notify("turn.retry", p)
		}
	case fold.KindEnd:
		// The protocol's ending comes from the event of each update: a
		// completion or a cancellation once seen is the turn's status.
		switch ev := it.Event; ev.Type {
		case event.TypeSessionComplete:
			f.lastCost, f.lastUsage = ev.Complete.CostUSD, ev.Complete.Usage
			f.status = "completed"
		case event.TypeSessionError:
			if ev.Error.Kind == event.ErrorInterrupted || ev.Error.Kind == event.ErrorKilled {
				f.status = "cancelled"
			} else {
				f.failure = ev.Error
			}
		case event.TypeProcessExit:
			f.finish()
		}
	}
}

// tool sends a tool call's items: tool_exec when it starts; at its result
// the output as a tool_log, the tool_exec completed, and an artifact for a
// file a tool wrote.
func (f *follower) tool(id string, it *fold.Item) {
	t := it.Tool
	name := t.Name
	if t.Start == nil {
		name = "tool"
	}
	if it.New && t.Start != nil {
		f.started(id, "tool_exec", map[string]any{"toolUseId": t.ID, "name": name, "input": t.Input})
	}
	if !it.Done {
		return
	}
	if it.New {
		f.started(id, "tool_exec", map[string]any{"toolUseId": t.ID, "name": name})
	}
	res := t.Result
	// The tool's output as a log (engines that stream it send several
	// deltas; the Claude Code CLI gives it whole).
	log := f.newItemID()
	f.started(log, "tool_log", map[string]any{"toolItemId": id})
	if res.Content != "" {
		f.delta(log, "tool_output", res.Content)
	}
	f.completed(log, "tool_log", map[string]any{"toolItemId": id, "output": res.Content})
	f.completed(id, "tool_exec", map[string]any{"toolUseId": res.ToolUseID, "name": name, "input": t.Input,
		"output": res.Content, "isError": res.IsError})
	if artifactTools[name] && !res.IsError {
		var in struct {
			FilePath     string `json:"file_path"`
			NotebookPath string `json:"notebook_path"`
		}
		_ = json.Unmarshal(t.Input, &in)
		if p := in.FilePath + in.NotebookPath; p != "" {
			a := f.newItemID()
			data := map[string]any{"path": p, "tool": name, "toolItemId": id}
			f.started(a, "artifact", data)
			f.completed(a, "artifact", data)
		}
	}
}

// end sends turn.completed (status completed or cancelled).
func (f *follower) end(status string) {
	if f.ended {
		return
	}
	f.flush()
	f.ended = true
	now := f.now()
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
	f.flush()
	f.ended = true
	now := f.now()
	f.turn.Status, f.turn.Time.Completed = "error", &now
	f.notify("turn.error", map[string]any{"turn": f.turn, "error": map[string]any{"message": e.Error, "kind": e.Kind}})
}
