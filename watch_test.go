package harness

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"testing"
	"time"

	"github.com/chirality/harness/event"
	"github.com/chirality/harness/session"
)

// Watch sees every stored event of every session, a turn's and the
// core's own outside a turn (a prompt queued after the turn ended),
// with its seq and typed event; a full watcher misses events without
// holding the turn and is told so in their place; Shutdown ends every
// watch.
func TestWatchSeesEveryStoredEvent(t *testing.T) {
	e, qe, id := queueEnv(t)
	all := e.h.Watch(context.Background(), 0)
	small := e.h.Watch(context.Background(), 1) // not read until the end: full after one event
	next, stopAll := iter.Pull2(all)
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
		rec, err, ok := next()
		if !ok || err != nil {
			t.Fatalf("the watch stopped after %v: %v", types, err)
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
	missed := int64(len(want)) - 1
	if got := e.h.WatchDropped(); got != missed {
		t.Errorf("WatchDropped = %d, want the full watcher's %d", got, missed)
	}
	if _, err, ok := next(); ok {
		t.Fatalf("a watch is open after Shutdown: %v", err)
	}
	// The full watcher: its one record, then what it missed, then the end.
	var got []string
	for rec, err := range small {
		var de *WatchDropError
		switch {
		case errors.As(err, &de) && errors.Is(err, ErrWatchDropped):
			if de.Missed != missed {
				t.Errorf("missed %d, want %d", de.Missed, missed)
			}
			got = append(got, "dropped")
		case err != nil:
			t.Fatal(err)
		default:
			got = append(got, string(rec.Typed.Type))
		}
	}
	if len(got) != 2 || got[0] != string(event.TypeUserMessage) || got[1] != "dropped" {
		t.Errorf("the full watcher read %v, want user:message then the drop", got)
	}
	for _, err := range e.h.Watch(context.Background(), 0) {
		t.Fatalf("a watch made after Shutdown yields: %v", err)
	}
}

// A watcher is told where it missed records, in their place: a gap
// between two records it has, and one after the last record it has; it
// reads on after each.
func TestWatchReportsEachGapInPlace(t *testing.T) {
	e := newTestEnv(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seq := e.h.Watch(ctx, 2)
	pub := func(from, to int64) {
		for s := from; s <= to; s++ {
			e.h.taps.publish(session.Record{Seq: s, Typed: &event.Event{Type: event.TypeChatDelta, SessionID: "s"}})
		}
	}
	pub(1, 5) // 1, 2 queued; 3, 4, 5 missed
	next, stop := iter.Pull2(seq)
	defer stop()
	read := func() string {
		t.Helper()
		rec, err, ok := next()
		var de *WatchDropError
		switch {
		case !ok:
			return "end"
		case errors.As(err, &de):
			return fmt.Sprintf("missed %d", de.Missed)
		case err != nil:
			t.Fatal(err)
		}
		return fmt.Sprint(rec.Seq)
	}
	var got []string
	got = append(got, read())                         // 1: room for one more
	pub(6, 7)                                         // 6 queued after the gap; 7 missed
	got = append(got, read(), read(), read(), read()) // 2, missed 3, 6, missed 1
	pub(8, 8)
	got = append(got, read())
	cancel()
	got = append(got, read())
	want := "[1 2 missed 3 6 missed 1 8 end]"
	if fmt.Sprint(got) != want {
		t.Errorf("read %v, want %s", got, want)
	}
	if n := e.h.WatchDropped(); n != 4 {
		t.Errorf("WatchDropped = %d, want 4", n)
	}
}

// ctx stops the watching: a watch whose ctx is done is gone from the
// core, ranged or not, and its sequence ends without an error.
func TestWatchEndsWithItsContext(t *testing.T) {
	e := newTestEnv(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	never := e.h.Watch(ctx, 0)
	read := e.h.Watch(ctx, 0)
	if n := e.h.taps.n.Load(); n != 2 {
		t.Fatalf("%d watchers, want 2", n)
	}
	done := make(chan error, 1)
	go func() {
		for _, err := range read {
			if err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("the sequence ended with %v, want no error", err)
	}
	waitFor(t, "the watchers to go", func() bool { return e.h.taps.n.Load() == 0 })
	for _, err := range never {
		t.Fatalf("a watch whose ctx is done yields: %v", err)
	}
}
