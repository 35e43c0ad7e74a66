// Package fold turns the event stream of package event into items: the
// things a person reads (a user message, a block of assistant text or
// reasoning, a tool call with its result, an approval, a status, the end
// of a turn). It is the one fold every door renders: each door maps items
// to its own wire or screen, and none keeps its own state of a turn's
// blocks.
//
// A Fold is fed events in log order and yields updates of items:
//
//	var f fold.Fold
//	for _, ev := range events {
//		for _, it := range f.Add(&ev) {
//			render(it) // it.New: first update; it.Done: last one
//		}
//	}
//	for _, it := range f.Flush() { render(it) } // the block still open
//
// All folds a whole slice into the final state of each item.
package fold

import (
	"encoding/json"
	"strings"

	"github.com/chirality/harness/event"
)

// Kind says what an Item is.
type Kind string

// The kinds of items.
const (
	// KindUser is the person's message (user:message): Text.
	KindUser Kind = "user"
	// KindText is a block of assistant text: the chat:delta events of one
	// parent in a row (Delta on each update, Text when Done), or a text
	// an engine gave whole in chat:complete (Whole, New and Done at once).
	KindText Kind = "text"
	// KindReasoning is a block of thinking:delta events, like KindText.
	KindReasoning Kind = "reasoning"
	// KindTool is a tool call: New at tool:start, Done at its tool:result
	// (joined by toolUseId).
	KindTool Kind = "tool"
	// KindApproval is a person's decision on a tool use: New at
	// approval:requested, Done at its approval:resolved (joined by
	// requestId).
	KindApproval Kind = "approval"
	// KindStatus is one event that shows a state and ends nothing:
	// session:init, session:retry, trust:required, session:forked,
	// session:rewound, prompt:queued, prompt:dequeued, and a session:error
	// of kind resume_not_found (the core goes on with a new conversation).
	// Event is that event; New and Done at once.
	KindStatus Kind = "status"
	// KindEnd is the end of a turn: New at its session:complete or
	// session:error, Done at process:exit.
	KindEnd Kind = "end"
)

// Outcome is how a turn ended.
type Outcome string

// The outcomes of End.
const (
	Completed   Outcome = "completed"
	Failed      Outcome = "failed"
	Interrupted Outcome = "interrupted"
)

// Item is one update of one item. Only the fields of its Kind are set.
type Item struct {
	// ID numbers the items of a Fold from 1, in the order they open; every
	// update of an item has its ID.
	ID   int
	Kind Kind
	// New is set on an item's first update, Done on its last (both on an
	// item made whole by one event).
	New, Done bool
	// Seq is the seq given with the event of this update (AddSeq), OpenSeq
	// the one given with the event that opened the item.
	Seq, OpenSeq int64
	// Event is the event of this update; for a text or reasoning block
	// closed by another event, that other event. Not to be modified.
	Event *event.Event
	// Parent is the parentToolUseId of the item's events: set when a
	// subagent produced them.
	Parent string

	// Text is the user's message, or the block's whole text when Done.
	Text string
	// Delta is what this update added to a text or reasoning block.
	Delta string
	// Whole marks a text block given whole by chat:complete (no deltas),
	// Repeat one whose text is the turn's last text block again (the
	// Claude Code CLI repeats its final answer at the end).
	Whole, Repeat bool

	Tool     *Tool
	Approval *Approval
	End      *End
}

// Tool is a tool call. Start is nil when a result came without one.
type Tool struct {
	ID     string // toolUseId
	Name   string
	Input  json.RawMessage
	Start  *event.ToolStart
	Result *event.ToolResult // nil until Done
}

// Approval is a request to run a tool and its answer. Request is nil when
// an answer came without one.
type Approval struct {
	ID       string // requestId
	Request  *event.ApprovalRequested
	Resolved *event.ApprovalResolved // nil until Done
}

// End is a turn's end. Error is the failure (Failed) or the interruption
// (Interrupted); a turn whose process ended without a result is Failed
// with no Error. Exit is set when Done.
type End struct {
	Outcome  Outcome
	Complete *event.SessionComplete
	Error    *event.SessionError
	Exit     *event.ProcessExit
}

// Fold folds one stream of events. Its zero value is ready to use; it is
// not safe for concurrent use. It holds the open block, the tool calls and
// approvals not yet answered (forgotten at the next user:message) and the
// turn's end so far.
type Fold struct {
	out  []Item
	next int

	block   Item // the open text or reasoning block (ID 0: none)
	buf     strings.Builder
	last    string // the turn's last top-level text block
	hasLast bool

	tools     map[string]*openTool
	approvals map[string]*openApproval

	end               *openEnd
	fail, interrupted *event.SessionError
	complete          *event.SessionComplete
}

type openTool struct {
	id     int
	seq    int64
	t      *Tool
	parent string
}

type openApproval struct {
	id     int
	seq    int64
	a      *Approval
	parent string
}

