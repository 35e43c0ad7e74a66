package gateway

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearer adds a token to every request of an HTTP client.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// /api/harness/mcp is behind the gateway's guard: without the token an MCP
// client cannot even initialize (401), nor can a page from another origin
// or a request naming another host (403); with the token the go-sdk's
// streamable client lists the six tools and makes a session in a root.
func TestMCPOverStreamableHTTP(t *testing.T) {
	s := newServer(t, func(c *Config) { c.Token = "s3cret-token" })
	connect := func(token string) (*mcp.ClientSession, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return mcp.NewClient(&mcp.Implementation{Name: "gw-test", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{
			Endpoint: s.srv.URL + "/api/harness/mcp", HTTPClient: &http.Client{Transport: bearer{token}}, DisableStandaloneSSE: true}, nil)
	}
	for _, tok := range []string{"", "s3cret-tokem"} {
		if cs, err := connect(tok); err == nil {
			cs.Close()
			t.Errorf("token %q: an MCP session was made", tok)
		}
	}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	for _, c := range []struct {
		name   string
		header []string
		want   int
	}{
		{"no token", []string{"Content-Type", "application/json", "Accept", "application/json, text/event-stream"}, 401},
		{"foreign origin", []string{"Authorization", "Bearer s3cret-token", "Origin", "https://evil.example", "Content-Type", "application/json", "Accept", "application/json, text/event-stream"}, 403},
		{"foreign host", []string{"Authorization", "Bearer s3cret-token", "Host", "evil.example", "Content-Type", "application/json", "Accept", "application/json, text/event-stream"}, 403},
		{"text/plain", []string{"Authorization", "Bearer s3cret-token", "Content-Type", "text/plain", "Accept", "application/json, text/event-stream"}, 415},
	} {
		if code, body := s.do("POST", "/api/harness/mcp", init, c.header...); code != c.want {
			t.Errorf("%s: %d %s, want %d", c.name, code, body, c.want)
		}
	}
	cs, err := connect("s3cret-token")
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != "create_session,get_transcript,get_usage,interrupt,list_engines,list_sessions,run_turn" {
		t.Fatalf("tools %v", names)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "create_session", Arguments: map[string]any{"projectRoot": s.root}})
	if err != nil || res.IsError {
		t.Fatalf("create_session: %v %+v", err, res)
	}
	if list, _ := s.h.ListSessions(s.root); len(list) != 1 {
		t.Errorf("sessions after create_session over HTTP: %d", len(list))
	}
}
