package acp_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chirality/harness/acp"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/mcpconfig"
	"github.com/chirality/harness/mcpconfig/mcptest"
)

// Issue 23 on a real ACP agent (claude-agent-acp, Claude Code inside):
// the stdio server goes in session/new's mcpServers, the agent starts
// it (Claude Code 2.1.329 defers MCP tools behind its ToolSearch tool:
// the first request offers ToolSearch, and a direct call of the deferred
// tool runs), and the fake model's call of mcp__everything__echo runs
// with an allow rule on the name in dontAsk and comes back as tool:start /
// tool:result under that name, its result the server's echo.
func TestRealClaudeACPMCP(t *testing.T) {
	spec, cfg, fake := realAgent(t, acp.ClaudeACP)
	var offered []string
	fake.SetResponder(func(r *claudetest.Request) claudetest.Reply {
		if len(r.ToolResults()) > 0 {
			return claudetest.TextReply("echoed")
		}
		if slices.Contains(r.Tools, "mcp__everything__echo") || slices.Contains(r.Tools, "ToolSearch") {
			offered = r.Tools
			return claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse("", "mcp__everything__echo", map[string]any{"message": "hi from acp"})}}
		}
		return claudetest.TextReply("no echo tool")
	})
	e := realEngine(t, spec, cfg, fake, t.TempDir())
	defer shutdownReal(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	tr, err := e.StartTurn(ctx, engine.Request{SessionKey: "s", Message: "echo something", Cwd: t.TempDir(),
		MCP: mcptest.Config(mcptest.Everything(t, "everything", nil)), PermissionMode: "dontAsk", AllowedTools: []string{"mcp__everything__echo"}})
	if err != nil {
		t.Fatal(err)
	}
	var evs []event.Event
	for tr.Next() {
		evs = append(evs, tr.Event())
	}
	var starts, results []event.Event
	text := ""
	for _, ev := range evs {
		switch ev.Type {
		case event.TypeToolStart:
			starts = append(starts, ev)
		case event.TypeToolResult:
			results = append(results, ev)
		case event.TypeChatDelta:
			text += ev.Text
		}
	}
	if offered == nil {
		t.Fatalf("the model was never offered mcp__everything__echo or ToolSearch (events %v, err %v)", types(evs), tr.Err())
	}
	if len(starts) != 1 || len(results) != 1 {
		t.Fatalf("tool events: starts %+v results %+v", starts, results)
	}
	if starts[0].ToolStart.Name != "mcp__everything__echo" {
		t.Errorf("tool:start name %q", starts[0].ToolStart.Name)
	}
	if !strings.Contains(results[0].ToolResult.Content, "Echo: hi from acp") || results[0].ToolResult.IsError {
		t.Errorf("tool:result %+v", results[0].ToolResult)
	}
	if !strings.Contains(text, "echoed") {
		t.Errorf("answer %q", text)
	}
}

