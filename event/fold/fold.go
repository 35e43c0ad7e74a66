// Package fold turns the event stream of package event into items: the
// things a person reads (a user message, a block of assistant text or
// reasoning, a tool call with its result, an approval, a plan to review,
// what a model call used, a status, the end of a turn). It is the one fold every door renders: each door maps items
// to its own wire or screen, and none keeps its own state of a turn's
// blocks.
//
// A Fold is fed events in log order and yields updates of items:
//
//	var f fold.Fold
//	for _, ev := range events {
//		u := f.Add(&ev)
//		for _, it := range u.Items() {
//			render(it) // it.New: first update; it.Done: last one
//		}
//	}
//	u := f.Flush() // the block still open
//	for _, it := range u.Items() { render(it) }
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
	// KindPlan is a plan a person reviews: New at plan:ready, Done at its
	// plan:resolved (joined by planId).
	KindPlan Kind = "plan"
	// KindUsage is what one model call used (usage:update: Event.Usage)
	// or an account's rate limit (rate_limit: Event.RateLimit); New and
	// Done at once. It closes no block: it may come between two deltas.
	KindUsage Kind = "usage"
	// KindStatus is one event that shows a state and ends nothing:
	// session:init, session:retry, trust:required, session:forked,
	// session:rewound, prompt:queued, prompt:dequeued, and a session:error
	// of kind resume_not_found (the core goes on with a new conversation).
	// Event is that event; New and Done at once.
	KindStatus Kind = "status"
	// KindEnd is the end of a turn: New at its session:complete or
	// session:error, Done at process:exit. What failed or was interrupted
	// stays known until the next user:message (a log may hold a second
	// process:exit for the same turn).
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
	// Whole marks a text block given whole by chat:complete (no deltas),
	// Repeat one whose text is the turn's last text block again (the
	// Claude Code CLI repeats its final answer at the end).
	Whole, Repeat bool
	// Seq is the seq given with the event of this update (AddSeq), OpenSeq
	// the one given with the event that opened the item.
	Seq, OpenSeq int64
	// Event is the event of this update, the pointer given to Add: valid
	// as long as the caller keeps it, not to be modified. For a text or
	// reasoning block closed by another event, that other event; nil for
	// one closed by Flush.
	Event *event.Event
	// Parent is the parentToolUseId of the item's events: set when a
	// subagent produced them.
	Parent string

	// Text is the user's message, or the block's whole text when Done.
	Text string
	// Delta is what this update added to a text or reasoning block.
	Delta string

	Tool     *Tool
	Approval *Approval
	Plan     *Plan
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

// Plan is a plan an agent ended and the person's decision on it. Ready is
// nil when a decision came without one.
type Plan struct {
	ID       string // planId
	Ready    *event.PlanReady
	Resolved *event.PlanResolved // nil until Done
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
	next int

	block   Item // the open text or reasoning block (ID 0: none); Seq: its last delta's
	buf     strings.Builder
	last    string // the turn's last top-level text block
	hasLast bool

	// The tool calls, approvals and plans not yet answered, as they
	// opened, by toolUseId, requestId and planId.
	tools, approvals, plans map[string]Item

	end               *openEnd
	fail, interrupted *event.SessionError
	complete          *event.SessionComplete
}

type openEnd struct {
	id  int
	seq int64
}

// Updates is what one event changes: at most two updates (of the block
// it closes, then of its own item). It is a value, kept on the caller's
// stack: the fold is on every door's hot path (one event per token).
type Updates struct {
	n     int
	items [2]Item
}

// Items are the updates, in order.
func (u *Updates) Items() []Item { return u.items[:u.n] }

// Add folds ev and returns the updates it makes:
//
//	u := f.Add(&ev)
//	for _, it := range u.Items() { … }
func (f *Fold) Add(ev *event.Event) Updates { return f.AddSeq(0, ev) }

// AddSeq is Add for an event stored at seq: the items it updates carry it.
func (f *Fold) AddSeq(seq int64, ev *event.Event) (u Updates) {
	f.addSeq(&u, seq, ev)
	return u
}

