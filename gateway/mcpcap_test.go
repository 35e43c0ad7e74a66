package gateway

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

const mcpInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"hostile","version":"1"}}}`

// mcpPost sends one JSON-RPC message to /api/harness/mcp as a bare HTTP
// client (no SDK): session "" makes a new session.
func (s *testServer) mcpPost(session, body string) *http.Response {
	s.t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.srv.URL+APIPrefix+"/mcp", strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	if session != "" {
		req.Header.Set(mcpSessionHeader, session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// open makes a session and returns its id ("" and the status when refused).
func (s *testServer) mcpOpen() (string, *http.Response) {
	s.t.Helper()
	resp := s.mcpPost("", mcpInitialize)
	if resp.StatusCode != http.StatusOK {
		return "", resp
	}
	id := resp.Header.Get(mcpSessionHeader)
	if id == "" {
		s.t.Fatal("initialize answered without a session id")
	}
	// the client's half of the handshake
	if r := s.mcpPost(id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); r.StatusCode/100 != 2 {
		s.t.Fatalf("initialized: %d", r.StatusCode)
	}
	return id, resp
}

func (s *testServer) mcpPing(id string) int {
	s.t.Helper()
	return s.mcpPost(id, `{"jsonrpc":"2.0","id":2,"method":"ping"}`).StatusCode
}

// Issue 29: a client opening sessions without end meets the cap: beyond
// MaxMCPSessions it is answered 503 with Retry-After (no idle session is
// old enough to close), and a session ended by DELETE makes room again.
func TestMCPSessionCap(t *testing.T) {
	s := newServer(t, func(c *Config) { c.MaxMCPSessions = 3; c.MCPPressureIdle = time.Hour })
	var ids []string
	for range 3 {
		id, resp := s.mcpOpen()
		if id == "" {
			t.Fatalf("session %d refused below the cap: %d", len(ids)+1, resp.StatusCode)
		}
		ids = append(ids, id)
	}
	for range 20 { // the attack goes on
		if _, resp := s.mcpOpen(); resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("a session beyond the cap: %d, Retry-After %q; want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
		} else if n, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || n <= 0 {
			t.Fatalf("Retry-After %q", resp.Header.Get("Retry-After"))
		}
	}
	if n := count(s); n != 3 {
		t.Fatalf("%d sessions live, want 3", n)
	}
	for _, id := range ids {
		if st := s.mcpPing(id); st != http.StatusOK {
			t.Fatalf("a session under the cap stopped working: %d", st)
		}
	}
	req, _ := http.NewRequest(http.MethodDelete, s.srv.URL+APIPrefix+"/mcp", nil)
	req.Header.Set(mcpSessionHeader, ids[0])
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode/100 != 2 {
		t.Fatalf("DELETE: %v %v", resp, err)
	}
	resp.Body.Close()
	if id, resp := s.mcpOpen(); id == "" {
		t.Fatalf("a session after one ended: %d", resp.StatusCode)
	}
}

// Under pressure an idle session is closed to make room, the idlest
// first, never one with a request running (an open GET stream), and when
// every session is busy the new one is refused.
func TestMCPSessionCapClosesIdleUnderPressure(t *testing.T) {
	s := newServer(t, func(c *Config) { c.MaxMCPSessions = 2; c.MCPPressureIdle = time.Nanosecond })
	a, _ := s.mcpOpen()
	b, _ := s.mcpOpen()
	if st := s.mcpPing(b); st != http.StatusOK { // b was used after a
		t.Fatalf("ping b: %d", st)
	}
	c, resp := s.mcpOpen()
	if c == "" {
		t.Fatalf("no room made at the cap: %d", resp.StatusCode)
	}
	if st := s.mcpPing(a); st != http.StatusNotFound {
		t.Fatalf("the idlest session answered %d after it was closed, want 404", st)
	}
	if st := s.mcpPing(b); st != http.StatusOK {
		t.Fatalf("a more recent session was closed: %d", st)
	}
	// b and c hold a GET stream each: busy, not closable
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, id := range []string{b, c} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.srv.URL+APIPrefix+"/mcp", nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		req.Header.Set(mcpSessionHeader, id)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET stream: %v %v", resp, err)
		}
		defer resp.Body.Close()
	}
	if _, resp := s.mcpOpen(); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("with every session busy a new one got %d, want 503", resp.StatusCode)
	}
}

func count(s *testServer) int {
	n := 0
	for range s.gw.mcp.MCP().Sessions() {
		n++
	}
	return n
}
