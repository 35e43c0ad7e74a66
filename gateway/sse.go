package gateway

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// stream answers with the session's events after `after` as SSE: stored
// ones, then live ones of a running turn until its process:exit. It ends
// when the events end, the client goes away, or the gateway closes. The
// turn never depends on it.
func (g *Gateway) stream(w http.ResponseWriter, r *http.Request, id string, after int64) {
	g.streams.Add(1)
	defer g.streams.Done()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(closingContext{g.closing}, cancel)
	defer stop()

	events, err := g.h.Follow(ctx, id, after)
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	sw := &sseWriter{w: w, rc: http.NewResponseController(w)}
	_ = sw.rc.SetWriteDeadline(time.Time{}) // a stream outlives any server write timeout
	if sw.flush() != nil {
		return
	}

	hbDone := make(chan struct{})
	var hb sync.WaitGroup
	hb.Add(1)
	go func() {
		defer hb.Done()
		t := time.NewTicker(g.cfg.Heartbeat)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				if sw.comment("heartbeat") != nil {
					cancel()
					return
				}
			case <-hbDone:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	defer func() {
		close(hbDone)
		hb.Wait()
	}()

	for rec, err := range events {
		if err != nil {
			g.log.Warn().Err(err).Str("sessionId", id).Msg("event stream: reading the log failed")
			return
		}
		if sw.event(rec.Seq, rec.Event, !rec.More) != nil {
			return // the client went away; the turn goes on
		}
	}
}

// closingContext is a context that is done when ch is closed.
type closingContext struct{ ch <-chan struct{} }

func (c closingContext) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c closingContext) Done() <-chan struct{}       { return c.ch }
func (c closingContext) Err() error {
	select {
	case <-c.ch:
		return context.Canceled
	default:
		return nil
	}
}
func (c closingContext) Value(any) any { return nil }

// sseWriter serialises event and heartbeat writes on one response.
type sseWriter struct {
	mu  sync.Mutex
	w   http.ResponseWriter
	rc  *http.ResponseController
	buf []byte
	err error
}

// event writes one event; it flushes only when flush is set (the last of
// a burst: under load one write carries many events instead of one
// flush, one syscall and one TCP segment per event).
func (s *sseWriter) event(seq int64, data []byte, flush bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	b := s.buf[:0]
	if seq > 0 {
		b = append(b, "id: "...)
		b = strconv.AppendInt(b, seq, 10)
		b = append(b, '\n')
	}
	b = append(b, "data: "...)
	b = append(b, data...)
	b = append(b, '\n', '\n')
	s.buf = b
	if _, s.err = s.w.Write(b); s.err == nil && flush {
		s.err = s.rc.Flush()
	}
	return s.err
}

func (s *sseWriter) comment(text string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	if _, s.err = s.w.Write([]byte(": " + text + "\n\n")); s.err == nil {
		s.err = s.rc.Flush()
	}
	return s.err
}

func (s *sseWriter) flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = s.rc.Flush()
	return s.err
}
