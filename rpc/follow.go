package rpc

import (
	"context"
	"encoding/json"
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
	ended     bool
	noted     bool                // the turn's place in the core is in meta.Turns
	status    string              // completed or cancelled, once known
	failure   *event.SessionError // how it failed, once known
	lastCost  float64
	lastUsage json.RawMessage
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

// artifactTools are the tools whose input names a file they write.
var artifactTools = map[string]bool{"Write": true, "Edit": true, "MultiEdit": true, "NotebookEdit": true}

func (f *follower) apply(ev event.Event) {
	if f.ended {
		return
	}
	for _, it := range f.fold.Add(&ev) {
		f.render(&it)
	}
}

// flush ends the open assistant item, if any.
func (f *follower) flush() {
	for _, it := range f.fold.Flush() {
		f.render(&it)
	}
}

// render sends the notifications of one update of an item of the fold.
func (f *follower) render(it *fold.Item) {
	switch it.Kind {
	case fold.KindUser:
		id := newItemID()
		f.started(id, "user_message", map[string]any{"text": it.Text})
		f.completed(id, "user_message", map[string]any{"text": it.Text})
	case fold.KindText, fold.KindReasoning:
		kind := string(it.Kind)
		if it.New {
			f.block = newItemID()
		}
		id := f.block
		if it.Done {
			f.block = ""
		}
		if it.New {
			f.started(id, "assistant_message", map[string]any{"kind": kind})
		}
		if !it.Whole && !it.Done {
			f.delta(id, kind, it.Delta)
		}
		if it.Done {
			f.completed(id, "assistant_message", map[string]any{"kind": kind, "text": it.Text})
		}
	case fold.KindTool:
		ti := f.tools[it.Tool.ID]
		if it.New {
			ti = toolItem{itemID: newItemID()}
			f.tools[it.Tool.ID] = ti
		}
		if it.Done {
			delete(f.tools, it.Tool.ID)
		}
		f.tool(ti.itemID, it)
	case fold.KindApproval:
		a := it.Approval
		if it.New && a.Request != nil {
			id := newItemID()
			f.approvals[a.ID] = id
			f.s.mu.Lock()
			f.s.approvals[a.ID] = f.turn.ThreadID
			f.s.mu.Unlock()
			f.started(id, "approval", map[string]any{"requestId": a.ID, "tool": a.Request.ToolName, "input": a.Request.Input})
			f.notify("approval.requested", map[string]any{"requestId": a.ID, "itemId": id, "tool": a.Request.ToolName,
				"input": a.Request.Input, "options": []string{"once", "always", "reject"}})
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
	log := newItemID()
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
			a := newItemID()
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
	f.flush()
	f.ended = true
	now := nowMS()
	f.turn.Status, f.turn.Time.Completed = "error", &now
	f.notify("turn.error", map[string]any{"turn": f.turn, "error": map[string]any{"message": e.Error, "kind": e.Kind}})
}
