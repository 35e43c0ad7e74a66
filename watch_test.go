package harness

import (
	"context"
	"testing"
	"time"

	"github.com/chirality/harness/event"
	"github.com/chirality/harness/session"
)

// Watch sees every stored event of every session, a turn's and the
// core's own outside a turn (a prompt queued after the turn ended),
// with its seq and typed event; a full watcher misses events without
// holding the turn; Shutdown closes every watch.
func TestWatchSeesEveryStoredEvent(t *testing.T) {
	e, qe, id := queueEnv(t)
	all, stopAll := e.h.Watch(0)
	small, _ := e.h.Watch(1) // never read: full after one event
	defer stopAll()

	tr, err := e.h.StartTurn(context.Background(), TurnRequest{SessionID: id, Message: "first"})
	if err != nil {
		t.Fatal(err)
	}
	<-tr.Done()
	if _, err := e.h.Enqueue(id, "hold the second"); err != nil { // stored outside a turn, then started by the core
		t.Fatal(err)
	}
	waitFor(t, "the second turn", func() bool { return len(qe.messages()) == 2 })
	qe.free()

	var types []event.Type
	var last int64
	for len(types) == 0 || types[len(types)-1] != event.TypeProcessExit || len(types) < 8 {
		var rec session.Record
		select {
		case rec = <-all:
		case <-time.After(30 * time.Second):
			t.Fatalf("the watch stopped after %v", types)
		}
		if rec.Typed == nil || rec.Typed.SessionID != id || rec.Seq <= last {
			t.Fatalf("record %+v after seq %d: want the session's typed events in order", rec, last)
		}
		last = rec.Seq
		types = append(types, rec.Typed.Type)
	}
	want := []event.Type{event.TypeUserMessage, event.TypeSessionInit, event.TypeSessionComplete, event.TypeProcessExit,
		event.TypePromptQueued, event.TypePromptDequeued, event.TypeUserMessage, event.TypeSessionInit, event.TypeSessionComplete, event.TypeProcessExit}
	if len(types) != len(want) {
		t.Fatalf("watched %v, want %v", types, want)
	}
	for i := range want {
		if types[i] != want[i] {
			t.Fatalf("watched %v, want %v", types, want)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.h.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.h.WatchDropped(); got < int64(len(want))-1 {
		t.Errorf("the full watcher missed %d events, want at least %d", got, len(want)-1)
	}
	<-small // one event, then closed
	if _, ok := <-small; ok {
		t.Fatal("a watch is open after Shutdown")
	}
	late, _ := e.h.Watch(0)
	if _, ok := <-late; ok {
		t.Fatal("a watch made after Shutdown is open")
	}
}