// OpenCode and Copilot name an MCP server's tool their own way — OpenCode
// 1.18.33 titles the call everything_echo, Copilot 1.0.102 everything-echo
// (both kind "other"; the model is offered the same names) — and the
// mapper names it mcp__everything__echo in tool:start and in the approval
// path, as on every engine. The fake model calls the tool by the name the
// agent offered it under. Copilot 1.0.102 rejects stdio MCP servers from
// an ACP client (its log: "Rejecting non-http/sse MCP server"), so it gets
// an http one (the go-sdk's streamable HTTP server on loopback with an
// echo tool); it asks session/request_permission for the call, which in
// dontAsk only the rule on mcp__everything__echo can allow: the call runs
// only if the name was normalised before the rule was matched, and
// without the rule it is denied; a stdio server beside is reported
// failed in session:init (not sent: Config.NoStdioMCP). OpenCode runs MCP
// tools without asking by default; its built-in entry's OpenCodeAskMCP
// makes it ask, so on it too the rule alone lets the call run and
// without it the call is denied.
func TestRealACPMCPToolNames(t *testing.T) {
	for _, c := range []struct {
		agent   string
		offered string // the name the agent offers the model
		server  func(t *testing.T) mcpconfig.Server
		rule    bool
		ran     bool
		stdio   bool // a stdio server-everything "local" beside: Copilot refuses it, reported failed
	}{
		{acp.OpenCode, "everything_echo", func(t *testing.T) mcpconfig.Server { return mcptest.Everything(t, "everything", nil) }, true, true, false},
		{acp.OpenCode, "everything_echo", func(t *testing.T) mcpconfig.Server { return mcptest.Everything(t, "everything", nil) }, false, false, false},
		{acp.Copilot, "everything-echo", func(t *testing.T) mcpconfig.Server { return httpEcho(t, "everything") }, true, true, true},
		{acp.Copilot, "everything-echo", func(t *testing.T) mcpconfig.Server { return httpEcho(t, "everything") }, false, false, false},
	} {
		t.Run(fmt.Sprintf("%s/rule=%v", c.agent, c.rule), func(t *testing.T) {
			spec, cfg, fake := realAgent(t, c.agent)
			var mu sync.Mutex
			var offered []string
			fake.SetResponder(func(r *claudetest.Request) claudetest.Reply {
				if len(r.Tools) == 0 {
					return claudetest.TextReply("A title")
				}
				if lastIsToolResult(r) {
					return claudetest.TextReply("echoed")
				}
				mu.Lock()
				offered = r.Tools
				mu.Unlock()
				if slices.Contains(r.Tools, c.offered) {
					return claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse("", c.offered, map[string]any{"message": "hi from acp"})}}
				}
				return claudetest.TextReply("no echo tool")
			})
			e := realEngine(t, spec, cfg, fake, t.TempDir())
			defer shutdownReal(t, e)
			ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
			defer cancel()
			req := engine.Request{SessionKey: "s", Message: "echo something", Cwd: t.TempDir(),
				MCP: mcptest.Config(c.server(t)), PermissionMode: "dontAsk"}
			if c.rule {
				req.AllowedTools = []string{"mcp__everything__echo"}
			}
			if c.stdio {
				req.MCP.Servers = append(req.MCP.Servers, mcptest.Everything(t, "local", nil))
			}
			tr, err := e.StartTurn(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			var evs []event.Event
			for tr.Next() {
				evs = append(evs, tr.Event())
			}
			mu.Lock()
			got := offered
			mu.Unlock()
			if !slices.Contains(got, c.offered) {
				t.Fatalf("the model was offered %v, not %s (events %v, err %v)", got, c.offered, types(evs), tr.Err())
			}
			var starts, results []event.Event
			status := map[string]event.MCPServerStatus{}
			for _, ev := range evs {
				switch ev.Type {
				case event.TypeToolStart:
					starts = append(starts, ev)
				case event.TypeToolResult:
					results = append(results, ev)
				case event.TypeSessionInit:
					for _, st := range ev.Init.MCPServers {
						status[st.Name] = st
					}
				}
			}
			if status["everything"].Status != "pending" {
				t.Errorf("session:init mcpServers %+v", status)
			}
			if c.stdio && (status["local"].Status != "failed" || !strings.Contains(status["local"].Error, "stdio")) {
				t.Errorf("the stdio server Copilot refuses: %+v", status["local"])
			}
			if len(starts) != 1 || len(results) != 1 {
				t.Fatalf("tool events: starts %+v results %+v", starts, results)
			}
			if starts[0].ToolStart.Name != "mcp__everything__echo" {
				t.Errorf("tool:start name %q, want mcp__everything__echo", starts[0].ToolStart.Name)
			}
			res := results[0].ToolResult
			if ran := strings.Contains(res.Content, "Echo: hi from acp") && !res.IsError; ran != c.ran {
				t.Errorf("tool:result %+v, want ran=%v", res, c.ran)
			}
		})
	}
}

type echoIn struct {
	Message string `json:"message"`
}

// httpEcho is an MCP server with an echo tool like server-everything's,
// over streamable HTTP on loopback (the go-sdk's server).
func httpEcho(t *testing.T, name string) mcpconfig.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Echoes the message."}, func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Echo: " + in.Message}}}, nil, nil
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	return mcpconfig.Server{Name: name, Type: mcpconfig.HTTP, URL: hs.URL}
}