type openEnd struct {
	id  int
	seq int64
}

// Add folds ev and returns the updates it makes, in order. The slice is
// the Fold's own: it is valid until the next call.
func (f *Fold) Add(ev *event.Event) []Item { return f.AddSeq(0, ev) }

// AddSeq is Add for an event stored at seq: the items it updates carry it.
func (f *Fold) AddSeq(seq int64, ev *event.Event) []Item {
	f.out = f.out[:0]
	switch ev.Type {
	case event.TypeChatDelta:
		f.delta(seq, ev, KindText)
	case event.TypeThinkingDelta:
		f.delta(seq, ev, KindReasoning)
	case event.TypeUserMessage:
		f.close(seq, ev)
		f.reset()
		f.emit(Item{ID: f.id(), Kind: KindUser, New: true, Done: true, Seq: seq, OpenSeq: seq, Event: ev,
			Parent: ev.ParentToolUseID, Text: ev.Text})
	case event.TypeChatComplete:
		wasText := f.block.Kind == KindText
		f.close(seq, ev)
		if !wasText && ev.Text != "" {
			repeat := f.hasLast && ev.Text == f.last
			if ev.ParentToolUseID == "" {
				f.last, f.hasLast = ev.Text, true
			}
			f.emit(Item{ID: f.id(), Kind: KindText, New: true, Done: true, Seq: seq, OpenSeq: seq, Event: ev,
				Parent: ev.ParentToolUseID, Text: ev.Text, Whole: true, Repeat: repeat})
		}
	case event.TypeToolStart:
		f.close(seq, ev)
		if ev.ToolStart != nil {
			f.toolStart(seq, ev)
		}
	case event.TypeToolResult:
		f.close(seq, ev)
		if ev.ToolResult != nil {
			f.toolResult(seq, ev)
		}
	case event.TypeApprovalRequested:
		f.close(seq, ev)
		if ev.Approval != nil {
			f.approvalRequested(seq, ev)
		}
	case event.TypeApprovalResolved:
		if ev.Resolved != nil {
			f.approvalResolved(seq, ev)
		}
	case event.TypeSessionComplete:
		f.close(seq, ev)
		if ev.Complete != nil {
			f.complete = ev.Complete
			f.endUpdate(seq, ev, false)
		}
	case event.TypeSessionError:
		f.close(seq, ev)
		switch {
		case ev.Error == nil:
		case ev.Error.Kind == event.ErrorResumeNotFound:
			f.status(seq, ev)
		case ev.Error.Kind == event.ErrorInterrupted || ev.Error.Kind == event.ErrorKilled:
			f.interrupted = ev.Error
			f.endUpdate(seq, ev, false)
		default:
			f.fail = ev.Error
			f.endUpdate(seq, ev, false)
		}
	case event.TypeProcessExit:
		f.close(seq, ev)
		f.endUpdate(seq, ev, true)
		f.end, f.fail, f.interrupted, f.complete = nil, nil, nil, nil
	case event.TypeSessionForked, event.TypeSessionRewound, event.TypeTrustRequired:
		f.close(seq, ev)
		f.status(seq, ev)
	case event.TypeSessionInit, event.TypeSessionRetry, event.TypePromptQueued, event.TypePromptDequeued:
		f.status(seq, ev)
	}
	return f.out
}

// Flush closes the open text or reasoning block, as the end of the input
// does, and returns its last update (none when no block is open).
func (f *Fold) Flush() []Item {
	f.out = f.out[:0]
	f.close(f.block.Seq, f.block.Event)
	return f.out
}

func (f *Fold) id() int {
	f.next++
	return f.next
}

func (f *Fold) emit(it Item) { f.out = append(f.out, it) }

// reset forgets what a turn left open: a new turn begins.
func (f *Fold) reset() {
	f.last, f.hasLast = "", false
	clear(f.tools)
	clear(f.approvals)
	f.end, f.fail, f.interrupted, f.complete = nil, nil, nil, nil
}

// delta adds a chat or thinking delta to the open block of its kind and
// parent, closing another one first.
func (f *Fold) delta(seq int64, ev *event.Event, kind Kind) {
	if f.block.ID != 0 && (f.block.Kind != kind || f.block.Parent != ev.ParentToolUseID) {
		f.close(seq, ev)
	}
	it := Item{Kind: kind, Seq: seq, Event: ev, Parent: ev.ParentToolUseID, Delta: ev.Text}
	if f.block.ID == 0 {
		it.ID, it.New, it.OpenSeq = f.id(), true, seq
		f.block = Item{ID: it.ID, Kind: kind, Seq: seq, OpenSeq: seq, Event: ev, Parent: ev.ParentToolUseID}
	} else {
		it.ID, it.OpenSeq = f.block.ID, f.block.OpenSeq
		f.block.Seq, f.block.Event = seq, ev
	}
	f.buf.WriteString(ev.Text)
	f.emit(it)
}