func (f *Fold) addSeq(u *Updates, seq int64, ev *event.Event) {
	switch ev.Type {
	case event.TypeChatDelta:
		f.delta(u, seq, ev, KindText)
	case event.TypeThinkingDelta:
		f.delta(u, seq, ev, KindReasoning)
	case event.TypeUserMessage:
		f.close(u, seq, ev)
		f.reset()
		u.add(Item{ID: f.id(), Kind: KindUser, New: true, Done: true, Seq: seq, OpenSeq: seq, Event: ev,
			Parent: ev.ParentToolUseID, Text: ev.Text})
	case event.TypeChatComplete:
		wasText := f.block.Kind == KindText
		f.close(u, seq, ev)
		if !wasText && ev.Text != "" {
			repeat := f.hasLast && ev.Text == f.last
			if ev.ParentToolUseID == "" {
				f.last, f.hasLast = ev.Text, true
			}
			u.add(Item{ID: f.id(), Kind: KindText, New: true, Done: true, Seq: seq, OpenSeq: seq, Event: ev,
				Parent: ev.ParentToolUseID, Text: ev.Text, Whole: true, Repeat: repeat})
		}
	case event.TypeToolStart:
		f.close(u, seq, ev)
		if ev.ToolStart != nil {
			f.toolStart(u, seq, ev)
		}
	case event.TypeToolResult:
		f.close(u, seq, ev)
		if ev.ToolResult != nil {
			f.toolResult(u, seq, ev)
		}
	case event.TypeApprovalRequested:
		f.close(u, seq, ev)
		if ev.Approval != nil {
			f.approvalRequested(u, seq, ev)
		}
	case event.TypeApprovalResolved:
		if ev.Resolved != nil {
			f.approvalResolved(u, seq, ev)
		}
	case event.TypePlanReady:
		// Like usage below, it closes no block: it is a card beside the
		// answer (the doors sent it so before it was an item).
		if ev.PlanReady != nil {
			p := &Plan{ID: ev.PlanReady.PlanID, Ready: ev.PlanReady}
			u.add(f.open(&f.plans, p.ID, Item{Kind: KindPlan, Seq: seq, OpenSeq: seq, Event: ev, Plan: p}))
		}
	case event.TypePlanResolved:
		if ev.PlanResolved != nil {
			it := f.answer(f.plans, ev.PlanResolved.PlanID, KindPlan, seq, ev)
			it.Plan.Resolved = ev.PlanResolved
			u.add(it)
		}
	case event.TypeUsageUpdate, event.TypeRateLimit:
		if ev.Usage != nil || ev.RateLimit != nil {
			u.add(Item{ID: f.id(), Kind: KindUsage, New: true, Done: true, Seq: seq, OpenSeq: seq, Event: ev, Parent: ev.ParentToolUseID})
		}
	case event.TypeSessionComplete:
		f.close(u, seq, ev)
		if ev.Complete != nil {
			f.complete = ev.Complete
			f.endUpdate(u, seq, ev, false)
		}
	case event.TypeSessionError:
		f.close(u, seq, ev)
		switch {
		case ev.Error == nil:
		case ev.Error.Kind == event.ErrorResumeNotFound:
			f.status(u, seq, ev)
		case ev.Error.Kind == event.ErrorInterrupted || ev.Error.Kind == event.ErrorKilled:
			f.interrupted = ev.Error
			f.endUpdate(u, seq, ev, false)
		default:
			f.fail = ev.Error
			f.endUpdate(u, seq, ev, false)
		}
	case event.TypeProcessExit:
		f.close(u, seq, ev)
		f.endUpdate(u, seq, ev, true)
		f.end = nil // what failed stays known to a later end until a user:message
	case event.TypeSessionForked, event.TypeSessionRewound, event.TypeTrustRequired:
		f.close(u, seq, ev)
		f.status(u, seq, ev)
	case event.TypeSessionInit, event.TypeSessionRetry, event.TypePromptQueued, event.TypePromptDequeued:
		f.status(u, seq, ev)
	}
}

// Flush closes the open text or reasoning block, as the end of the input
// does, and returns its last update (none when no block is open).
func (f *Fold) Flush() (u Updates) {
	f.close(&u, f.block.Seq, nil)
	return u
}

func (f *Fold) id() int {
	f.next++
	return f.next
}

func (u *Updates) add(it Item) {
	u.items[u.n] = it
	u.n++
}

// reset forgets what a turn left open: a new turn begins.
func (f *Fold) reset() {
	f.last, f.hasLast = "", false
	clear(f.tools)
	clear(f.approvals)
	clear(f.plans)
	f.end, f.fail, f.interrupted, f.complete = nil, nil, nil, nil
}

