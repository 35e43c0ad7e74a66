package sse

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFormat: headers, id lines, data, a line break split into data lines,
// heartbeats, and the stream flushed so a client sees each event at once.
func TestFormat(t *testing.T) {
	next := make(chan string)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := New(w, r, Config{Heartbeat: 50 * time.Millisecond})
		defer s.Close()
		if err := s.Start(); err != nil {
			t.Error(err)
			return
		}
		for data := range next {
			if err := s.Event(7, []byte(data), true); err != nil {
				t.Error(err)
				return
			}
		}
		_ = s.EventFrom(0, strings.NewReader("from a reader"), true)
	}))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	for k, v := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"} {
		if got := resp.Header.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	br := bufio.NewReader(resp.Body)
	readBlock := func() string {
		var b strings.Builder
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("read: %v (so far %q)", err, b.String())
			}
			if line == "\n" {
				return b.String()
			}
			b.WriteString(line)
		}
	}
	// Heartbeats come while nothing else does.
	if got := readBlock(); got != ": heartbeat\n" {
		t.Fatalf("first block %q, want a heartbeat", got)
	}
	next <- `{"a":1}`
	for got := readBlock(); got != "id: 7\ndata: {\"a\":1}\n"; got = readBlock() {
		if got != ": heartbeat\n" {
			t.Fatalf("block %q", got)
		}
	}
	next <- "two\nlines\r\nand\rmore"
	for got := readBlock(); got != "id: 7\ndata: two\ndata: lines\ndata: \ndata: and\ndata: more\n"; got = readBlock() {
		if got != ": heartbeat\n" {
			t.Fatalf("block %q", got)
		}
	}
	close(next)
	for got := readBlock(); got != "data: from a reader\n"; got = readBlock() {
		if got != ": heartbeat\n" {
			t.Fatalf("block %q", got)
		}
	}
}

// stuckConn opens a GET with a tiny receive buffer and never reads.
func stuckConn(t *testing.T, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprint(conn, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	return conn
}

// flood writes 64 KB events until the stream fails, and reports how it
// ended.
func flood(done chan<- error, cfg Config) http.Handler {
	event := []byte(strings.Repeat("x", 64<<10))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := New(w, r, cfg)
		defer s.Close()
		if err := s.Start(); err != nil {
			done <- err
			return
		}
		for i := int64(1); ; i++ {
			if err := s.Event(i, event, true); err != nil {
				if s.Context().Err() == nil {
					done <- errors.New("the stream failed but its context is not done")
					return
				}
				done <- err
				return
			}
		}
	})
}

// TestReaderThatDoesNotReadIsDropped: the write deadline cuts a client
// that stops reading; the handler returns instead of blocking forever.
func TestReaderThatDoesNotReadIsDropped(t *testing.T) {
	done := make(chan error, 1)
	srv := httptest.NewServer(flood(done, Config{WriteTimeout: 300 * time.Millisecond}))
	defer srv.Close()
	conn := stuckConn(t, srv.Listener.Addr().String())
	defer conn.Close()
	select {
	case err := <-done:
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Errorf("the stream ended with %v, want a write timeout", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a client that does not read was never dropped")
	}
}

// TestDoneCutsABlockedWrite: closing Config.Done (shutdown) ends a stream
// blocked writing to a client that does not read, long before its write
// timeout.
func TestDoneCutsABlockedWrite(t *testing.T) {
	done := make(chan error, 1)
	shutdown := make(chan struct{})
	srv := httptest.NewServer(flood(done, Config{WriteTimeout: time.Hour, Done: shutdown}))
	defer srv.Close()
	conn := stuckConn(t, srv.Listener.Addr().String())
	defer conn.Close()
	select {
	case err := <-done:
		t.Fatalf("the stream ended before the shutdown: %v", err)
	case <-time.After(500 * time.Millisecond): // long enough to fill the socket and block
	}
	close(shutdown)
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("shutdown did not cut a blocked write")
	}
}

