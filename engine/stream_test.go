package engine_test

import (
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
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

// Many producers, Emit, Queue and Defer mixed, small buffers: every item
// arrives once, in each producer's order, deferred functions after the
// events queued before them; Discard on another goroutine than Next's
// (Turn.Close) takes the rest without losing or repeating one.
func TestStreamManyProducers(t *testing.T) {
	for _, buffer := range []int{1, 2, 3, 7, 256} {
		for _, discard := range []bool{false, true} {
			const producers, per = 4, 3000
			s := engine.NewStream(buffer)
			var wg sync.WaitGroup
			var ranAfter [producers]atomic.Int64 // the last event of p seen when p's deferred fn ran
			var seen [producers]atomic.Int64     // events of p returned so far, +1
			for p := range producers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range per {
						ev := event.Event{Type: event.TypeChatDelta, SessionID: strconv.Itoa(p), Text: strconv.Itoa(i)}
						switch i % 7 {
						case 0:
							s.Emit(ev)
						case 3:
							want := int64(i)
							s.Queue(ev)
							s.Defer(func() {
								if seen[p].Load() < want+1 && !discard {
									t.Errorf("producer %d: deferred fn ran before event %d was returned", p, want)
								}
								ranAfter[p].Add(1)
							})
						default:
							s.Queue(ev)
						}
						if i%97 == 0 {
							s.Flush()
						}
					}
					s.Flush()
				}()
			}
			go func() { wg.Wait(); s.End(nil) }()
			counts := make(chan int, 2)
			var last [producers]int
			for p := range last {
				last[p] = -1
			}
			if discard {
				go func() { s.Discard(); counts <- 0 }()
			}
			n := 0
			for s.Next() {
				ev := s.Event()
				p, _ := strconv.Atoi(ev.SessionID)
				i, _ := strconv.Atoi(ev.Text)
				if i <= last[p] {
					t.Fatalf("buffer %d: producer %d: event %d after %d", buffer, p, i, last[p])
				}
				last[p] = i
				seen[p].Store(int64(i) + 1)
				n++
			}
			if discard {
				<-counts
			} else if n != producers*per {
				t.Fatalf("buffer %d: %d events, want %d", buffer, n, producers*per)
			}
			for p := range producers {
				if got, want := ranAfter[p].Load(), int64((per+3)/7); got != want {
					t.Fatalf("buffer %d, discard %v: producer %d: %d deferred fns ran, want %d", buffer, discard, p, got, want)
				}
			}
		}
	}
}
