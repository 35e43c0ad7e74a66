package codex_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chirality/harness/codex"
	"github.com/chirality/harness/codex/codextest"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/mcpconfig"
	"github.com/chirality/harness/mcpconfig/mcptest"
)

// Issue 23 on the real Codex: the turn's MCP servers reach it in
// thread/start's config (mcp_servers, over stdin: the env value is on no
// command line), the fake model calls the reference server-everything's
// echo, and the call and its result appear as tool:start / tool:result
// named mcp__everything__echo; an SSE server, which Codex cannot take, and
// a server that cannot start are reported failed and the turn still
// runs; the env value is in no event and no log line.
func TestRealCodexMCPServers(t *testing.T) {
	const secret = "codex-mcp-secret-16180339"
	g := newRig(t, "RUST_LOG=info")
	defer func() {
		if t.Failed() {
			for _, l := range strings.Split(g.logs.String(), "\n") {
				if strings.Contains(strings.ToLower(l), "mcp") {
					t.Log(l[:min(400, len(l))])
				}
			}
		}
	}()
	cfg := mcptest.Config(mcptest.Everything(t, "everything", map[string]string{"HARNESS_MCP_TOKEN": secret}),
		mcptest.Broken("broken"), mcpconfig.Server{Name: "events", Type: mcpconfig.SSE, URL: "http://127.0.0.1:9/sse"})
	var offered []string
	g.fake.SetResponder(func(r *codextest.Request) codextest.Reply {
		if len(r.Input) > 0 && strings.Contains(string(r.Input[len(r.Input)-1]), "function_call_output") {
			return codextest.Reply{Text: "echoed"}
		}
		offered = r.Tools
		for _, name := range r.Tools {
			if name == "mcp__everything" { // the server's tools, as a namespace
				return codextest.Reply{Call: &codextest.Call{Namespace: name, Tool: "echo", Args: map[string]any{"message": "hi from codex"}}}
			}
		}
		return codextest.Reply{Text: "no echo tool offered"}
	})
	r := g.turn(t, engine.Request{Message: "echo something", MCP: cfg, PermissionMode: "bypassPermissions"}, nil)
	if r.err != nil {
		t.Fatalf("turn: %v (tools offered %v)", r.err, offered)
	}
	init := r.find(event.TypeSessionInit)[0].Init
	status := map[string]event.MCPServerStatus{}
	for _, s := range init.MCPServers {
		status[s.Name] = s
	}
	if status["events"].Status != "failed" || !strings.Contains(status["events"].Error, "sse") || status["everything"].Status == "failed" || status["everything"].Status == "" {
		t.Errorf("session:init mcpServers = %+v", init.MCPServers)
	}
	starts, results := r.find(event.TypeToolStart), r.find(event.TypeToolResult)
	if len(starts) != 1 || starts[0].ToolStart.Name != mcpconfig.ToolName("everything", "echo") {
		t.Fatalf("tool:start = %+v (tools offered %v)", starts, offered)
	}
	if len(results) != 1 || !strings.Contains(results[0].ToolResult.Content, "Echo: hi from codex") {
		t.Fatalf("tool:result = %+v", results)
	}
	if !strings.Contains(r.text(), "echoed") {
		t.Errorf("the turn did not go on after the tool: %q", r.text())
	}
	for _, e := range r.events {
		if b, _ := json.Marshal(e); strings.Contains(string(b), secret) {
			t.Errorf("the env value in %s: %.300s", e.Type, b)
		}
	}
	if strings.Contains(g.logs.String(), secret) {
		t.Error("the env value in the engine's log")
	}
}

