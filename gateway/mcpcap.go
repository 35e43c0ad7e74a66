package gateway

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Defaults of the MCP endpoint's session cap (Config.MaxMCPSessions,
// Config.MCPPressureIdle).
const (
	// DefaultMaxMCPSessions bounds the open MCP sessions of
	// /api/harness/mcp: an idle session costs ~14 KB (10,000 took the
	// server from 30 to 170 MB), and a client can open them for free.
	DefaultMaxMCPSessions = 128
	// DefaultMCPPressureIdle: at the cap, a session with no request for
	// this long is closed to make room for a new one (otherwise an idle
	// session lives for mcpserver.SessionIdle).
	DefaultMCPPressureIdle = time.Minute
	// mcpRetryAfter is the Retry-After of a refused session, in seconds.
	mcpRetryAfter = 10
)

const mcpSessionHeader = "Mcp-Session-Id"

// mcpCap bounds the MCP sessions of one streamable HTTP handler. A request
// without a session id may make a session (initialize): at the cap, the
// session idle longest (no request running, none for pressureIdle) is
// closed to make room, and when there is none the request is refused with
// 503 and Retry-After. Sessions the client ends (DELETE) or the handler
// times out leave on their own (the server's live sessions are counted).
type mcpCap struct {
	next         http.Handler
	srv          *mcp.Server
	max          int
	pressureIdle time.Duration
	now          func() time.Time

	mu       sync.Mutex
	creating int                  // requests that may be making a session now
	seen     map[string]time.Time // last request's start or end, by session id
	active   map[string]int       // requests running, by session id
}

func newMCPCap(next http.Handler, srv *mcp.Server, max int, pressureIdle time.Duration) http.Handler {
	if max < 0 {
		return next
	}
	if max == 0 {
		max = DefaultMaxMCPSessions
	}
	if pressureIdle <= 0 {
		pressureIdle = DefaultMCPPressureIdle
	}
	return &mcpCap{next: next, srv: srv, max: max, pressureIdle: pressureIdle, now: time.Now,
		seen: map[string]time.Time{}, active: map[string]int{}}
}

func (c *mcpCap) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get(mcpSessionHeader)
	if id == "" && r.Method == http.MethodPost {
		if !c.admit() {
			w.Header().Set("Retry-After", strconv.Itoa(mcpRetryAfter))
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "too many MCP sessions are open; try again later"})
			return
		}
		defer c.admitted()
		c.next.ServeHTTP(&sessionSeer{ResponseWriter: w, c: c}, r)
		return
	}
	if id != "" {
		c.begin(id)
		defer c.end(id)
	}
	c.next.ServeHTTP(w, r)
}

// admit reserves room for a new session, closing the idlest one at the
// cap; false when nothing can be closed.
func (c *mcpCap) admit() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	live := map[string]*mcp.ServerSession{}
	for ss := range c.srv.Sessions() {
		live[ss.ID()] = ss
	}
	for id := range c.seen { // gone: ended by the client or timed out
		if live[id] == nil && c.active[id] == 0 {
			delete(c.seen, id)
		}
	}
	if len(live)+c.creating < c.max {
		c.creating++
		return true
	}
	var victim string
	now := c.now()
	for id := range live {
		last, ok := c.seen[id]
		if c.active[id] > 0 || !ok || now.Sub(last) < c.pressureIdle {
			continue
		}
		if victim == "" || last.Before(c.seen[victim]) {
			victim = id
		}
	}
	if victim == "" {
		return false
	}
	_ = live[victim].Close() // it leaves the handler's sessions
	delete(c.seen, victim)
	c.creating++
	return true
}

func (c *mcpCap) admitted() {
	c.mu.Lock()
	c.creating--
	c.mu.Unlock()
}

func (c *mcpCap) begin(id string) {
	c.mu.Lock()
	c.active[id]++
	c.seen[id] = c.now()
	c.mu.Unlock()
}

func (c *mcpCap) end(id string) {
	c.mu.Lock()
	if c.active[id]--; c.active[id] <= 0 {
		delete(c.active, id)
	}
	c.seen[id] = c.now()
	c.mu.Unlock()
}

// sessionSeer notes the session a response makes (its Mcp-Session-Id).
type sessionSeer struct {
	http.ResponseWriter
	c     *mcpCap
	noted bool
}

func (s *sessionSeer) note() {
	if s.noted {
		return
	}
	s.noted = true
	if id := s.Header().Get(mcpSessionHeader); id != "" {
		s.c.mu.Lock()
		s.c.seen[id] = s.c.now()
		s.c.mu.Unlock()
	}
}

func (s *sessionSeer) WriteHeader(code int) {
	s.note()
	s.ResponseWriter.WriteHeader(code)
}

func (s *sessionSeer) Write(b []byte) (int, error) {
	s.note()
	return s.ResponseWriter.Write(b)
}

func (s *sessionSeer) Flush() {
	s.note()
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (s *sessionSeer) Unwrap() http.ResponseWriter { return s.ResponseWriter }
