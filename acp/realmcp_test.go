package acp_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chirality/harness/acp"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
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
	var spec agentSpec
	for _, s := range realAgents {
		if s.name == acp.ClaudeACP {
			spec = s
		}
	}
	cfg, _ := acp.BuiltinConfig(spec.name)
	fake, err := claudetest.NewFakeAPI()
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
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
	home := t.TempDir()
	cfg.Binary = findAgent(t, cfg.Command[0])
	cfg.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}
	cfg.ExtraEnv = spec.env(fake, home)
	cfg.StopGrace = time.Second
	e, err := acp.NewEngine(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = e.Shutdown(ctx)
	}()
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
