package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/logging"
	"github.com/chirality/harness/mcpconfig"
	"github.com/chirality/harness/mcpconfig/mcptest"
)

// Issue 23 through the core on the real Claude Code CLI: the project's
// .mcp.json reaches the agent (its ${VAR} expanded into the server's
// env), the fake model calls mcp__everything__echo and then get-env, a
// persona's auto_approve_tools on the MCP names lets both run without
// asking anyone, a server that cannot start is reported failed in
// session:init and the turn still runs, and the env value — which really
// reached the server, as get-env shows — is in no published or stored
// event, no harness.log line and no server log line.
func TestClaudeCodeMCPThroughTheCore(t *testing.T) {
	const secret = "mcp-core-secret-27182818"
	t.Setenv("HARNESS_TEST_MCP_CORE_SECRET", secret)
	serverLog := &lockedBuf{}
	logger := zerolog.New(logging.Scrubbed(serverLog))
	e := newTestEnv(t, func(c *Config) { c.Logger = &logger })
	everything := mcptest.Everything(t, "everything", map[string]string{"HARNESS_MCP_TOKEN": "${HARNESS_TEST_MCP_CORE_SECRET}"})
	proj, err := mcptest.Config(everything, mcptest.Broken("broken")).JSON()
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(e.root, ".mcp.json"), string(proj))
	trustProjectMCP(t, e.h, e.root) // a person trusted the project's servers
	writeFile(t, filepath.Join(e.root, "agents", "AGENT_TOOLS.md"),
		"---\npermission_mode: default\nauto_approve_tools:\n  - mcp__everything__echo\n  - mcp__everything__get-env\n---\nBe brief.\n")
	s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Persona: "TOOLS", Mode: "direct"})
	if err != nil {
		t.Fatal(err)
	}
	e.api.Script(
		claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse("", "mcp__everything__echo", map[string]any{"message": "through the core"})}},
		claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse("", "mcp__everything__get-env", map[string]any{})}},
		claudetest.TextReply("all done"))
	evs, tr := e.turn(s.ID, "use the MCP tools")
	if err := tr.Err(); err != nil {
		t.Fatalf("turn: %v", err)
	}

	var init *event.SessionInit
	var starts []string
	var results []string
	for _, ev := range evs {
		switch ev.Type {
		case event.TypeSessionInit:
			init = ev.Init
		case event.TypeToolStart:
			starts = append(starts, ev.ToolStart.Name)
		case event.TypeToolResult:
			if ev.ToolResult.IsError {
				t.Errorf("tool error: %s", ev.ToolResult.Content)
			}
			results = append(results, ev.ToolResult.Content)
		case event.TypeApprovalRequested:
			t.Errorf("asked about %s: the rule should have allowed it", ev.Approval.ToolName)
		}
		if strings.Contains(ev.Raw, secret) {
			t.Errorf("the secret in a published %s: %.300s", ev.Type, ev.Raw)
		}
	}
	status := map[string]string{}
	for _, m := range init.MCPServers {
		status[m.Name] = m.Status
	}
	if status["everything"] != "connected" || status["broken"] != "failed" {
		t.Errorf("session:init mcpServers = %+v", init.MCPServers)
	}
	// The session keeps what its last turn's session:init said
	// (GET /session/{id} and the console's header show it).
	if saved, err := e.h.Session(s.ID); err != nil || fmt.Sprint(saved.MCPServers) != fmt.Sprint(init.MCPServers) {
		t.Errorf("the session's mcpServers = %+v (%v), want %+v", saved.MCPServers, err, init.MCPServers)
	}
	if want := []string{mcpconfig.ToolName("everything", "echo"), mcpconfig.ToolName("everything", "get-env")}; strings.Join(starts, " ") != strings.Join(want, " ") {
		t.Fatalf("tool:start names %v, want %v", starts, want)
	}
	if len(results) != 2 || !strings.Contains(results[0], "Echo: through the core") || !strings.Contains(results[1], "HARNESS_MCP_TOKEN") {
		t.Fatalf("tool:results = %.500q", results)
	}
	// The spy: the model got the server's environment, holding the value.
	var envOut string
	for _, r := range e.api.Requests() {
		for _, c := range r.ToolResults() {
			envOut += c.Content
		}
	}
	if !strings.Contains(envOut, secret) {
		t.Fatal("the env value did not reach the MCP server (the test then proves nothing about scrubbing)")
	}

	e.h.Shutdown(t.Context())
	var stored []byte
	for _, dir := range []string{e.state, filepath.Join(e.root, ".chirality")} {
		_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if strings.HasPrefix(d.Name(), "mcp-") {
					t.Errorf("an MCP config file outlived the turn: %s", p)
				}
				b, _ := os.ReadFile(p)
				stored = append(stored, b...)
			}
			return nil
		})
	}
	if !strings.Contains(string(stored), "HARNESS_MCP_TOKEN") {
		t.Error("the stored events lack the get-env result (the walk read the wrong place)")
	}
	for what, b := range map[string]string{"the state and .chirality files": string(stored), "the server log": serverLog.String()} {
		if i := strings.Index(b, secret); i >= 0 {
			t.Errorf("%s hold the secret: …%s…", what, b[max(0, i-200):i])
		}
	}
}
