package engine_test

import (
	"errors"
	"testing"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
)

func TestStreamOrderDeferAndEnd(t *testing.T) {
	s := engine.NewStream(4)
	var ran []string
	go func() {
		s.Emit(event.Event{Type: event.TypeToolStart})
		s.Defer(func() { ran = append(ran, "ask") })
		s.Emit(event.Event{Type: event.TypeToolResult})
		s.End(errors.New("boom"))
		if s.Emit(event.Event{Type: event.TypeChatDelta}) || s.Defer(func() {}) {
			t.Error("Emit or Defer accepted after End")
		}
		s.End(nil) // only the first End counts
	}()
	var got []event.Type
	for s.Next() {
		got = append(got, s.Event().Type)
		if s.Event().Type == event.TypeToolStart && len(ran) != 0 {
			t.Error("the deferred function ran before the event queued ahead of it was returned")
		}
	}
	if len(got) != 2 || got[0] != event.TypeToolStart || got[1] != event.TypeToolResult {
		t.Errorf("events = %v", got)
	}
	if len(ran) != 1 {
		t.Errorf("deferred ran %d times", len(ran))
	}
	if err := s.Err(); err == nil || err.Error() != "boom" {
		t.Errorf("Err = %v, want boom", err)
	}
}

func TestStreamDiscardRunsDeferred(t *testing.T) {
	s := engine.NewStream(4)
	ran := 0
	s.Emit(event.Event{Type: event.TypeChatDelta})
	s.Defer(func() { ran++ })
	if err := s.Err(); err != nil {
		t.Errorf("Err before End = %v", err)
	}
	s.End(nil)
	s.Discard()
	if ran != 1 {
		t.Errorf("Discard ran %d deferred functions, want 1", ran)
	}
	<-s.Done()
	if s.Next() {
		t.Error("Next after Discard returned true")
	}
}

// Buffered counts what Next can return without waiting, deferred
// functions included, and falls as Next takes them.
func TestStreamBuffered(t *testing.T) {
	s := engine.NewStream(4)
	if s.Buffered() != 0 {
		t.Fatalf("empty stream: Buffered = %d", s.Buffered())
	}
	s.Emit(event.Event{Type: event.TypeChatDelta})
	s.Defer(func() {})
	s.Emit(event.Event{Type: event.TypeChatDelta})
	if s.Buffered() != 3 {
		t.Fatalf("Buffered = %d, want 3", s.Buffered())
	}
	s.Next() // the first event
	if s.Buffered() != 2 {
		t.Fatalf("after one Next: Buffered = %d, want 2", s.Buffered())
	}
	s.Next() // runs the deferred function, returns the second event
	if s.Buffered() != 0 {
		t.Fatalf("after two: Buffered = %d, want 0", s.Buffered())
	}
	s.End(nil)
}
