// Package sse is the one Server-Sent Events writer of the harness's HTTP
// doors (the gateway's session and turn streams, `harness agent serve`'s
// /events), and the cap on how many streams a server holds open.
//
// A handler's whole life with a stream:
//
//	release, err := limiter.Acquire(sessionID) // ErrTooManyStreams: answer 503 + Retry-After
//	if err != nil { … }
//	defer release()
//	s := sse.New(w, r, sse.Config{Done: shuttingDown})
//	defer s.Close()
//	events, err := h.Follow(s.Context(), id, after) // anything that can fail before the headers
//	if err != nil { writeError(w, r, err); return }
//	if s.Start() != nil { return }
//	for rec, err := range events {
//		if err != nil || s.Event(rec.Seq, rec.Event, !rec.More) != nil { return }
//	}
//
// What a Stream does, so that no door has to remember it:
//   - headers Content-Type: text/event-stream, Cache-Control: no-cache,
//     X-Accel-Buffering: no (proxies must not buffer), Connection: close
//     (a stream's connection is not reused: see the write deadline);
//     flushed at once by Start, and after each event whose flush flag is
//     set (a burst goes out in one write);
//   - "id: N" before an event's data when N > 0, so that a client that
//     comes back sends Last-Event-ID and loses nothing;
//   - a ": heartbeat" comment every Config.Heartbeat, so that proxies and
//     clients see a live stream;
//   - a write deadline per event: an event (or heartbeat) not taken by
//     the client within Config.WriteTimeout fails the stream — a client
//     that does not read is dropped, with what it holds, instead of
//     pinning a goroutine, a connection and memory forever;
//   - it stops at the first write error: every later write returns it,
//     and Context is cancelled;
//   - Context is done when the client goes away, a write fails, Close is
//     called, or Config.Done is closed (server shutdown): a handler that
//     ranges over events with it returns at once. A shutdown also
//     interrupts a write in progress (its deadline is moved to now).
package sse

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of Config.
const (
	DefaultHeartbeat    = 15 * time.Second
	DefaultWriteTimeout = 10 * time.Second
)

// ErrClosed is the cause of a stream's end by Close or Config.Done.
var ErrClosed = errors.New("event stream closed")

// Config configures New. The zero value is the default.
type Config struct {
	// Heartbeat is the interval of ": heartbeat" comments (0 =
	// DefaultHeartbeat).
	Heartbeat time.Duration
	// WriteTimeout is how long one event or heartbeat may take to be
	// written (0 = DefaultWriteTimeout). A client that does not read for
	// that long is dropped; it comes back with Last-Event-ID.
	WriteTimeout time.Duration
	// Done, when closed, ends the stream (the server is shutting down).
	Done <-chan struct{}
}

// Stream is one event stream on one response. Its methods are safe for
// concurrent use (the heartbeat writes beside the handler); Close must be
// called, once the handler is done with it.
type Stream struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	cfg Config

	ctx    context.Context
	cancel context.CancelCauseFunc
	stopCh chan struct{}
	wg     sync.WaitGroup
	unhook func() bool
	// stopping is set by Close and Config.Done before they look at
	// writing; a writer sets writing, then its deadline, then checks
	// stopping. So a stop either sees the write in progress and cuts it
	// (deadline now) or the writer sees the stop; a stream that is not
	// writing just ends, its response completed cleanly.
	stopping, writing atomic.Bool

	smu    sync.Mutex // orders stop and Close
	closed bool

	mu      sync.Mutex
	started bool
	err     error
	head    []byte
}

