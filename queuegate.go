package harness

import (
	"fmt"
	"slices"

	"github.com/chirality/harness/event"
)

// A door that schedules a session's turns itself (the IRC runner: it
// reports each turn, restarts a crashed agent with a resume prompt first,
// and runs a clear or a compaction between two prompts) keeps its
// prompts in the session's queue, so they are stored and survive a
// restart, and lets the core start them; a gate says when.

// GateQueue makes gate decide, each time the core would start session
// id's next queued prompt (the queue not empty, not held), whether it
// starts now: false leaves it queued. gate is called under the queue's
// lock: it must be quick and must not call the Harness. A gate that
// returns true once per turn it allows (a permit it hands out) lets its
// door follow one turn at a time; RunQueue starts the next prompt once it
// opens again. One gate per session, the last set wins; remove takes
// this one away (a later one stays) and the queue then runs freely. The
// gate is not stored: it lasts as long as this Harness.
func (h *Harness) GateQueue(id string, gate func() bool) (remove func()) {
	h.queueing.Store(true)
	g := &queueGate{open: gate}
	h.gates.Store(id, g)
	return func() {
		if h.gates.CompareAndDelete(id, g) {
			h.kickQueue(id)
		}
	}
}

type queueGate struct{ open func() bool }

// gateOpen asks session id's gate, if it has one (under its queue lock).
func (h *Harness) gateOpen(id string) bool {
	g, ok := h.gates.Load(id)
	return !ok || g.(*queueGate).open()
}

// RunQueue starts session id's next queued prompt, on a goroutine of the
// Harness, when no turn runs and the queue is neither held nor gated
// shut; otherwise it does nothing (the end of the running turn, or a
// release, starts it).
func (h *Harness) RunQueue(id string) {
	h.queueing.Store(true)
	h.kickQueue(id)
}

// MoveQueue moves every prompt queued in session from to the end of
// session to's queue, in order, with their IDs, and returns them (a
// clear or a compaction replaces a door's session: what was queued
// behind it runs in the new one). Each leaves from with prompt:dequeued
// (reason deleted) and joins to with prompt:queued. Both sessions'
// queues are locked for the move. Past MaxQueued in to nothing moves
// (ErrQueueFull). to is saved first: a crash between the two saves leaves
// the prompts in both queues, never in neither.
func (h *Harness) MoveQueue(from, to string) ([]QueuedPrompt, error) {
	if from == to {
		return nil, fmt.Errorf("%w: a queue moved onto itself", ErrInvalidQueueEdit)
	}
	for _, id := range []string{from, to} {
		if _, err := h.Session(id); err != nil {
			return nil, err
		}
	}
	first, second := from, to
	if second < first {
		first, second = second, first
	}
	moved, base, err := h.moveLocked(first, second, from, to)
	if err != nil || len(moved) == 0 {
		return nil, err
	}
	for i, p := range moved {
		h.queueEvent(from, event.Event{Type: event.TypePromptDequeued, Dequeued: &event.PromptDequeued{PromptID: p.PromptID, Reason: event.DequeuedDeleted}})
		h.queueEvent(to, event.Event{Type: event.TypePromptQueued, Queued: &event.PromptQueued{PromptID: p.PromptID, Position: base + i, Message: p.Message}})
	}
	h.kickQueue(to)
	return moved, nil
}

// moveLocked is MoveQueue's move under both queues' locks (taken in the
// order first, second); base is where the first moved prompt now is.
func (h *Harness) moveLocked(first, second, from, to string) (moved []QueuedPrompt, base int, err error) {
	defer h.qlocks.Lock(first)()
	defer h.qlocks.Lock(second)()
	qf, err := h.store.LoadQueue(from)
	if err != nil {
		return nil, 0, mapStoreErr(err)
	}
	qt, err := h.store.LoadQueue(to)
	if err != nil {
		return nil, 0, mapStoreErr(err)
	}
	moved = slices.Clone(qf.Prompts)
	if len(moved) == 0 {
		return nil, 0, nil
	}
	if len(qt.Prompts)+len(moved) > MaxQueued {
		return nil, 0, fmt.Errorf("%w (%d prompts): %d more do not fit", ErrQueueFull, MaxQueued, len(moved))
	}
	base = len(qt.Prompts)
	qt.Prompts = append(qt.Prompts, moved...)
	if err := h.store.SaveQueue(to, qt); err != nil {
		return nil, 0, mapStoreErr(err)
	}
	qf.Prompts = nil
	if err := h.store.SaveQueue(from, qf); err != nil {
		return nil, 0, mapStoreErr(err)
	}
	return moved, base, nil
}
