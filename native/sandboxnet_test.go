package native

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/mcpconfig"
	"github.com/chirality/harness/mcpconfig/mcptest"
	"github.com/chirality/harness/sandbox/sandboxtest"
)

// dialServerEnv makes the test binary a stdio MCP server with one tool,
// dial {port}: it opens a TCP connection to 127.0.0.1:port.
const dialServerEnv = "HARNESS_TEST_DIAL_MCP"

type dialIn struct {
	Port int `json:"port"`
}

func dialServer() int {
	srv := mcp.NewServer(&mcp.Implementation{Name: "dial", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "dial", Description: "Connects to a loopback TCP port."}, func(_ context.Context, _ *mcp.CallToolRequest, in dialIn) (*mcp.CallToolResult, any, error) {
		c, err := net.Dial("tcp4", fmt.Sprintf("127.0.0.1:%d", in.Port))
		if err != nil {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil, nil
		}
		_ = c.Close()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "connected"}}}, nil, nil
	})
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// TestEngineSandboxNetwork: a sandboxed native turn (its model requests
// reach the fake API: the turn completes) starts its stdio MCP server in
// the sandbox with its TCP limited: the server's dial to a loopback port
// it was not given fails with a permission error in tool:result, to the
// port of the session's HTTP MCP server it works, and with OpenNetwork
// the first works too.
func TestEngineSandboxNetwork(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	other := sandboxtest.Listen(t)
	httpSrv := mcpconfig.Server{Name: "web", Type: mcpconfig.HTTP, URL: fmt.Sprintf("http://127.0.0.1:%d/mcp", sandboxtest.Listen(t))}
	dialer := mcpconfig.Server{Name: "dial", Type: mcpconfig.Stdio, Command: exe, Env: map[string]string{dialServerEnv: "1"}}
	dial := func(port int) claudetest.Reply {
		return claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse("", "mcp__dial__dial", map[string]any{"port": port})}}
	}
	f := newFixture(t)
	f.api.Script(dial(other), dial(sandboxtest.PortOf(t, httpSrv.URL)), claudetest.TextReply("done"), dial(other), claudetest.TextReply("done"))
	e := newEngine(f)
	defer e.Shutdown(context.Background())
	turn := func(open bool) []*event.ToolResult {
		t.Helper()
		cfg := mcptest.Config(dialer)
		cfg.Servers = append(cfg.Servers, httpSrv) // not reachable as MCP: only its port matters here
		tr, err := e.StartTurn(context.Background(), engine.Request{SessionKey: "s1", Message: "dial", Cwd: t.TempDir(), StateDir: t.TempDir(),
			MCP: cfg, PermissionMode: "dontAsk", AllowedTools: []string{"mcp__dial"}, Sandbox: true, OpenNetwork: open})
		if err != nil {
			t.Fatal(err)
		}
		var results []*event.ToolResult
		for _, ev := range drain(t, tr) {
			if ev.Type == event.TypeToolResult {
				results = append(results, ev.ToolResult)
			}
		}
		return results
	}
	res := turn(false)
	if len(res) != 2 {
		t.Fatalf("%d tool:results, want 2", len(res))
	}
	if !res[0].IsError || !sandboxtest.Denied(res[0].Content) {
		t.Errorf("dial port %d: tool:result %+v, want a permission error", other, res[0])
	}
	if res[1].IsError || !strings.Contains(res[1].Content, "connected") {
		t.Errorf("dial the HTTP MCP server's port: tool:result %+v, want connected", res[1])
	}
	res = turn(true)
	if len(res) != 1 || res[0].IsError || !strings.Contains(res[0].Content, "connected") {
		t.Errorf("OpenNetwork: tool:results %+v, want connected", res)
	}
}
