package engine

import (
	"sync"

	"github.com/chirality/harness/event"
)

// Stream is the event half of a Turn for an engine whose events are
// produced on goroutines of its own (Codex, the ACP agents, the native
// loop): producers Emit events and Defer functions — an approval's
// question — that Next runs only once every event queued before them
// was returned, so that approval:requested never overtakes the
// tool:start it is about. End records how the turn ended and closes the
// stream.
//
// Next, Event and Err are for the one consumer (a Turn embeds the Stream
// to get them). Emit, Defer and End are safe from any goroutine; Emit
// blocks while the buffer is full (back-pressure on the agent's reader).
// Discard is for Turn.Close.
type Stream struct {
	out  chan streamItem
	done chan struct{}
	cur  event.Event
	err  error

	mu    sync.Mutex // held while sending, so End never closes out under a sender
	ended bool
}

type streamItem struct {
	ev    event.Event
	after func()
}

// NewStream returns a Stream that buffers up to buffer items.
func NewStream(buffer int) *Stream {
	return &Stream{out: make(chan streamItem, buffer), done: make(chan struct{})}
}

// Emit queues ev; it reports false, dropping ev, after End.
func (s *Stream) Emit(ev event.Event) bool { return s.push(streamItem{ev: ev}) }

// Defer queues fn for Next to run once every earlier event was returned;
// it reports false, not queueing fn, after End. Discard runs what is
// left.
func (s *Stream) Defer(fn func()) bool { return s.push(streamItem{after: fn}) }

func (s *Stream) push(it streamItem) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return false
	}
	s.out <- it
	return true
}

// End sets what Err returns (nil: the turn completed) and closes the
// stream: Done first, then the queue, so Err is final once Next returned
// false. Only the first call counts.
func (s *Stream) End(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	s.ended = true
	s.err = err
	close(s.done)
	close(s.out)
}

// Done is closed by End.
func (s *Stream) Done() <-chan struct{} { return s.done }

// Next advances to the next event, running deferred functions on the way;
// it returns false once the stream ended and everything queued was read.
func (s *Stream) Next() bool {
	for it := range s.out {
		if it.after != nil {
			it.after()
			continue
		}
		s.cur = it.ev
		return true
	}
	return false
}

// Buffered reports how many items are queued, ready for Next without
// waiting: a consumer can flush its output when it reaches 0.
func (s *Stream) Buffered() int { return len(s.out) }

// Event returns the event Next advanced to.
func (s *Stream) Event() event.Event { return s.cur }

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
	for it := range s.out {
		if it.after != nil {
			it.after()
		}
	}
}
