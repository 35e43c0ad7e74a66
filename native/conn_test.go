package native

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
)

// connCounter is an httptest server in front of the fake Messages API
// that counts the connections its clients open and sees them closed.
type connCounter struct {
	srv *httptest.Server

	mu     sync.Mutex
	opened int
	open   map[net.Conn]bool
	closed chan struct{} // receives once per closed connection
}

func newConnCounter(t *testing.T) *connCounter {
	t.Helper()
	api, err := claudetest.NewFakeAPI()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { api.Close() })
	api.SetResponder(func(*claudetest.Request) claudetest.Reply { return claudetest.TextReply("hello") })
	c := &connCounter{open: map[net.Conn]bool{}, closed: make(chan struct{}, 64)}
	c.srv = httptest.NewUnstartedServer(api)
	c.srv.Config.ConnState = func(conn net.Conn, s http.ConnState) {
		c.mu.Lock()
		defer c.mu.Unlock()
		switch s {
		case http.StateNew:
			c.opened++
			c.open[conn] = true
		case http.StateClosed, http.StateHijacked:
			if c.open[conn] {
				delete(c.open, conn)
				c.closed <- struct{}{}
			}
		}
	}
	c.srv.Start()
	t.Cleanup(c.srv.Close)
	return c
}

func (c *connCounter) counts() (opened, open int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.opened, len(c.open)
}

// Turns of one engine share its HTTP client: the second and third turn
// reuse the connection the first left idle (a client per turn dialled
// once per turn, a TLS handshake with the real API, and left each
// connection idle for 90 s), and Shutdown closes it, so no connection
// outlives the engine.
func TestTurnsShareOneConnection(t *testing.T) {
	c := newConnCounter(t)
	e := NewEngine(EngineConfig{APIKey: "k", BaseURL: c.srv.URL, MaxRetries: -1})
	cwd, state := t.TempDir(), t.TempDir()
	for range 3 {
		completeTurn(t, e, cwd, state)
	}
	if opened, _ := c.counts(); opened != 1 {
		t.Errorf("3 turns opened %d connections, want 1 (the first turn's, reused)", opened)
	}
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-c.closed // Shutdown closed the idle connection (else the test's deadline)
	if _, open := c.counts(); open != 0 {
		t.Errorf("%d connections open after Shutdown", open)
	}
}

// An HTTP client given in EngineConfig.Options is the one the turns use.
func TestOptionsHTTPClientWins(t *testing.T) {
	c := newConnCounter(t)
	var mu sync.Mutex
	calls := 0
	own := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		mu.Lock()
		calls++
		mu.Unlock()
		return http.DefaultTransport.RoundTrip(r)
	})}
	e := NewEngine(EngineConfig{APIKey: "k", BaseURL: c.srv.URL, MaxRetries: -1, Options: []option.RequestOption{option.WithHTTPClient(own)}})
	defer e.Shutdown(context.Background())
	completeTurn(t, e, t.TempDir(), t.TempDir())
	mu.Lock()
	defer mu.Unlock()
	if calls != 1 {
		t.Errorf("the client of Options carried %d requests, want 1", calls)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// The SDK's environment defaults still apply to every turn (here its
// ANTHROPIC_CUSTOM_HEADERS, which it reads when no credential is in the
// environment), read once when the engine is made, as its key and base
// URL are: the SDK read them, and looked for profile files, at every
// turn's client.
func TestEngineReadsClientDefaultsOnce(t *testing.T) {
	t.Setenv("HOME", t.TempDir()) // no profile file
	for _, k := range []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_PROFILE", "ANTHROPIC_CONFIG_DIR",
		"ANTHROPIC_FEDERATION_RULE_ID", "ANTHROPIC_ORGANIZATION_ID", "ANTHROPIC_IDENTITY_TOKEN_FILE", "ANTHROPIC_IDENTITY_TOKEN"} {
		t.Setenv(k, "")
	}
	t.Setenv("ANTHROPIC_CUSTOM_HEADERS", "X-Harness-Test: made")
	api, err := claudetest.NewFakeAPI()
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	api.SetResponder(func(*claudetest.Request) claudetest.Reply { return claudetest.TextReply("hello") })
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("X-Harness-Test"))
		mu.Unlock()
		api.ServeHTTP(w, r)
	}))
	defer srv.Close()
	e := NewEngine(EngineConfig{APIKey: "k", BaseURL: srv.URL, MaxRetries: -1})
	defer e.Shutdown(context.Background())
	cwd, state := t.TempDir(), t.TempDir()
	for _, v := range []string{"X-Harness-Test: changed", ""} {
		t.Setenv("ANTHROPIC_CUSTOM_HEADERS", v)
		completeTurn(t, e, cwd, state)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 || seen[0] != "made" || seen[1] != "made" {
		t.Fatalf("X-Harness-Test of the turns' requests %q, want the engine's environment's (made) on both", seen)
	}
}

// completeTurn runs one turn of session s on e and fails t unless it
// completed.
func completeTurn(t *testing.T, e *Engine, cwd, state string) {
	t.Helper()
	tr, err := e.StartTurn(context.Background(), engine.Request{SessionKey: "s", Message: "hi", Cwd: cwd, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	complete := false
	for tr.Next() {
		complete = complete || tr.Event().Type == event.TypeSessionComplete
	}
	if !complete || tr.Err() != nil {
		t.Fatalf("turn: complete %v, err %v", complete, tr.Err())
	}
}
