package harness

import (
	"errors"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/chirality/harness/event"
)

// A gated queue starts a prompt only when its gate says so, one per
// permit: Enqueue and RunQueue with the gate shut start nothing; a
// permit starts the head prompt, the next waits for the next permit;
// removing the gate lets the queue run freely.
func TestQueueGate(t *testing.T) {
	e, qe, id := queueEnv(t)
	var permits atomic.Int32
	remove := e.h.GateQueue(id, func() bool { return permits.Add(-1) >= 0 })
	for _, m := range []string{"one", "two", "three"} {
		if _, err := e.h.Enqueue(id, m); err != nil {
			t.Fatal(err)
		}
	}
	e.h.RunQueue(id)
	e.h.drainQueue(id) // what RunQueue's goroutine does, surely done once here
	if got := qe.messages(); len(got) != 0 || e.h.IsRunning(id) {
		t.Fatalf("a shut gate let turns run: %q", got)
	}
	permits.Store(1)
	e.h.RunQueue(id)
	waitFor(t, "the permitted turn", func() bool {
		l, _ := e.h.Queue(id)
		return len(qe.messages()) == 1 && len(l) == 2 && !e.h.IsRunning(id)
	})
	e.h.drainQueue(id) // the turn's end drained; the gate is shut again
	if got := qe.messages(); !slices.Equal(got, []string{"one"}) {
		t.Fatalf("one permit ran %q", got)
	}
	remove()
	waitFor(t, "the ungated queue", func() bool {
		l, _ := e.h.Queue(id)
		return len(qe.messages()) == 3 && len(l) == 0 && !e.h.IsRunning(id)
	})
	if got := qe.messages(); !slices.Equal(got, []string{"one", "two", "three"}) {
		t.Fatalf("turns ran %q, want in order", got)
	}
}

// EnqueueFirst puts a prompt ahead of those queued; MoveQueue moves a
// queue's prompts, with their IDs and in order, behind another session's,
// with prompt:dequeued and prompt:queued in the two logs.
func TestEnqueueFirstAndMoveQueue(t *testing.T) {
	e, _, id := queueEnv(t)
	shut := func() bool { return false }
	defer e.h.GateQueue(id, shut)()
	other, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct", Engine: "queue"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.h.GateQueue(other.ID, shut)()
	for _, m := range []string{"two", "three"} {
		if _, err := e.h.Enqueue(id, m); err != nil {
			t.Fatal(err)
		}
	}
	q, err := e.h.EnqueueFirst(id, "one")
	if err != nil || q.Position != 0 {
		t.Fatalf("EnqueueFirst = %+v, %v", q, err)
	}
	before, _ := e.h.Queue(id)
	if !slices.Equal(promptIDs(before), []string{"one", "two", "three"}) {
		t.Fatalf("queue %q, want one first", promptIDs(before))
	}
	if _, err := e.h.Enqueue(other.ID, "zero"); err != nil {
		t.Fatal(err)
	}
	moved, err := e.h.MoveQueue(id, other.ID)
	if err != nil || len(moved) != 3 {
		t.Fatalf("MoveQueue = %v, %v", moved, err)
	}
	after, _ := e.h.Queue(other.ID)
	left, _ := e.h.Queue(id)
	if len(left) != 0 || !slices.Equal(promptIDs(after), []string{"zero", "one", "two", "three"}) {
		t.Fatalf("after the move: %q left, %q in the other", promptIDs(left), promptIDs(after))
	}
	for i, p := range after[1:] {
		if p.PromptID != before[i].PromptID {
			t.Errorf("moved prompt %d has ID %s, want %s kept", i, p.PromptID, before[i].PromptID)
		}
	}
	var dequeued, queued []string
	for _, ev := range logEvents(t, e, e.h, id) {
		if ev.Type == event.TypePromptDequeued {
			dequeued = append(dequeued, ev.Dequeued.PromptID)
		}
	}
	for _, ev := range logEvents(t, e, e.h, other.ID) {
		if ev.Type == event.TypePromptQueued && ev.Queued.Message != "zero" {
			queued = append(queued, ev.Queued.PromptID)
		}
	}
	if want := []string{before[0].PromptID, before[1].PromptID, before[2].PromptID}; !slices.Equal(dequeued, want) || !slices.Equal(queued, want) {
		t.Errorf("events: dequeued %v, queued %v; want %v in both", dequeued, queued, want)
	}
	// Past the bound nothing moves.
	for range MaxQueued - 1 {
		if _, err := e.h.Enqueue(id, "x"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.h.MoveQueue(id, other.ID); !errors.Is(err, ErrQueueFull) {
		t.Errorf("a move past MaxQueued = %v, want ErrQueueFull", err)
	}
	if l, _ := e.h.Queue(id); len(l) != MaxQueued-1 {
		t.Errorf("a refused move left %d prompts, want %d", len(l), MaxQueued-1)
	}
	if _, err := e.h.MoveQueue(id, id); err == nil {
		t.Error("a queue moved onto itself")
	}
}
