package gateway

import (
	"io"
	"net/http"
	"strconv"

	"github.com/chirality/harness"
	"github.com/chirality/harness/internal/eventsel"
	"github.com/chirality/harness/internal/sse"
	"github.com/chirality/harness/session"
)

// acquireStream takes a stream slot for session id: it answers 503 (with
// Retry-After beyond the caps) and returns ok false when the gateway is
// closing or a cap is reached. done must be called when the stream ends.
func (g *Gateway) acquireStream(w http.ResponseWriter, r *http.Request, id string) (done func(), ok bool) {
	g.streams.Add(1)
	select {
	case <-g.closing:
		g.streams.Done()
		g.writeError(w, r, harness.ErrClosed)
		return nil, false
	default:
	}
	key := id
	if !session.ValidID(id) {
		key = "" // refused right after; a 100 KB id is not kept as a key meanwhile
	}
	release, err := g.limits.Acquire(key)
	if err != nil {
		g.streams.Done()
		w.Header().Set("Retry-After", strconv.Itoa(sse.RetryAfter))
		g.writeError(w, r, err)
		return nil, false
	}
	return func() { release(); g.streams.Done() }, true
}

// stream answers with the session's events after `after` as SSE: stored
// ones, then live ones of a running turn until its process:exit. It ends
// when the events end, the client goes away or stops reading (a write not
// taken within Config.WriteTimeout), or the gateway closes. The turn never
// depends on it.
//
// Memory per stream is bounded whatever the log holds: the stored events
// are copied from the event log to the client a buffer at a time
// (session.EventLog.Lines), never a whole event per client; the live ones
// are the turn's own records, shared by every reader, and a reader that
// falls behind is dropped from the fan-out and catches up from the log.
//
// Only the event types of sel are sent (eventsel: 004's UIEvent types
// unless the request opted in to more); a record left out keeps its seq,
// so the ids sent have gaps and Last-Event-ID resumes across them.
//
// The caller holds a slot of g.limits (acquireStream) and g.streams.
func (g *Gateway) stream(w http.ResponseWriter, r *http.Request, id string, after int64, sel eventsel.Set) {
	elog, err := g.h.EventLog(id)
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	s := sse.New(w, r, sse.Config{Heartbeat: g.cfg.Heartbeat, WriteTimeout: g.cfg.WriteTimeout, Done: g.closing})
	defer s.Close()
	if s.Start() != nil {
		return
	}

	// The stored events, streamed from the file; then the rest (what was
	// appended meanwhile, and a running turn's live events) from Follow.
	last := after
	err = elog.Lines(after, func(seq int64, line io.Reader) error {
		send, line, err := sel.Peek(line)
		if err != nil {
			return err
		}
		if send {
			if err := s.EventFrom(seq, line, false); err != nil {
				return err
			}
		}
		last = seq
		return nil
	})
	if err != nil {
		if s.Err() == nil {
			g.log.Warn().Err(err).Str("sessionId", id).Msg("event stream: reading the log failed")
		}
		return
	}
	if s.Flush() != nil {
		return
	}
	events, err := g.h.Follow(s.Context(), id, last)
	if err != nil {
		return // deleted meanwhile: the stream just ends
	}
	for rec, err := range events {
		if err != nil {
			g.log.Warn().Err(err).Str("sessionId", id).Msg("event stream: reading the log failed")
			return
		}
		if sel.Send(s, rec.Seq, rec.Event, rec.More) != nil {
			return // the client went away or stopped reading; the turn goes on
		}
	}
}
