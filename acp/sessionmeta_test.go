package acp_test

import (
	"testing"

	"github.com/chirality/harness/acp"
)

// Outside bypassPermissions the claude-acp entry tells the adapter never
// to let the CLI skip permissions (as root the CLI refuses that unless
// IS_SANDBOX=1); in bypass it leaves the adapter's choice alone. In every
// mode it keeps the adapter from loading the project's .mcp.json. The other
// built-in agents get no _meta.
func TestClaudeACPSessionMeta(t *testing.T) {
	c, ok := acp.BuiltinConfig(acp.ClaudeACP)
	if !ok || c.SessionMeta == nil {
		t.Fatal("the claude-acp entry sets no session _meta")
	}
	for _, mode := range []string{"", "default", "dontAsk", "acceptEdits", "plan", "auto"} {
		m := c.SessionMeta(mode)
		opts, _ := m["claudeCode"].(map[string]any)["options"].(map[string]any)
		if v, ok := opts["allowDangerouslySkipPermissions"]; !ok || v != false || opts["strictMcpConfig"] != true {
			t.Errorf("mode %q: _meta = %v", mode, m)
		}
	}
	m := c.SessionMeta("bypassPermissions")
	opts, _ := m["claudeCode"].(map[string]any)["options"].(map[string]any)
	if _, ok := opts["allowDangerouslySkipPermissions"]; ok || opts["strictMcpConfig"] != true {
		t.Errorf("bypassPermissions: _meta = %v, want only strictMcpConfig (the project's .mcp.json is not the agent's to load)", m)
	}
	for _, name := range []string{acp.OpenCode, acp.Copilot} {
		if c, _ := acp.BuiltinConfig(name); c.SessionMeta != nil {
			t.Errorf("%s has a session _meta", name)
		}
	}
}