// delta adds a chat or thinking delta to the open block of its kind and
// parent, closing another one first.
func (f *Fold) delta(u *Updates, seq int64, ev *event.Event, kind Kind) {
	if f.block.ID != 0 && (f.block.Kind != kind || f.block.Parent != ev.ParentToolUseID) {
		f.close(u, seq, ev)
	}
	isNew := f.block.ID == 0
	if isNew {
		f.block = Item{ID: f.id(), Kind: kind, OpenSeq: seq, Parent: ev.ParentToolUseID}
	}
	f.block.Seq = seq
	f.buf.WriteString(ev.Text)
	// Written in place: this is the path of every token.
	it := &u.items[u.n]
	u.n++
	it.ID, it.Kind, it.New, it.Seq, it.OpenSeq = f.block.ID, kind, isNew, seq, f.block.OpenSeq
	it.Event, it.Parent, it.Delta = ev, f.block.Parent, ev.Text
}

// close ends the open block, if any, by ev.
func (f *Fold) close(u *Updates, seq int64, ev *event.Event) {
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
	u.add(b)
}

func (f *Fold) toolStart(u *Updates, seq int64, ev *event.Event) {
	ts := ev.ToolStart
	t := &Tool{ID: ts.ToolUseID, Name: ts.Name, Input: ts.Input, Start: ts}
	u.add(f.open(&f.tools, ts.ToolUseID, Item{Kind: KindTool, Seq: seq, OpenSeq: seq, Event: ev, Tool: t}))
}

func (f *Fold) toolResult(u *Updates, seq int64, ev *event.Event) {
	it := f.answer(f.tools, ev.ToolResult.ToolUseID, KindTool, seq, ev)
	it.Tool.Result = ev.ToolResult
	u.add(it)
}

func (f *Fold) approvalRequested(u *Updates, seq int64, ev *event.Event) {
	a := &Approval{ID: ev.Approval.RequestID, Request: ev.Approval}
	u.add(f.open(&f.approvals, a.ID, Item{Kind: KindApproval, Seq: seq, OpenSeq: seq, Event: ev, Approval: a}))
}

func (f *Fold) approvalResolved(u *Updates, seq int64, ev *event.Event) {
	it := f.answer(f.approvals, ev.Resolved.RequestID, KindApproval, seq, ev)
	it.Approval.Resolved = ev.Resolved
	u.add(it)
}

// open numbers it, a new item, and keeps it in *m under key until its
// answer.
func (f *Fold) open(m *map[string]Item, key string, it Item) Item {
	it.ID, it.New, it.Parent = f.id(), true, it.Event.ParentToolUseID
	if *m == nil {
		*m = map[string]Item{}
	}
	(*m)[key] = it
	return it
}

// answer is the last update of the item of kind open in m under key, or
// of a new one, with an empty Tool, Approval or Plan, when none is: the
// caller adds the answer to it.
func (f *Fold) answer(m map[string]Item, key string, kind Kind, seq int64, ev *event.Event) Item {
	it, ok := m[key]
	switch {
	case ok:
		delete(m, key)
		it.New = false
	case kind == KindTool:
		it = Item{ID: f.id(), Kind: kind, New: true, OpenSeq: seq, Parent: ev.ParentToolUseID, Tool: &Tool{ID: key}}
	case kind == KindPlan:
		it = Item{ID: f.id(), Kind: kind, New: true, OpenSeq: seq, Parent: ev.ParentToolUseID, Plan: &Plan{ID: key}}
	default:
		it = Item{ID: f.id(), Kind: kind, New: true, OpenSeq: seq, Parent: ev.ParentToolUseID, Approval: &Approval{ID: key}}
	}
	it.Done, it.Seq, it.Event = true, seq, ev
	return it
}

func (f *Fold) status(u *Updates, seq int64, ev *event.Event) {
	u.add(Item{ID: f.id(), Kind: KindStatus, New: true, Done: true, Seq: seq, OpenSeq: seq, Event: ev, Parent: ev.ParentToolUseID})
}

// endUpdate yields the turn's end as known so far; done at process:exit.
func (f *Fold) endUpdate(u *Updates, seq int64, ev *event.Event, done bool) {
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
	u.add(it)
}

// All folds evs and returns each item in its final state (a block still
// open at the end closed), in the order the items opened.
func All(evs []event.Event) []Item {
	var f Fold
	var items []Item
	keep := func(u Updates) {
		for _, it := range u.Items() {
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