// TestContextEndsWithClient: the client going away, Close and Done each
// end Context, with a cause.
func TestContextEndsWithClient(t *testing.T) {
	causes := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := New(w, r, Config{})
		defer s.Close()
		if s.Start() != nil {
			return
		}
		<-s.Context().Done()
		causes <- context.Cause(s.Context())
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	select {
	case err := <-causes:
		if err == nil {
			t.Error("no cause")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the client went away and the stream's context lives on")
	}

	// Done, before Start: Start fails and writes nothing.
	shutdown := make(chan struct{})
	close(shutdown)
	w := httptest.NewRecorder()
	s := New(w, httptest.NewRequest("GET", "/", nil), Config{Done: shutdown})
	if err := s.Start(); !errors.Is(err, ErrClosed) {
		t.Errorf("Start after Done = %v, want ErrClosed", err)
	}
	s.Close()
	s.Close() // twice is fine
	if s.Event(1, []byte("x"), true) == nil {
		t.Error("Event after Close succeeded")
	}
}

// TestWriteBeforeStart is refused.
func TestWriteBeforeStart(t *testing.T) {
	s := New(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil), Config{})
	defer s.Close()
	if s.Event(1, []byte("x"), true) == nil {
		t.Error("Event before Start succeeded")
	}
}

func TestLimiter(t *testing.T) {
	l := NewLimiter(3, 2)
	r1, err := l.Acquire("a")
	if err != nil {
		t.Fatal(err)
	}
	r2, _ := l.Acquire("a")
	if _, err := l.Acquire("a"); !errors.Is(err, ErrTooManyStreams) {
		t.Errorf("third of a key: %v", err)
	}
	if _, err := l.Acquire("b"); err != nil {
		t.Errorf("first of another key: %v", err)
	}
	if _, err := l.Acquire("c"); !errors.Is(err, ErrTooManyStreams) {
		t.Errorf("fourth in all: %v", err)
	}
	r1()
	r1() // twice frees one slot only
	if total, a := l.Open("a"); total != 2 || a != 1 {
		t.Errorf("Open = %d, %d; want 2, 1", total, a)
	}
	if _, err := l.Acquire("c"); err != nil {
		t.Errorf("after a release: %v", err)
	}
	r2()
	unlimited := NewLimiter(-1, -1)
	for range 1000 {
		if _, err := unlimited.Acquire("k"); err != nil {
			t.Fatal(err)
		}
	}
	def := NewLimiter(0, 0)
	if def.max != DefaultMaxStreams || def.perKey != DefaultMaxStreamsPerKey {
		t.Errorf("defaults %d, %d", def.max, def.perKey)
	}
}

// TestEventID: an id that is not one number is written as it is; one
// with a line break is refused and writes nothing.
func TestEventID(t *testing.T) {
	rec := httptest.NewRecorder()
	s := New(rec, httptest.NewRequest("GET", "/", nil), Config{Heartbeat: time.Hour})
	defer s.Close()
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	if err := s.EventID("41.1", []byte(`{"a":1}`), false); err != nil {
		t.Fatal(err)
	}
	if err := s.EventID("41\ndata: {}", []byte(`{"b":2}`), true); !errors.Is(err, ErrBadID) {
		t.Fatalf("an id with a line break: %v", err)
	}
	if err := s.EventID("", []byte(`{"c":3}`), true); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if got, want := rec.Body.String(), "id: 41.1\ndata: {\"a\":1}\n\ndata: {\"c\":3}\n\n"; got != want {
		t.Fatalf("wrote %q, want %q", got, want)
	}
}

// TestDoneEndsAReadingStreamCleanly: a shutdown ends a stream whose client
// reads with a complete response (the client sees the end, not a cut
// connection); only a write in progress is cut.
func TestDoneEndsAReadingStreamCleanly(t *testing.T) {
	shutdown := make(chan struct{})
	started := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := New(w, r, Config{Done: shutdown})
		defer s.Close()
		if s.Start() != nil || s.Event(1, []byte(`{"a":1}`), true) != nil {
			return
		}
		close(started)
		<-s.Context().Done() // waiting for events that will not come
	}))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	<-started
	close(shutdown)
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Errorf("the stream was cut: %v (read %q)", err, b)
	}
	if string(b) != "id: 1\ndata: {\"a\":1}\n\n" {
		t.Errorf("read %q", b)
	}
}
