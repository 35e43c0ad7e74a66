package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chirality/harness"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engines"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/mcpconfig"
	"github.com/chirality/harness/session"
	"github.com/chirality/harness/trust"
)

// One agent delegating to another through the harness: the real Claude
// Code CLI, given `harness mcp --demo` as the MCP server "harness" (the
// project's .mcp.json, which the core hands it with --mcp-config), and
// whose fake model calls mcp__harness__create_session on the Codex engine
// and then mcp__harness__run_turn on that session; the inner Codex turn
// runs on the demo model and its answer comes back as the tool result.
// (The pinned CLI defers MCP tools behind ToolSearch: they are not in the
// request's tools, and the fake model calls them by name, as a model may.)
func TestClaudeCodeDelegatesToCodexThroughHarnessMCP(t *testing.T) {
	codexBin, err := filepath.Abs("../../node_modules/.bin/codex")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(codexBin); err != nil {
		t.Fatalf("the pinned codex is missing (make cli): %v", err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "harness")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	root, _ := filepath.EvalSymlinks(t.TempDir())
	inner, _ := filepath.EvalSymlinks(t.TempDir())
	mcpJSON, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"harness": map[string]any{
		"command": bin, "args": []string{"mcp", "--demo", "--root", inner, "--state-dir", t.TempDir()},
		"env": map[string]string{"HARNESS_CODEX_BIN": codexBin}}}})
	if err := os.WriteFile(filepath.Join(root, ".mcp.json"), mcpJSON, 0o600); err != nil {
		t.Fatal(err)
	}

	api, err := claudetest.NewFakeAPI()
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	uuidRe := regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}`)
	api.SetResponder(func(r *claudetest.Request) claudetest.Reply {
		if !r.Stream || !slices.Contains(r.Tools, "Bash") { // a side request (title, quota), not the agent's
			return claudetest.TextReply("side")
		}
		res := r.ToolResults()
		switch len(res) {
		case 0:
			return claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse("", "mcp__harness__create_session",
				map[string]any{"projectRoot": inner, "engine": "codex"})}}
		case 1:
			return claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse("", "mcp__harness__run_turn",
				map[string]any{"sessionId": uuidRe.FindString(res[0].Content), "message": "hello from Claude Code"})}}
		}
		return claudetest.TextReply("Codex said: " + res[len(res)-1].Content)
	})
	h, err := harness.New(harness.Config{Roots: []string{root}, StateDir: t.TempDir(), NoProjectLogs: true, ChildEnv: api.Env(),
		DefaultPermissionMode: "dontAsk", AllowedTools: []string{"mcp__harness"}, Aliases: engines.Aliases,
		Engines: engines.Builtin(engines.Config{ClaudeBinary: claudetest.FindCLI(t), Env: claudetest.ScratchEnv(t), ChildEnv: api.Env(),
			InterruptGrace: time.Second, KillGrace: 2 * time.Second})})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		h.Shutdown(ctx)
	}()
	// A person trusted the project's server (harness trust accept mcp harness).
	proj, err := mcpconfig.Project(root)
	if err != nil {
		t.Fatal(err)
	}
	srv, _ := proj.Get("harness")
	if _, err := h.AcceptTrust(root, trust.KindMCP, "harness", "", trust.ServerHash(srv)); err != nil {
		t.Fatal(err)
	}
	s, err := h.NewSession(harness.SessionSpec{ProjectRoot: root, Mode: "direct", Engine: "claude-code"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var starts []string
	var results []event.ToolResult
	var mcpStatus []event.MCPServerStatus
	tr, err := h.StartTurn(ctx, harness.TurnRequest{SessionID: s.ID, Message: "delegate this to Codex"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := tr.Wait(ctx, func(rec session.Record) error {
		switch ev := rec.Typed; ev.Type {
		case event.TypeSessionInit:
			mcpStatus = ev.Init.MCPServers
		case event.TypeToolStart:
			starts = append(starts, ev.ToolStart.Name)
		case event.TypeToolResult:
			results = append(results, *ev.ToolResult)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("turn: %v (mcp servers %+v, results %+v)", err, mcpStatus, results)
	}
	if strings.Join(starts, " ") != "mcp__harness__create_session mcp__harness__run_turn" || len(results) != 2 {
		t.Fatalf("tool calls %v, results %+v, mcp servers %+v", starts, results, mcpStatus)
	}
	if results[0].IsError || !strings.Contains(results[0].Content, `"engine":"codex"`) {
		t.Errorf("create_session: %+v", results[0])
	}
	if results[1].IsError || !strings.Contains(results[1].Content, `"status":"completed"`) {
		t.Errorf("run_turn on the Codex session: %+v", results[1])
	}
	if !strings.Contains(res.Final, "Codex said:") || !strings.Contains(res.Final, `"final":"`) {
		t.Errorf("final %q", res.Final)
	}
}