// close ends the open block, if any, by ev.
func (f *Fold) close(seq int64, ev *event.Event) {
	if f.block.ID == 0 {
		return
	}
	b := f.block
	b.Done, b.Seq, b.Event, b.Text = true, seq, ev, f.buf.String()
	if b.Kind == KindText && b.Parent == "" {
		f.last, f.hasLast = b.Text, true
	}
	f.block = Item{}
	f.buf.Reset()
	f.emit(b)
}

func (f *Fold) toolStart(seq int64, ev *event.Event) {
	ts := ev.ToolStart
	t := &Tool{ID: ts.ToolUseID, Name: ts.Name, Input: ts.Input, Start: ts}
	id := f.id()
	if f.tools == nil {
		f.tools = map[string]*openTool{}
	}
	f.tools[ts.ToolUseID] = &openTool{id: id, seq: seq, t: t, parent: ev.ParentToolUseID}
	f.emit(Item{ID: id, Kind: KindTool, New: true, Seq: seq, OpenSeq: seq, Event: ev, Parent: ev.ParentToolUseID, Tool: t})
}

func (f *Fold) toolResult(seq int64, ev *event.Event) {
	r := ev.ToolResult
	it := Item{Kind: KindTool, Done: true, Seq: seq, Event: ev, Parent: ev.ParentToolUseID}
	if o, ok := f.tools[r.ToolUseID]; ok {
		delete(f.tools, r.ToolUseID)
		it.ID, it.OpenSeq, it.Tool, it.Parent = o.id, o.seq, o.t, o.parent
	} else {
		it.ID, it.New, it.OpenSeq, it.Tool = f.id(), true, seq, &Tool{ID: r.ToolUseID}
	}
	it.Tool.Result = r
	f.emit(it)
}

func (f *Fold) approvalRequested(seq int64, ev *event.Event) {
	a := &Approval{ID: ev.Approval.RequestID, Request: ev.Approval}
	id := f.id()
	if f.approvals == nil {
		f.approvals = map[string]*openApproval{}
	}
	f.approvals[a.ID] = &openApproval{id: id, seq: seq, a: a, parent: ev.ParentToolUseID}
	f.emit(Item{ID: id, Kind: KindApproval, New: true, Seq: seq, OpenSeq: seq, Event: ev, Parent: ev.ParentToolUseID, Approval: a})
}

func (f *Fold) approvalResolved(seq int64, ev *event.Event) {
	r := ev.Resolved
	it := Item{Kind: KindApproval, Done: true, Seq: seq, Event: ev, Parent: ev.ParentToolUseID}
	if o, ok := f.approvals[r.RequestID]; ok {
		delete(f.approvals, r.RequestID)
		it.ID, it.OpenSeq, it.Approval, it.Parent = o.id, o.seq, o.a, o.parent
	} else {
		it.ID, it.New, it.OpenSeq, it.Approval = f.id(), true, seq, &Approval{ID: r.RequestID}
	}
	it.Approval.Resolved = r
	f.emit(it)
}

func (f *Fold) status(seq int64, ev *event.Event) {
	f.emit(Item{ID: f.id(), Kind: KindStatus, New: true, Done: true, Seq: seq, OpenSeq: seq, Event: ev, Parent: ev.ParentToolUseID})
}

// endUpdate yields the turn's end as known so far; done at process:exit.
func (f *Fold) endUpdate(seq int64, ev *event.Event, done bool) {
	it := Item{Kind: KindEnd, Done: done, Seq: seq, Event: ev, Parent: ev.ParentToolUseID}
	if f.end == nil {
		f.end = &openEnd{id: f.id(), seq: seq}
		it.New = true
	}
	it.ID, it.OpenSeq = f.end.id, f.end.seq
	e := &End{Complete: f.complete, Exit: ev.Exit}
	switch {
	case f.fail != nil:
		e.Outcome, e.Error = Failed, f.fail
	case f.interrupted != nil:
		e.Outcome, e.Error = Interrupted, f.interrupted
	case f.complete != nil:
		e.Outcome = Completed
	default:
		e.Outcome = Failed
	}
	it.End = e
	f.emit(it)
}

// All folds evs and returns each item in its final state (a block still
// open at the end closed), in the order the items opened.
func All(evs []event.Event) []Item {
	var f Fold
	var items []Item
	keep := func(up []Item) {
		for _, it := range up {
			i := it.ID - 1
			for len(items) <= i {
				items = append(items, Item{})
			}
			items[i] = merge(items[i], it)
		}
	}
	for i := range evs {
		keep(f.Add(&evs[i]))
	}
	keep(f.Flush())
	return items
}

// merge is the state of an item after update up (a block's Delta is
// dropped: its Text is whole once Done).
func merge(cur, up Item) Item {
	if up.New {
		return up
	}
	up.New, up.Delta = cur.New, ""
	return up
}