// New prepares a stream answering r on w; nothing is written until Start.
func New(w http.ResponseWriter, r *http.Request, cfg Config) *Stream {
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = DefaultWriteTimeout
	}
	s := &Stream{w: w, rc: http.NewResponseController(w), cfg: cfg, stopCh: make(chan struct{}), unhook: func() bool { return true }}
	s.ctx, s.cancel = context.WithCancelCause(r.Context())
	select {
	case <-cfg.Done: // already shutting down (a nil Done never is)
		s.stopping.Store(true)
		s.cancel(ErrClosed)
	default:
		if cfg.Done != nil {
			s.unhook = context.AfterFunc(doneContext{cfg.Done}, func() { s.stop(ErrClosed) })
		}
	}
	return s
}

// Context is done when the stream ends for any reason (see the package
// doc); context.Cause says why.
func (s *Stream) Context() context.Context { return s.ctx }

// Err returns the error that ended the stream, or nil.
func (s *Stream) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Start writes the headers with status 200, flushes them and starts the
// heartbeat. It returns the stream's error if it has already ended.
func (s *Stream) Start() error {
	s.mu.Lock()
	if s.started {
		s.mu.Unlock()
		return s.Err()
	}
	s.started = true
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Connection", "close")
	err := s.begin()
	if err == nil {
		s.w.WriteHeader(http.StatusOK)
		err = s.end(true)
	}
	s.mu.Unlock()
	if err != nil {
		return err
	}
	s.wg.Add(1)
	go s.heartbeat()
	return nil
}

func (s *Stream) heartbeat() {
	defer s.wg.Done()
	t := time.NewTicker(s.cfg.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			if s.Comment("heartbeat") != nil {
				return
			}
		case <-s.stopCh:
			return
		case <-s.ctx.Done():
			return
		}
	}
}

// Event writes one event: "id: <id>" (when id > 0), its data and a blank
// line; it flushes when flush is set (the last of a burst). data is one
// line, such as compact JSON; a line break in it starts a new data line,
// as the format requires. It returns the stream's error, which stays.
func (s *Stream) Event(id int64, data []byte, flush bool) error {
	return s.event(id, "", data, nil, flush)
}

// EventFrom is Event with the data read from r in pieces (a stored event
// of megabytes is copied from the file to the client, never held whole).
func (s *Stream) EventFrom(id int64, r io.Reader, flush bool) error {
	return s.event(id, "", nil, r, flush)
}

// ErrBadID is EventID's answer to an id with a line break in it.
var ErrBadID = errors.New("an SSE id cannot hold a line break")

// EventID is Event with an id that is not one number: `harness agent
// serve` makes several events from one stored record and names them
// "41.1", "41.2", "41" so that Last-Event-ID says which were delivered.
// "" writes no id line. An id with a line break is ErrBadID (nothing is
// written, the stream goes on).
func (s *Stream) EventID(id string, data []byte, flush bool) error {
	if strings.ContainsAny(id, "\r\n") {
		return ErrBadID
	}
	return s.event(0, id, data, nil, flush)
}

func (s *Stream) event(id int64, sid string, data []byte, r io.Reader, flush bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.begin(); err != nil {
		return err
	}
	b := s.head[:0]
	if id > 0 {
		b = append(b, "id: "...)
		b = strconv.AppendInt(b, id, 10)
		b = append(b, '\n')
	} else if sid != "" {
		b = append(append(append(b, "id: "...), sid...), '\n')
	}
	b = append(b, "data: "...)
	s.head = b
	if _, err := s.w.Write(b); err != nil {
		return s.fail(err)
	}
	var err error
	if r == nil {
		_, err = dataWriter{s.w}.Write(data)
	} else if wt, ok := r.(io.WriterTo); ok {
		_, err = wt.WriteTo(dataWriter{s.w}) // straight from r's buffer
	} else {
		buf := copyBufs.Get().(*[]byte)
		_, err = io.CopyBuffer(dataWriter{s.w}, onlyReader{r}, *buf)
		copyBufs.Put(buf)
	}
	if err != nil {
		return s.fail(err)
	}
	if _, err := io.WriteString(s.w, "\n\n"); err != nil {
		return s.fail(err)
	}
	return s.end(flush)
}

