package harness

import (
	"sync"
	"sync/atomic"

	"github.com/chirality/harness/session"
)

// DefaultWatchBuffer is a watcher's queue when Watch is given none.
const DefaultWatchBuffer = 1024

// Watch subscribes to every event the core stores, of every session: a
// turn's events as they are published to its readers, and the core's
// events outside a turn (a queued prompt's prompt:queued, a fork's, a
// cut turn's end). It is the one server-wide fan-out a notifier or any
// other observer of all sessions uses, whichever door started the turn.
//
// Each record carries its typed event (Record.Typed, SessionID set),
// already scrubbed of secrets as the log is. Delivery never blocks the
// core: a watcher whose queue (buffer events; 0 = DefaultWatchBuffer) is
// full misses the event, and Dropped counts what it missed. stop ends the
// subscription and closes the channel; Shutdown closes every channel
// once the turns have ended. Safe to call stop more than once.
func (h *Harness) Watch(buffer int) (events <-chan session.Record, stop func()) {
	if buffer <= 0 {
		buffer = DefaultWatchBuffer
	}
	w := &watcher{ch: make(chan session.Record, buffer)}
	h.taps.mu.Lock()
	if h.taps.closed {
		close(w.ch)
	} else {
		if h.taps.subs == nil {
			h.taps.subs = map[*watcher]struct{}{}
		}
		h.taps.subs[w] = struct{}{}
		h.taps.n.Add(1)
	}
	h.taps.mu.Unlock()
	return w.ch, func() { h.taps.remove(w) }
}

// WatchDropped is how many events watchers missed, their queues full.
func (h *Harness) WatchDropped() int64 { return h.taps.dropped.Load() }

// taps are the Harness's watchers (Watch).
type taps struct {
	n       atomic.Int32 // len(subs): publishing costs nothing without watchers
	dropped atomic.Int64

	mu     sync.Mutex
	subs   map[*watcher]struct{}
	closed bool
}

type watcher struct{ ch chan session.Record }

// publish hands rec to every watcher without blocking.
func (t *taps) publish(rec session.Record) {
	if t.n.Load() == 0 || rec.Typed == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for w := range t.subs {
		select {
		case w.ch <- rec:
		default:
			t.dropped.Add(1)
		}
	}
}

func (t *taps) remove(w *watcher) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.subs[w]; ok {
		delete(t.subs, w)
		t.n.Add(-1)
		close(w.ch)
	}
}

// close ends every watcher (Shutdown, after the last turn).
func (t *taps) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	for w := range t.subs {
		close(w.ch)
	}
	t.subs = nil
	t.n.Store(0)
}
