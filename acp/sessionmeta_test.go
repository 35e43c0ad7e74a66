package acp_test

import (
	"reflect"
	"testing"

	"github.com/chirality/harness/acp"
	"github.com/chirality/harness/engine"
)

// Outside bypassPermissions the claude-acp entry tells the adapter never
// to let the CLI skip permissions (as root the CLI refuses that unless
// IS_SANDBOX=1) and gives the CLI the protected paths' ask rules; in every
// mode the CLI reads the user's settings only, never the project's, and
// it keeps the adapter from loading the project's .mcp.json. The other
// built-in agents get no _meta.
func TestClaudeACPSessionMeta(t *testing.T) {
	c, ok := acp.BuiltinConfig(acp.ClaudeACP)
	if !ok || c.SessionMeta == nil {
		t.Fatal("the claude-acp entry sets no session _meta")
	}
	options := func(m map[string]any) map[string]any {
		opts, _ := m["claudeCode"].(map[string]any)["options"].(map[string]any)
		return opts
	}
	for _, mode := range []string{"", "default", "dontAsk", "acceptEdits", "plan", "auto"} {
		m := c.SessionMeta(engine.Request{PermissionMode: mode, Cwd: "/p", Protected: []string{"/p/.chirality/", "/p/.mcp.json"}})
		opts := options(m)
		if v, ok := opts["allowDangerouslySkipPermissions"]; !ok || v != false || opts["strictMcpConfig"] != true {
			t.Errorf("mode %q: _meta = %v", mode, m)
		}
		if opts["promptSuggestions"] != false {
			t.Errorf("mode %q: promptSuggestions %v, want false", mode, opts["promptSuggestions"])
		}
		if src := opts["settingSources"]; !reflect.DeepEqual(src, []string{"user"}) {
			t.Errorf("mode %q: settingSources %v", mode, src)
		}
		ask := opts["settings"].(map[string]any)["permissions"].(map[string]any)["ask"]
		if !reflect.DeepEqual(ask, []string{"Edit(//p/.chirality/**)", "Edit(//p/.mcp.json)"}) {
			t.Errorf("mode %q: ask rules %v", mode, ask)
		}
	}
	opts := options(c.SessionMeta(engine.Request{PermissionMode: "bypassPermissions"}))
	if _, set := opts["allowDangerouslySkipPermissions"]; set || !reflect.DeepEqual(opts["settingSources"], []string{"user"}) || opts["settings"] != nil || opts["strictMcpConfig"] != true {
		t.Errorf("bypassPermissions: options = %v, want the user's settings only", opts)
	}
	for _, name := range []string{acp.OpenCode, acp.Copilot} {
		if c, _ := acp.BuiltinConfig(name); c.SessionMeta != nil {
			t.Errorf("%s has a session _meta", name)
		}
	}
}
