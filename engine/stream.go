package engine

import (
	"sync"
	"sync/atomic"

	"github.com/chirality/harness/event"
)

// Stream is the event half of a Turn for an engine whose events are
// produced on goroutines of its own (Codex, the ACP agents, the native
// loop, the Claude Code driver): producers Emit events and Defer
// functions — an approval's question — that Next runs only once every
// event queued before them was returned, so that approval:requested never
// overtakes the tool:start it is about. End records how the turn ended
// and closes the stream.
//
// Next, Event and Err are for the one consumer (a Turn embeds the Stream
// to get them). Emit, Queue, Flush, Defer and End are safe from any
// goroutine; Emit and Queue block while the buffer is full (back-pressure
// on the agent's reader). Discard is for Turn.Close.
//
// A producer that knows when it is about to wait for its input (a reader
// that is about to read its pipe again) can Queue events and Flush before
// it waits: the consumer is then woken once per batch instead of once per
// event. Emit wakes a waiting consumer at once.
//
// The buffer is a ring the producers fill and the consumer empties: Next
// takes every item queued since it last looked with one load, and the two
// sides wake each other only when the other is parked, the consumer when
// a batch is ready (Flush, Emit, a full ring, End), a producer blocked on
// a full ring when half of it is free again.
type Stream struct {
	ring      []streamItem
	size      uint64        // len(ring)
	batchWake uint64        // Queue wakes a parked consumer once this many items wait
	wake      chan struct{} // the consumer parks on it
	room      chan struct{} // a producer waiting for room parks on it
	done      chan struct{}
	err       error
	cParked   atomic.Bool // the consumer waits on wake (written when it parks)
	pParked   atomic.Bool // a producer waits on room (written when it waits)
	_         [64]byte

	// The producers' side, one cache line: pushMu serialises them (and
	// is held while one waits for room, so End never overtakes an event
	// being queued).
	pushMu sync.Mutex
	tail   atomic.Uint64 // items ever queued; ring[tail%size] is the next free slot
	ended  atomic.Bool
	pHead  uint64 // head as the producers last loaded it (≤ head)
	_      [64]byte

	// The consumer's side, one cache line (consMu: a Discard on another
	// goroutine than Next's).
	consMu sync.Mutex
	head   atomic.Uint64 // items taken; what the producers may overwrite
	next   uint64        // the next item to take (== head outside take)
	seen   uint64        // tail as the consumer last loaded it
	_      [64]byte
	item   streamItem // what Next advanced to
}

type streamItem struct {
	ev    event.Event
	after func()
}

// NewStream returns a Stream that buffers up to buffer items (at least 1).
func NewStream(buffer int) *Stream {
	if buffer < 1 {
		buffer = 1
	}
	return &Stream{
		ring: make([]streamItem, buffer), size: uint64(buffer),
		wake: make(chan struct{}, 1), room: make(chan struct{}, 1), done: make(chan struct{}),
		batchWake: max(1, uint64(buffer)/4),
	}
}

// Emit queues ev and wakes the consumer if it waits; it reports false,
// dropping ev, after End.
func (s *Stream) Emit(ev event.Event) bool { return s.push(&ev, nil, true) }

// Queue queues ev like Emit but leaves a waiting consumer parked until a
// quarter of the buffer waits, the buffer is full, or Flush, Emit, Defer
// or End is called: a producer that Queues must Flush before it waits for
// anything (its input, a lock, another goroutine). It reports false,
// dropping ev, after End.
func (s *Stream) Queue(ev event.Event) bool { return s.push(&ev, nil, false) }

// Flush wakes the consumer if it waits for what was queued.
func (s *Stream) Flush() {
	if s.cParked.Load() && s.tail.Load() != s.head.Load() {
		s.wakeConsumer()
	}
}

// Defer queues fn for Next to run once every earlier event was returned;
// it reports false, not queueing fn, after End. Discard runs what is
// left. A waiting consumer is woken.
func (s *Stream) Defer(fn func()) bool { return s.push(nil, fn, true) }

