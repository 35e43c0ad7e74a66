package harness

import (
	"context"
	"errors"
	"iter"

	"github.com/chirality/harness/session"
)

// Follow returns the events of session id with seq > after: the stored
// ones, then, if a turn is running, its live events until its
// process:exit; then the sequence ends. Each is yielded once, in seq
// order, with Record.More set when the next one is already at hand (a
// writer can flush once per burst). Cancelling ctx, or breaking out of the
// loop, stops the reading and never the turn (the one context rule of
// every event sequence here: a turn stops only by Interrupt or Kill, its
// own end, or Shutdown).
//
// A reader that falls more than Config.SubscriberBuffer events behind
// the turn is dropped from the live fan-out (the turn never waits for it)
// and transparently catches up from the event log, then rejoins.
//
// Follow checks the session (ErrInvalidID, ErrNotFound,
// ErrRootNotAllowed) before it returns; errors while reading the log are
// yielded and end the sequence.
func (h *Harness) Follow(ctx context.Context, id string, after int64) (iter.Seq2[session.Record, error], error) {
	if _, err := h.Session(id); err != nil {
		return nil, err
	}
	elog, err := h.store.EventLog(id)
	if err != nil {
		return nil, mapStoreErr(err)
	}
	h.mu.Lock()
	var b *broker
	if lt := h.live[id]; lt != nil && lt.broker != nil {
		b = lt.broker
	}
	h.mu.Unlock()
	return follow(ctx, elog, b, after), nil
}

// follow yields elog's records with seq > after, then, when b is not nil,
// b's live records until b finishes (Follow's loop; Turn.Events reads its
// own turn's broker through it).
func follow(ctx context.Context, elog *session.EventLog, b *broker, after int64) iter.Seq2[session.Record, error] {
	return func(yield func(session.Record, error) bool) {
		// Each record is held until the next one is known to be ready
		// (More set) or the reader would wait (More clear): a writer
		// flushes once per burst, not once per event.
		var held session.Record
		holding := false
		push := func(rec session.Record) bool {
			if holding {
				held.More = true
				if !yield(held, nil) {
					return false
				}
			}
			held, holding = rec, true
			return true
		}
		release := func() bool {
			if !holding {
				return true
			}
			holding = false
			held.More = false
			return yield(held, nil)
		}
		last := after
		for {
			var sub *subscription
			if b != nil {
				sub = b.subscribe() // before reading the log: nothing falls in between
			}
			for rec, err := range elog.Records(last) {
				if err == nil && ctx.Err() != nil {
					err = ctx.Err()
				}
				if err != nil {
					if sub != nil {
						b.unsubscribe(sub)
					}
					if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) && release() {
						yield(session.Record{}, err)
					}
					return
				}
				if !push(rec) {
					if sub != nil {
						b.unsubscribe(sub)
					}
					return
				}
				last = rec.Seq
			}
			if sub == nil {
				release()
				return
			}
			dropped := false
		live:
			for {
				var p *session.Record
				var ok bool
				select {
				case p, ok = <-sub.ch:
				default:
					// Nothing queued: hand over what is held, then wait.
					if !release() {
						b.unsubscribe(sub)
						return
					}
					select {
					case <-ctx.Done():
						b.unsubscribe(sub)
						return
					case p, ok = <-sub.ch:
					}
				}
				if !ok {
					dropped = sub.dropped
					break live
				}
				if ctx.Err() != nil { // queued records too: the reader is gone
					b.unsubscribe(sub)
					return
				}
				rec := *p // shared by every reader: this one's copy
				if rec.Seq != 0 && rec.Seq <= last {
					continue // already read from the log
				}
				if rec.Seq > last+1 {
					// Stored beside the turn's stream (appendEvent: a queue
					// event while the turn had no runner yet): read from
					// the log, as a dropped reader does, rec with them.
					b.unsubscribe(sub)
					dropped = true
					break live
				}
				if !push(rec) {
					b.unsubscribe(sub)
					return
				}
				if rec.Seq != 0 {
					last = rec.Seq
				}
			}
			if !dropped {
				release()
				return // the turn ended and every event was delivered
			}
			// Dropped for falling behind: catch up from the log, rejoin.
		}
	}
}

// subscribers returns how many live readers session id's running turn
// has (0 when none is running). For the root package's tests:
// export_test.go.
func (h *Harness) subscribers(id string) int {
	h.mu.Lock()
	lt := h.live[id]
	h.mu.Unlock()
	if lt == nil || lt.broker == nil {
		return 0
	}
	return lt.broker.subscribers()
}
