package gateway

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chirality/harness"
	"github.com/chirality/harness/session"
)

// bigSession makes a session whose event log holds n events of size
// bytes each, written straight to the log file before the Harness opens
// it (no turn runs): chat:delta, a type every stream sends.
func bigSession(t testing.TB, h *harness.Harness, root string, n, size int) string {
	t.Helper()
	s, err := h.NewSession(harness.SessionSpec{ProjectRoot: root, Mode: "direct"})
	if err != nil {
		t.Fatal(err)
	}
	l, err := session.OpenEventLog(session.EventLogPath(root, s.ID))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("x", size)
	for i := range n {
		if _, err := l.Append(fmt.Appendf(nil, `{"type":"chat:delta","sessionId":%q,"text":"%d %s"}`, s.ID, i, text)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return s.ID
}

// stuckClient opens GET …/events?after=0 with a tiny receive buffer and
// never reads.
func stuckClient(t testing.TB, addr, id string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		if err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.DialContext(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "GET %s/session/%s/events?after=0 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", APIPrefix, id)
	return conn
}

// smallSendBuffers serves h on a listener whose connections have a small
// send buffer (as a loaded machine's would): a stream to a client that
// does not read blocks after kilobytes, not after the megabytes
// loopback's autotuning allows. It returns the address.
func smallSendBuffers(t testing.TB, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = sndbufListener{ln.(*net.TCPListener)}
	srv.Start()
	t.Cleanup(srv.Close)
	return ln.Addr().String()
}

type sndbufListener struct{ *net.TCPListener }

func (l sndbufListener) Accept() (net.Conn, error) {
	c, err := l.AcceptTCP()
	if err == nil {
		_ = c.SetWriteBuffer(8 << 10)
	}
	return c, err
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// TestStuckStreamsMemoryBounded is issue 24's "100 non-reading clients
// took the gateway from 45 to 347 MB": 100 clients that never read,
// replaying a log of 1 MB events, each hold less than stuckStreamBound of
// heap (it was over 4 MB: the event copied per client, twice) — and all
// are dropped once WriteTimeout passes.
func TestStuckStreamsMemoryBounded(t *testing.T) {
	const stuckStreamBound = 256 << 10 // documented in BENCHMARKS.md
	s := newServer(t, func(c *Config) { c.MaxSessionStreams = -1; c.WriteTimeout = 10 * time.Second })
	id := bigSession(t, s.h, s.root, 8, 1<<20)
	addr := smallSendBuffers(t, s.gw)
	before := heapInUse()
	var conns []net.Conn
	for range 100 {
		conns = append(conns, stuckClient(t, addr, id))
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	waitFor(t, "100 streams open", func() bool { n, _ := s.gw.limits.Open(id); return n == 100 })
	waitFor(t, "the streams to block", func() bool { return stuckInWrite() >= 100 })
	after := heapInUse()
	per := (int64(after) - int64(before)) / 100
	t.Logf("heap in use: %d KB before, %d KB with 100 stuck streams: %d KB each", before>>10, after>>10, per>>10)
	if per > stuckStreamBound {
		t.Errorf("a stuck stream holds %d KB of heap, over the bound of %d KB", per>>10, stuckStreamBound>>10)
	}
	// Dropped at the write deadline: the slots come back.
	waitFor(t, "the stuck streams to be dropped", func() bool { n, _ := s.gw.limits.Open(id); return n == 0 })
}

// stuckInWrite counts goroutines blocked writing an event.
func stuckInWrite() int {
	buf := make([]byte, 8<<20)
	buf = buf[:runtime.Stack(buf, true)]
	return strings.Count(string(buf), "internal/sse.(*Stream).event")
}

// TestStreamCaps: beyond MaxSessionStreams (per session) and MaxStreams
// (in all) a stream is 503 with Retry-After, and a turn refused so starts
// nothing; closing a stream frees its slot.
func TestStreamCaps(t *testing.T) {
	// Streams of logs too big for their sockets: they stay open, blocked,
	// until the (long) write timeout.
	s := newServer(t, func(c *Config) { c.MaxStreams = 3; c.MaxSessionStreams = 2; c.WriteTimeout = time.Minute })
	a := bigSession(t, s.h, s.root, 4, 1<<20)
	b := bigSession(t, s.h, s.root, 4, 1<<20)
	addr := smallSendBuffers(t, s.gw)
	open := func(id string) net.Conn { return stuckClient(t, addr, id) }
	c1, c2 := open(a), open(a)
	defer c1.Close()
	defer c2.Close()
	waitFor(t, "two streams", func() bool { n, _ := s.gw.limits.Open(a); return n == 2 })
	check := func(what, method, path, body string) {
		t.Helper()
		resp := s.send(method, path, body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			t.Errorf("%s: %d, Retry-After %q; want 503 with Retry-After", what, resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	}
	check("third stream of a session", "GET", APIPrefix+"/session/"+a+"/events?events=all", "")
	check("turn of a full session", "POST", APIPrefix+"/turn", `{"sessionId":"`+a+`","message":"hi"}`)
	if s.h.IsRunning(a) {
		t.Error("a turn refused for the cap started")
	}
	c3 := open(b)
	defer c3.Close()
	waitFor(t, "three streams", func() bool { n, _ := s.gw.limits.Open(b); return n == 3 })
	check("fourth stream of the server", "GET", APIPrefix+"/session/"+b+"/events?events=all", "")
	c1.Close()
	waitFor(t, "a slot freed", func() bool { n, _ := s.gw.limits.Open(a); return n == 2 })
	resp := s.send("GET", APIPrefix+"/session/"+b+"/events?events=all", "")
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("a stream after a slot was freed: %d", resp.StatusCode)
	}
}