// Codex runs MCP tools without asking whatever its approval policy, so
// outside bypassPermissions only the tools a rule allows are offered: no
// rule, no tool (nothing runs unasked); a rule on the tool, that tool.
func TestRealCodexMCPToolsOnlyWhereARuleAllows(t *testing.T) {
	for _, tc := range []struct {
		name    string
		allowed []string
		offered bool
	}{
		{"no rule", nil, false},
		{"rule on another tool", []string{"mcp__everything__get-sum", "Bash(ls)"}, false},
		{"rule on the tool", []string{"mcp__everything__echo"}, true},
		{"rule on the server", []string{"mcp__everything"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newRig(t)
			cfg := mcptest.Config(mcptest.Everything(t, "everything", nil))
			var offered []string
			g.fake.SetResponder(func(r *codextest.Request) codextest.Reply {
				if len(r.Input) > 0 && strings.Contains(string(r.Input[len(r.Input)-1]), "function_call_output") {
					return codextest.Reply{Text: "echoed"}
				}
				offered = r.Tools
				if slices.Contains(r.Tools, "mcp__everything") {
					return codextest.Reply{Call: &codextest.Call{Namespace: "mcp__everything", Tool: "echo", Args: map[string]any{"message": "hi"}}}
				}
				return codextest.Reply{Text: "no echo tool offered"}
			})
			r := g.turn(t, engine.Request{Message: "echo something", MCP: cfg, PermissionMode: "default", AllowedTools: tc.allowed}, nil)
			if r.err != nil {
				t.Fatalf("turn: %v (tools offered %v)", r.err, offered)
			}
			starts := r.find(event.TypeToolStart)
			if tc.offered {
				if len(starts) != 1 || starts[0].ToolStart.Name != "mcp__everything__echo" || !strings.Contains(r.text(), "echoed") {
					t.Fatalf("allowed echo did not run: starts %+v, text %q, offered %v", starts, r.text(), offered)
				}
				return
			}
			// Echo never runs; with no rule on the server its namespace is
			// not even offered (with one on another tool it is, without echo,
			// and Codex refuses the call).
			for _, res := range r.find(event.TypeToolResult) {
				if strings.Contains(res.ToolResult.Content, "Echo:") {
					t.Fatalf("echo ran with no rule allowing it: %+v", res.ToolResult)
				}
			}
			if len(starts) != 0 || (tc.allowed == nil && slices.Contains(offered, "mcp__everything")) {
				t.Fatalf("echo was offered or started with no rule allowing it: starts %+v, offered %v", starts, offered)
			}
		})
	}
}

// Codex starts a thread's MCP servers in the background and sends the
// first model request with the tools of the servers ready by then; the
// harness holds turn/start until each server reported ready or failed.
// A server that takes a while to start (here a shell that sleeps before
// it runs the server: a busy machine, an npx download) still has its
// tools offered in the turn's first request, and session:init says it is
// connected.
func TestRealCodexMCPSlowServerToolsInFirstRequest(t *testing.T) {
	g := newRig(t)
	srv := mcptest.Everything(t, "everything", nil)
	srv.Args = append([]string{"-c", `sleep 2; exec "$0" "$@"`, srv.Command}, srv.Args...)
	srv.Command = "/bin/sh"
	var first []string
	g.fake.SetResponder(func(r *codextest.Request) codextest.Reply {
		if len(r.Input) > 0 && strings.Contains(string(r.Input[len(r.Input)-1]), "function_call_output") {
			return codextest.Reply{Text: "echoed"}
		}
		if first == nil {
			first = append([]string{}, r.Tools...)
		}
		return codextest.Reply{Text: "done"}
	})
	r := g.turn(t, engine.Request{Message: "echo something", MCP: mcptest.Config(srv), PermissionMode: "bypassPermissions"}, nil)
	if r.err != nil {
		t.Fatalf("turn: %v", r.err)
	}
	if !slices.Contains(first, "mcp__everything") {
		t.Errorf("the first model request was not offered the server's tools: %v", first)
	}
	if s := r.find(event.TypeSessionInit)[0].Init.MCPServers; len(s) != 1 || s[0].Status != "connected" {
		t.Errorf("session:init mcpServers = %+v", s)
	}
}

// The wait is bounded: a server that never gets ready (it sleeps instead
// of serving; Codex would give up on it after its own 10 s) does not hold
// the turn past Config.MCPStartupWait. The turn runs without its tools
// and session:init reports it still pending (after Codex's verdict it
// would say failed).
func TestRealCodexMCPStartupWaitIsBounded(t *testing.T) {
	g := newRig(t)
	codex.SetMCPStartupWait(g.eng, time.Millisecond)
	srv := mcpconfig.Server{Name: "stuck", Type: mcpconfig.Stdio, Command: "/bin/sh", Args: []string{"-c", "exec sleep 600"}}
	r := g.turn(t, engine.Request{Message: "hello", MCP: mcptest.Config(srv), PermissionMode: "bypassPermissions"}, nil)
	if r.err != nil {
		t.Fatalf("turn: %v", r.err)
	}
	if s := r.find(event.TypeSessionInit)[0].Init.MCPServers; len(s) != 1 || s[0].Status != "pending" {
		t.Errorf("session:init mcpServers = %+v, want stuck pending", s)
	}
	if !strings.Contains(r.text(), "default answer") {
		t.Errorf("the turn did not run: %q", r.text())
	}
}
