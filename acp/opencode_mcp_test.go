package acp_test

import (
	"strings"
	"testing"

	"github.com/chirality/harness/acp"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/mcpconfig"
)

func TestOpenCodeAskMCP(t *testing.T) {
	mcp := &mcpconfig.Config{Servers: []mcpconfig.Server{{Name: "everything", Type: mcpconfig.Stdio, Command: "x"}, {Name: "mine", Type: mcpconfig.Stdio, Command: "y"}}}
	perm := func(env []string) map[string]any {
		t.Helper()
		return openCodePermission(t, env)
	}
	// No config of the user's: one is made; the user's provider and own
	// choice for a server stand.
	env := acp.OpenCodeAskMCP([]string{"PATH=/bin"}, engine.Request{MCP: mcp, PermissionMode: "default"})
	if p := perm(env); p["everything_*"] != "ask" || p["mine_*"] != "ask" || env[0] != "PATH=/bin" {
		t.Fatalf("env %q", env)
	}
	user := `OPENCODE_CONFIG_CONTENT={"provider":{"a":{}},"permission":{"mine_*":"allow","bash":"ask"}}`
	env = acp.OpenCodeAskMCP([]string{user}, engine.Request{MCP: mcp, PermissionMode: "dontAsk"})
	if p := perm(env); p["everything_*"] != "ask" || p["mine_*"] != "allow" || p["bash"] != "ask" || !strings.Contains(env[0], `"provider":{"a":{}}`) || len(env) != 1 {
		t.Fatalf("merged env %q", env)
	}
	// Nothing changes in bypassPermissions, without servers, or when the
	// user's config is not an object or sets one permission for all.
	for _, c := range []struct {
		env  []string
		mode string
		mcp  *mcpconfig.Config
	}{
		{[]string{user}, "bypassPermissions", mcp},
		{[]string{user}, "default", nil},
		{[]string{"OPENCODE_CONFIG_CONTENT=[1]"}, "default", mcp},
		{[]string{`OPENCODE_CONFIG_CONTENT={"permission":"allow"}`}, "default", mcp},
	} {
		got := acp.OpenCodeAskMCP(c.env, engine.Request{MCP: c.mcp, PermissionMode: c.mode})
		if strings.Join(got, "\n") != strings.Join(c.env, "\n") {
			t.Errorf("%q in %s: changed to %q", c.env, c.mode, got)
		}
	}
}
