package harness

import (
	"sync"

	"github.com/chirality/harness/session"
)

// broker fans the live events of one running turn out to its readers.
//
// Back-pressure policy: publishing never blocks. Each subscriber has a
// queue of size events plus a few slots kept for terminal events
// (session:complete, session:error, process:exit), so a reader that is
// merely slow still gets the end of the turn. A reader whose queue is full
// when an ordinary event arrives is dropped: its channel is closed with
// dropped set, and it catches up from the event log, where every event was
// appended before it was published (Harness.Follow does this). So a slow
// reader costs the turn and the other readers nothing, and loses nothing.
type broker struct {
	size int

	mu   sync.Mutex
	subs map[*subscription]struct{}
	done bool
}

// terminalSlack is the queue room kept for terminal events. A turn has at
// most three (a resume fallback's session:error, the ending, process:exit).
const terminalSlack = 4

type subscription struct {
	// ch carries pointers to records shared by every reader (read them,
	// never modify them): a queue of size events costs 8 bytes a slot,
	// not a record's 48, allocated and zeroed for each reader as it
	// subscribes (hundreds at once when many turns start).
	ch chan *session.Record
	// dropped is written before ch is closed, so a reader that saw the
	// close may read it without a lock.
	dropped bool
}

func newBroker(size int) *broker {
	return &broker{size: size, subs: map[*subscription]struct{}{}}
}

// subscribe registers a reader. On a finished broker the channel is
// already closed (and not dropped).
func (b *broker) subscribe() *subscription {
	s := &subscription{ch: make(chan *session.Record, b.size+terminalSlack)}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		close(s.ch)
	} else {
		b.subs[s] = struct{}{}
	}
	return s
}

// unsubscribe removes a reader that stops early. Safe to call more than
// once and after the broker finished.
func (b *broker) unsubscribe(s *subscription) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.subs[s]; ok {
		delete(b.subs, s)
		close(s.ch)
	}
}

// publish hands rec to every reader without blocking (see the policy).
// Every reader gets the same *rec.
func (b *broker) publish(rec *session.Record, terminal bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs {
		if n := len(s.ch); n == cap(s.ch) || (!terminal && n >= b.size) {
			s.dropped = true
			delete(b.subs, s)
			close(s.ch)
			continue
		}
		s.ch <- rec
	}
}

// finish closes every reader's channel after the last event; later
// subscribers get a closed channel.
func (b *broker) finish() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.done = true
	for s := range b.subs {
		close(s.ch)
	}
	b.subs = nil
}

func (b *broker) subscribers() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs)
}
