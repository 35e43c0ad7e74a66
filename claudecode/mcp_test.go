package claudecode_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chirality/harness/claudecode"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/mcpconfig"
	"github.com/chirality/harness/mcpconfig/mcptest"
)

// Issue 23: the real CLI gets exactly the turn's MCP servers through a
// private --mcp-config file with --strict-mcp-config. The fake model
// calls mcp__everything__echo on the reference server-everything; an
// allow rule on that name lets it run without asking; a server that
// cannot start is reported failed in session:init and the turn still
// runs; the server's env value is in no event; the file is private while
// the CLI runs and gone when the turn ends; a .mcp.json in the project
// is not read (strict).
func TestRealCLIMCPServers(t *testing.T) {
	r := newRealCLI(t)
	const secret = "mcp-env-secret-31415926"
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(r.cwd, ".mcp.json"), []byte(`{"mcpServers":{"project":{"command":"/bin/true"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := mcptest.Config(mcptest.Everything(t, "everything", map[string]string{"HARNESS_MCP_TEST_TOKEN": secret}), mcptest.Broken("broken"))
	r.api.Script(claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse("", "mcp__everything__echo", map[string]any{"message": "hi from the fake"})}},
		claudetest.TextReply("done"))
	var filesWhileRunning []string
	var modeWhileRunning os.FileMode
	evs, err := r.turn("s-mcp", "echo something", claudecode.TurnOpts{
		MCP: cfg, MCPDir: dir, PermissionMode: "dontAsk", AllowedTools: []string{"mcp__everything__echo"},
		OnFrame: func(f claudecode.Frame) {
			if f.Type == "system" && f.Subtype == "init" {
				m, _ := filepath.Glob(filepath.Join(dir, "*"))
				filesWhileRunning = m
				if len(m) == 1 {
					if st, err := os.Stat(m[0]); err == nil {
						modeWhileRunning = st.Mode().Perm()
					}
				}
			}
		},
	})
	if err != nil {
		t.Fatalf("turn: %v", err)
	}
	if len(filesWhileRunning) != 1 || modeWhileRunning != 0o600 {
		t.Errorf("while the CLI ran, %s held %v (mode %v), want one 0600 file", dir, filesWhileRunning, modeWhileRunning)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*")); len(m) != 0 {
		t.Errorf("the MCP file outlived the turn: %v", m)
	}
	init := evs[0].Init
	status := map[string]event.MCPServerStatus{}
	for _, s := range init.MCPServers {
		status[s.Name] = s
	}
	if status["everything"].Status != "connected" || status["broken"].Status != "failed" || len(status) != 2 {
		t.Errorf("session:init mcpServers = %+v, want everything connected, broken failed, no project server", init.MCPServers)
	}
	starts, results := ofType(evs, event.TypeToolStart), ofType(evs, event.TypeToolResult)
	if len(starts) != 1 || starts[0].ToolStart.Name != mcpconfig.ToolName("everything", "echo") {
		t.Fatalf("tool:start = %+v", starts)
	}
	if len(results) != 1 || results[0].ToolResult.IsError || !strings.Contains(results[0].ToolResult.Content, "Echo: hi from the fake") {
		t.Fatalf("tool:result = %+v", results)
	}
	if got := joinText(evs, event.TypeChatDelta); !strings.Contains(got, "done") {
		t.Errorf("the turn did not go on after the tool: %q", got)
	}
	for _, e := range evs {
		if b, _ := json.Marshal(e); strings.Contains(string(b), secret) {
			t.Errorf("the server's env value is in %s: %.300s", e.Type, b)
		}
	}
	// The model saw the echo (the call really went through the server).
	reqs := r.api.Requests()
	last := reqs[len(reqs)-1]
	if trs := last.ToolResults(); len(trs) != 1 || !strings.Contains(trs[0].Content, "Echo: hi from the fake") {
		t.Errorf("the model's tool result = %+v", trs)
	}
}
