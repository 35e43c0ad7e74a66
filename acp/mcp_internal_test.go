package acp

import (
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/chirality/harness/mcpconfig"
)

// An agent that refuses stdio MCP servers (Config.NoStdioMCP, Copilot) is
// not sent them; session:init reports them failed with why, and its http
// servers still go. Other agents get the stdio servers.
func TestMCPServersNoStdio(t *testing.T) {
	cfg := &mcpconfig.Config{Servers: []mcpconfig.Server{
		{Name: "local", Type: mcpconfig.Stdio, Command: "/bin/true"},
		{Name: "remote", Type: mcpconfig.HTTP, URL: "http://127.0.0.1:1/mcp"},
	}}
	caps := sdk.McpCapabilities{Http: true}
	out, status := mcpServers(cfg, caps, true)
	if len(out) != 1 || out[0].(sdk.McpServer).Http == nil || out[0].(sdk.McpServer).Http.Name != "remote" {
		t.Errorf("sent %+v, want the http server only", out)
	}
	if len(status) != 2 || status[0].Name != "local" || status[0].Status != "failed" || status[0].Error == "" ||
		status[1].Name != "remote" || status[1].Status != "pending" {
		t.Errorf("status %+v", status)
	}
	out, status = mcpServers(cfg, caps, false)
	if len(out) != 2 || out[0].(sdk.McpServer).Stdio == nil || status[0].Status != "pending" {
		t.Errorf("without NoStdioMCP: sent %+v, status %+v", out, status)
	}
}
