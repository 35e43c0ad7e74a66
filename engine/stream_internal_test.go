package engine

import (
	"runtime"
	"testing"

	"github.com/chirality/harness/event"
)

// parked waits (without a deadline: a wait that never ends fails the test
// by its timeout) until the consumer is parked in Next.
func parked(s *Stream) {
	for !s.cParked.Load() {
		runtime.Gosched()
	}
}

// producerParked waits until a producer waits for room.
func producerParked(s *Stream) {
	for !s.pParked.Load() {
		runtime.Gosched()
	}
}

// A parked consumer is woken by Flush for what was queued before it,
// even one event (no batch reached), by Emit, and by End.
func TestStreamWakesAParkedConsumer(t *testing.T) {
	for _, c := range []struct {
		name string
		push func(*Stream)
	}{
		{"queue+flush", func(s *Stream) { s.Queue(event.Event{Type: event.TypeChatDelta}); s.Flush() }},
		{"emit", func(s *Stream) { s.Emit(event.Event{Type: event.TypeChatDelta}) }},
		{"end", func(s *Stream) { s.Queue(event.Event{Type: event.TypeChatDelta}); s.End(nil) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := NewStream(256)
			got := make(chan bool)
			go func() { got <- s.Next() }()
			parked(s)
			c.push(s)
			if !<-got {
				t.Fatal("Next returned false")
			}
			if s.Event().Type != event.TypeChatDelta {
				t.Fatalf("event = %q", s.Event().Type)
			}
			s.End(nil)
			if s.Next() {
				t.Fatal("Next after End returned true")
			}
		})
	}
}

// A parked consumer is woken by Defer to run the function; queued after
// it, an event waits for a Flush.
func TestStreamDeferWakesAParkedConsumer(t *testing.T) {
	s := NewStream(256)
	got := make(chan bool)
	go func() { got <- s.Next() }()
	parked(s)
	ran := make(chan struct{})
	s.Defer(func() { close(ran) })
	<-ran
	s.Queue(event.Event{Type: event.TypeChatDelta})
	s.Flush()
	if !<-got || s.Event().Type != event.TypeChatDelta {
		t.Fatal("the event queued after the deferred function was not returned")
	}
	s.End(nil)
}

// A quarter of the buffer queued wakes a parked consumer without a
// Flush.
func TestStreamQueueWakesOnABatch(t *testing.T) {
	s := NewStream(8) // a batch of 2
	got := make(chan int)
	go func() {
		n := 0
		for s.Next() {
			n++
		}
		got <- n
	}()
	parked(s)
	s.Queue(event.Event{})
	s.Queue(event.Event{})
	for s.Buffered() != 0 { // taken: the second one woke it
		runtime.Gosched()
	}
	s.End(nil)
	if n := <-got; n != 2 {
		t.Fatalf("%d events", n)
	}
}

// The buffer is bounded: a producer blocks once buffer items are not yet
// returned by Next, even without a Flush (the full ring wakes the
// consumer), and goes on once the consumer took half of them.
func TestStreamBackPressure(t *testing.T) {
	s := NewStream(4)
	for i := range 4 {
		s.Queue(event.Event{Text: string(rune('a' + i))})
	}
	if s.Buffered() != 4 {
		t.Fatalf("Buffered = %d", s.Buffered())
	}
	queued := make(chan bool)
	go func() { queued <- s.Queue(event.Event{Text: "e"}) }()
	producerParked(s)
	if s.Buffered() != 4 {
		t.Fatalf("Buffered = %d with a producer waiting", s.Buffered())
	}
	var got string
	for range 2 {
		if !s.Next() {
			t.Fatal("Next false")
		}
		got += s.Event().Text
	}
	if !<-queued {
		t.Fatal("the waiting Queue reported false")
	}
	ended := make(chan struct{})
	go func() { s.End(nil); close(ended) }()
	for s.Next() {
		got += s.Event().Text
	}
	<-ended
	if got != "abcde" {
		t.Fatalf("events %q, want abcde", got)
	}
}

// End waits for a producer blocked on a full buffer: its event is
// delivered, before Next returns false.
func TestStreamEndAfterABlockedProducer(t *testing.T) {
	s := NewStream(1)
	s.Emit(event.Event{Text: "a"})
	emitted := make(chan bool)
	go func() { emitted <- s.Emit(event.Event{Text: "b"}) }()
	producerParked(s)
	ended := make(chan struct{})
	go func() { s.End(nil); close(ended) }()
	var got string
	for s.Next() {
		got += s.Event().Text
	}
	<-ended
	if !<-emitted || got != "ab" {
		t.Fatalf("events %q", got)
	}
}

// A deferred function may wait for what only a producer blocked on a
// full buffer can bring: the producer is woken before it runs.
func TestStreamDeferredWaitsForAProducer(t *testing.T) {
	s := NewStream(2)
	unblock := make(chan struct{})
	s.Defer(func() { <-unblock })
	s.Queue(event.Event{Text: "a"})
	go func() {
		s.Queue(event.Event{Text: "b"}) // blocks: full
		close(unblock)
		s.End(nil)
	}()
	producerParked(s)
	var got string
	for s.Next() {
		got += s.Event().Text
	}
	if got != "ab" {
		t.Fatalf("events %q", got)
	}
}
