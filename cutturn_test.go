package harness

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/chirality/harness/event"
	"github.com/chirality/harness/internal/flock"
)

// A turn a dead process left open (user:message and two approvals, one
// answered, no process:exit) is ended in the log by the next process
// that touches the session: the waiting approval denied, the turn
// reported cut, its process:exit; once. While another process holds the
// session's turn lock, the turn is its own: left alone, and a turn here
// is refused with ErrBusy.
func TestACutTurnIsEndedOnceAndItsApprovalsDenied(t *testing.T) {
	e, _, id := queueEnv(t)
	s, err := e.h.Session(id)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range []event.Event{
		{Type: event.TypeUserMessage, Text: "do it"},
		{Type: event.TypeApprovalRequested, Approval: &event.ApprovalRequested{RequestID: "r1", ToolName: "Bash"}},
		{Type: event.TypeApprovalRequested, Approval: &event.ApprovalRequested{RequestID: "r2", ToolName: "Write"}},
		{Type: event.TypeApprovalResolved, Resolved: &event.ApprovalResolved{RequestID: "r1", Decision: event.DecisionAllow, By: "user"}},
	} {
		if err := e.h.appendEvent(id, ev); err != nil {
			t.Fatal(err)
		}
	}
	before := len(logEvents(t, e, e.h, id))

	// Another process runs the turn: it holds the lock.
	if err := os.MkdirAll(filepath.Dir(turnLockPath(s)), 0o700); err != nil {
		t.Fatal(err)
	}
	unlock, err := flock.TryLock(turnLockPath(s))
	if err != nil {
		t.Fatal(err)
	}
	h2 := e.open()
	if _, err := h2.Session(id); err != nil {
		t.Fatal(err)
	}
	if n := len(logEvents(t, e, h2, id)); n != before {
		t.Fatalf("a turn another process holds was ended: %d events, want %d", n, before)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := h2.StartTurn(ctx, TurnRequest{SessionID: id, Message: "meanwhile"}); !errors.Is(err, ErrBusy) {
		t.Fatalf("a turn while another process runs one: %v, want ErrBusy", err)
	}
	// That process dies (the kernel lets its lock go): the next touch
	// ends the turn, in this process too.
	unlock()
	if _, err := h2.Session(id); err != nil {
		t.Fatal(err)
	}
	evs := logEvents(t, e, h2, id)
	tail := evs[before:]
	var types []event.Type
	for _, ev := range tail {
		types = append(types, ev.Type)
	}
	if want := []event.Type{event.TypeApprovalResolved, event.TypeSessionError, event.TypeProcessExit}; !slices.Equal(types, want) {
		t.Fatalf("the cut turn was ended with %v, want %v", types, want)
	}
	if r := tail[0].Resolved; r.RequestID != "r2" || r.Decision != event.DecisionDeny || r.By != "shutdown" {
		t.Errorf("the waiting approval was resolved as %+v, want r2 denied by shutdown", r)
	}
	if tail[1].Error.Kind != event.ErrorProcess {
		t.Errorf("session:error %+v", tail[1].Error)
	}

	// Once: neither this process nor the next ends it again.
	h3 := e.open()
	for _, h := range []*Harness{h2, h3} {
		if _, err := h.Session(id); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(logEvents(t, e, h3, id)); n != len(evs) {
		t.Fatalf("the ended turn was ended again: %d events, want %d", n, len(evs))
	}
	// And the session goes on.
	turn, err := h3.StartTurn(ctx, TurnRequest{SessionID: id, Message: "next"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := turn.Wait(ctx, nil); err != nil {
		t.Fatal(err)
	}
}

// Turns of one process follow each other without waiting for the lock
// the previous one lets go after its process:exit: none is refused.
func TestBackToBackTurnsShareTheLock(t *testing.T) {
	e, qe, id := queueEnv(t)
	qe.free()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range 20 {
		var turn *Turn
		var err error
		for {
			turn, err = e.h.StartTurn(ctx, TurnRequest{SessionID: id, Message: "turn"})
			if !errors.Is(err, ErrBusy) || !e.h.IsRunning(id) {
				break
			}
			time.Sleep(time.Millisecond) // the previous turn is still in the running set
		}
		if err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		if _, err := turn.Wait(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	if !e.h.turnLocksIdle() {
		t.Errorf("turn locks held after the turns: %v", e.h.turnLocks.m)
	}
}

// dieForTest lets go of the turn locks h holds, as the kernel does when
// a process dies: a test that abandons a Harness in this process to stand
// for a killed server calls it.
func (h *Harness) dieForTest() {
	h.turnLocks.mu.Lock()
	defer h.turnLocks.mu.Unlock()
	for _, hl := range h.turnLocks.m {
		hl.unlock()
	}
}

// A session whose turn another process runs (it holds the turn lock) is
// not deleted under it: ErrBusy (409 at the doors), its files kept; once
// that process is gone, the delete goes through.
func TestDeleteRefusedWhileAnotherProcessRunsATurn(t *testing.T) {
	e, _, id := queueEnv(t)
	s, err := e.h.Session(id)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(turnLockPath(s)), 0o700); err != nil {
		t.Fatal(err)
	}
	unlock, err := flock.TryLock(turnLockPath(s))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.h.DeleteSession(ctx, id); !errors.Is(err, ErrBusy) {
		t.Fatalf("delete while another process runs a turn: %v, want ErrBusy", err)
	}
	if _, err := e.h.Session(id); err != nil {
		t.Fatalf("the session is gone after a refused delete: %v", err)
	}
	unlock()
	if err := e.h.DeleteSession(ctx, id); err != nil {
		t.Fatalf("delete once the other process is gone: %v", err)
	}
	if _, err := e.h.Session(id); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after delete: %v, want ErrNotFound", err)
	}
}

// What a process remembers of a session it settled goes with the session.
func TestDeleteForgetsTheSettledSession(t *testing.T) {
	e, _, id := queueEnv(t)
	if _, err := e.h.Session(id); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.h.settledOnce.m.Load(id); !ok {
		t.Fatal("a touched session is not remembered as settled")
	}
	if err := e.h.DeleteSession(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.h.settledOnce.m.Load(id); ok {
		t.Error("a deleted session is still remembered")
	}
}
