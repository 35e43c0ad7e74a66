package harness

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"
	"sync/atomic"

	"github.com/chirality/harness/session"
)

// DefaultWatchBuffer is a watcher's queue when Watch is given none.
const DefaultWatchBuffer = 1024

// ErrWatchDropped is what a watcher's sequence yields where it missed
// records, its queue full: the error is a *WatchDropError saying how
// many. The sequence goes on after it.
var ErrWatchDropped = errors.New("the watcher missed records: its queue was full")

// WatchDropError is yielded by a Watch sequence in the place of the
// records it missed (errors.Is(err, ErrWatchDropped)). What was missed is
// in the sessions' event logs (Follow, EventLog), which hold every record.
type WatchDropError struct {
	// Missed is how many records were missed there.
	Missed int64
}

func (e *WatchDropError) Error() string {
	return fmt.Sprintf("the watcher missed %d records: its queue was full", e.Missed)
}

// Is makes a *WatchDropError match ErrWatchDropped.
func (e *WatchDropError) Is(target error) bool { return target == ErrWatchDropped }

// Watch subscribes to every event the core stores, of every session: a
// turn's events as they are published to its readers, and the core's
// events outside a turn (a queued prompt's prompt:queued, a fork's, a
// cut turn's end). It is the one server-wide fan-out a notifier or any
// other observer of all sessions uses, whichever door started the turn.
//
// The subscription starts when Watch returns: every record stored after
// that is in the sequence, in the order the core published it. The
// sequence is for one loop (a second range yields nothing); ranging it
// later loses nothing.
//
// Each record carries its typed event (Record.Typed, SessionID set),
// already scrubbed of secrets as the log is. Delivery never blocks the
// core: a watcher whose queue (buffer records; 0 = DefaultWatchBuffer) is
// full misses records, and the sequence yields a *WatchDropError
// (ErrWatchDropped) in their place, then goes on; WatchDropped counts
// what every watcher missed.
//
// As every event stream of the core (package doc), ctx stops the
// watching: once it is done the sequence ends, without an error, and the
// subscription is gone whether or not the sequence was ranged; breaking
// out of the loop ends it too. Shutdown ends every watch once the turns
// have ended, after the records already queued.
//
//	ctx, cancel := context.WithCancel(ctx)
//	defer cancel()
//	for rec, err := range h.Watch(ctx, 0) {
//		if errors.Is(err, harness.ErrWatchDropped) { … read the logs again … }
//		… rec.Typed …
//	}
func (h *Harness) Watch(ctx context.Context, buffer int) iter.Seq2[session.Record, error] {
	if buffer <= 0 {
		buffer = DefaultWatchBuffer
	}
	w := &watcher{ring: make([]session.Record, buffer), wake: make(chan struct{}, 1)}
	h.taps.mu.Lock()
	if h.taps.closed {
		w.closed = true
	} else {
		if h.taps.subs == nil {
			h.taps.subs = map[*watcher]struct{}{}
		}
		h.taps.subs[w] = struct{}{}
		h.taps.n.Add(1)
	}
	h.taps.mu.Unlock()
	stop := context.AfterFunc(ctx, func() { h.taps.remove(w) })
	var ranged atomic.Bool
	return func(yield func(session.Record, error) bool) {
		if ranged.Swap(true) {
			return
		}
		defer func() {
			stop()
			h.taps.remove(w)
		}()
		for {
			rec, missed, ok := w.next(ctx)
			if !ok {
				return
			}
			if missed > 0 && !yield(session.Record{}, &WatchDropError{Missed: missed}) {
				return
			}
			if rec.Typed != nil && !yield(rec, nil) {
				return
			}
		}
	}
}

// WatchDropped is how many records watchers missed, their queues full.
func (h *Harness) WatchDropped() int64 { return h.taps.dropped.Load() }

// taps are the Harness's watchers (Watch).
type taps struct {
	n       atomic.Int32 // len(subs): publishing costs nothing without watchers
	dropped atomic.Int64

	mu     sync.Mutex
	subs   map[*watcher]struct{}
	closed bool
}

// watcher is one Watch's bounded queue: a ring of records, and how many
// were missed since the last one queued (a gap, yielded in its place).
type watcher struct {
	mu     sync.Mutex
	ring   []session.Record
	head   int // the oldest queued record
	n      int // how many are queued
	gaps   []gap
	missed int64 // missed after the last queued record
	closed bool
	wake   chan struct{} // a record, a gap or the end is at hand
}

// gap says that missed records were missed before the record queued at
// ring index at.
type gap struct {
	at     int
	missed int64
}

// put queues rec, or counts it missed when the ring is full; it reports
// whether rec was queued.
func (w *watcher) put(rec session.Record) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return true
	}
	if w.n == len(w.ring) {
		w.missed++
		return false
	}
	i := (w.head + w.n) % len(w.ring)
	if w.missed > 0 {
		w.gaps = append(w.gaps, gap{at: i, missed: w.missed})
		w.missed = 0
	}
	w.ring[i] = rec
	w.n++
	w.signal()
	return true
}

func (w *watcher) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// end closes the queue: what is queued is still read, then nothing.
func (w *watcher) end() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	w.signal()
}

// next waits for the next record (with the records missed before it) or
// for a gap at the end of the queue (rec then has no Typed); ok is false
// once the watch has ended (closed and read, or ctx done).
func (w *watcher) next(ctx context.Context) (rec session.Record, missed int64, ok bool) {
	for {
		if ctx.Err() != nil {
			return session.Record{}, 0, false
		}
		w.mu.Lock()
		if w.n > 0 {
			if len(w.gaps) > 0 && w.gaps[0].at == w.head {
				missed = w.gaps[0].missed
				w.gaps = w.gaps[1:]
			}
			rec = w.ring[w.head]
			w.ring[w.head] = session.Record{} // the reader owns it now
			w.head = (w.head + 1) % len(w.ring)
			w.n--
			w.mu.Unlock()
			return rec, missed, true
		}
		if w.missed > 0 { // missed after everything queued was read
			missed, w.missed = w.missed, 0
			w.mu.Unlock()
			return session.Record{}, missed, true
		}
		closed := w.closed
		w.mu.Unlock()
		if closed {
			return session.Record{}, 0, false
		}
		select {
		case <-w.wake:
		case <-ctx.Done():
		}
	}
}

// publish hands rec to every watcher without blocking.
func (t *taps) publish(rec session.Record) {
	if t.n.Load() == 0 || rec.Typed == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for w := range t.subs {
		if !w.put(rec) {
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
	}
	w.end()
}

// close ends every watcher (Shutdown, after the last turn).
func (t *taps) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	for w := range t.subs {
		w.end()
	}
	t.subs = nil
	t.n.Store(0)
}