// dataWriter writes data, each line break as a new "data: " line.
type dataWriter struct{ w io.Writer }

func (d dataWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := lineBreak(p)
		if i < 0 {
			if _, err := d.w.Write(p); err != nil {
				return 0, err
			}
			break
		}
		if _, err := d.w.Write(p[:i]); err != nil {
			return 0, err
		}
		if _, err := io.WriteString(d.w, "\ndata: "); err != nil {
			return 0, err
		}
		p = p[i+1:]
	}
	return n, nil
}

// lineBreak returns the index of the first \n or \r in p, or -1
// (IndexByte twice: assembly, where IndexAny loops in Go).
func lineBreak(p []byte) int {
	i := bytes.IndexByte(p, '\n')
	if i < 0 {
		return bytes.IndexByte(p, '\r')
	}
	if j := bytes.IndexByte(p[:i], '\r'); j >= 0 {
		return j
	}
	return i
}

// copyBufs are EventFrom's copy buffers: a stream copies through one only
// while it writes an event.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// Comment writes ": text" and flushes (a heartbeat).
func (s *Stream) Comment(text string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.begin(); err != nil {
		return err
	}
	if _, err := io.WriteString(s.w, ": "+text+"\n\n"); err != nil {
		return s.fail(err)
	}
	return s.end(true)
}

// Flush sends what is buffered.
func (s *Stream) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.begin(); err != nil {
		return err
	}
	return s.end(true)
}

// begin gives the next write its deadline; s.mu is held.
func (s *Stream) begin() error {
	if s.err != nil {
		return s.err
	}
	if !s.started {
		return errors.New("sse: write before Start")
	}
	if err := s.ctx.Err(); err != nil {
		return s.fail(context.Cause(s.ctx))
	}
	s.writing.Store(true)
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout)) // ErrNotSupported (a recorder): no deadline
	if s.stopping.Load() {
		s.writing.Store(false)
		return s.fail(ErrClosed)
	}
	return nil
}

// end flushes if asked and ends the write begin started; s.mu is held.
// Every successful begin is followed by end or fail.
func (s *Stream) end(flush bool) error {
	defer s.writing.Store(false)
	if !flush {
		return nil
	}
	if err := s.rc.Flush(); err != nil {
		return s.fail(err)
	}
	return nil
}

// fail ends the stream with err; s.mu is held.
func (s *Stream) fail(err error) error {
	s.writing.Store(false)
	if s.err == nil {
		s.err = err
	}
	s.cancel(s.err)
	return s.err
}

// stop ends the stream from outside a write: Context is cancelled, and a
// write in progress (a client not reading) is cut by moving its deadline
// to now.
func (s *Stream) stop(cause error) {
	s.smu.Lock()
	defer s.smu.Unlock()
	if s.closed {
		return // the handler is done with the response
	}
	s.stopping.Store(true)
	s.cancel(cause)
	if s.writing.Load() {
		_ = s.rc.SetWriteDeadline(time.Now())
	}
}

// Close ends the stream (if it has not ended) and waits for its heartbeat.
// It writes nothing. Safe to call more than once.
func (s *Stream) Close() {
	s.unhook()
	s.smu.Lock()
	if !s.closed {
		s.closed = true
		close(s.stopCh)
	}
	s.smu.Unlock()
	s.cancel(ErrClosed)
	s.wg.Wait()
}

// onlyReader hides a ReaderFrom/WriterTo pair from io.CopyBuffer, so that
// it uses the pooled buffer.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

// doneContext is a context that is done when ch is closed.
type doneContext struct{ ch <-chan struct{} }

func (c doneContext) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c doneContext) Done() <-chan struct{}       { return c.ch }
func (c doneContext) Err() error {
	select {
	case <-c.ch:
		return context.Canceled
	default:
		return nil
	}
}
func (c doneContext) Value(any) any { return nil }