// push queues *ev (copied straight into its slot) or after.
func (s *Stream) push(ev *event.Event, after func(), now bool) bool {
	s.pushMu.Lock()
	defer s.pushMu.Unlock()
	if s.ended.Load() {
		return false
	}
	t := s.tail.Load()
	for t-s.pHead >= s.size {
		if s.pHead = s.head.Load(); t-s.pHead < s.size {
			break
		}
		// Full: the consumer must run (it may be parked on a batch not
		// yet flushed); wait for it to free half of the ring.
		s.wakeConsumer()
		s.pParked.Store(true)
		if s.pHead = s.head.Load(); t-s.pHead < s.size {
			s.pParked.Store(false)
			break
		}
		<-s.room
	}
	if slot := &s.ring[t%s.size]; ev != nil {
		slot.ev = *ev
	} else {
		slot.after = after
	}
	s.tail.Store(t + 1)
	if s.cParked.Load() && (now || t+1-s.head.Load() >= s.batchWake) {
		s.wakeConsumer()
	}
	return true
}

// wakeConsumer unparks the consumer if it is parked. A token sent to a
// consumer that has meanwhile found the item on its own stays in wake and
// makes its next park return at once: a spurious wake-up, never a lost
// one.
func (s *Stream) wakeConsumer() {
	if s.cParked.CompareAndSwap(true, false) {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// wakeProducer unparks a producer waiting for room.
func (s *Stream) wakeProducer() {
	if s.pParked.CompareAndSwap(true, false) {
		select {
		case s.room <- struct{}{}:
		default:
		}
	}
}

// End sets what Err returns (nil: the turn completed) and closes the
// stream: Done first, then the queue, so Err is final once Next returned
// false. Only the first call counts. It waits for a producer blocked on a
// full buffer to queue its item.
func (s *Stream) End(err error) {
	s.pushMu.Lock()
	defer s.pushMu.Unlock()
	if s.ended.Load() {
		return
	}
	s.err = err
	close(s.done)
	s.ended.Store(true)
	s.wakeConsumer()
}

// Done is closed by End.
func (s *Stream) Done() <-chan struct{} { return s.done }

// take moves the next item into it, parking until there is one; false
// once the stream ended and everything queued was taken. Its slot is
// given back to the producers at once. consMu makes it safe for a
// Discard (Turn.Close) on another goroutine than Next's.
func (s *Stream) take(it *streamItem) bool {
	s.consMu.Lock()
	defer s.consMu.Unlock()
	for s.next == s.seen {
		ended := s.ended.Load() // before tail: every item queued before End is then seen
		if s.seen = s.tail.Load(); s.next != s.seen {
			break
		}
		if ended {
			return false
		}
		s.cParked.Store(true)
		if s.seen = s.tail.Load(); s.next != s.seen || s.ended.Load() {
			s.cParked.Store(false) // (a token a producer sent meanwhile stays: a spurious wake-up later)
			continue
		}
		<-s.wake
	}
	slot := &s.ring[s.next%s.size]
	*it = *slot
	*slot = streamItem{} // nothing kept alive from a returned event
	s.next++
	s.head.Store(s.next)
	// A producer waiting for room is woken once half the ring is free,
	// or before a deferred function runs (it may wait for something only
	// a producer brings).
	if s.pParked.Load() && (s.seen-s.next <= s.size/2 || it.after != nil) {
		s.wakeProducer()
	}
	return true
}

// Next advances to the next event, running deferred functions on the way;
// it returns false once the stream ended and everything queued was read.
func (s *Stream) Next() bool {
	for s.take(&s.item) {
		if fn := s.item.after; fn != nil {
			s.item.after = nil
			fn()
			continue
		}
		return true
	}
	return false
}

// Buffered reports how many items are queued, ready for Next without
// waiting (queued ones included, flushed or not): a consumer can flush
// its output when it reaches 0.
func (s *Stream) Buffered() int { return int(s.tail.Load() - s.head.Load()) }

// Event returns the event Next advanced to.
func (s *Stream) Event() event.Event { return s.item.ev }

// Err returns, once the stream ended, the error End was given; nil
// before.
func (s *Stream) Err() error {
	select {
	case <-s.done:
		return s.err
	default:
		return nil
	}
}

// Discard reads what is left of the stream, running deferred functions
// (the turn is being killed: an approval's question then ends at once),
// and returns once End was called.
func (s *Stream) Discard() {
	var it streamItem
	for s.take(&it) {
		if it.after != nil {
			it.after()
		}
	}
}
