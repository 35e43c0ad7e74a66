package acp_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/chirality/harness/acp"
	"github.com/chirality/harness/engine"
)

// OpenCodeEnv never lets OpenCode read the project's own configuration,
// and outside bypassPermissions asks before an edit of a protected path,
// keeping the user's own edit permission for everything else.
func TestOpenCodeEnv(t *testing.T) {
	edit := func(env []string) map[string]any {
		t.Helper()
		e, _ := openCodePermission(t, env)["edit"].(map[string]any)
		return e
	}
	req := engine.Request{Cwd: "/p", PermissionMode: "acceptEdits", Protected: []string{"/p/.chirality/", "/p/.mcp.json", "/state/"}}
	env := acp.OpenCodeEnv([]string{`OPENCODE_CONFIG_CONTENT={"model":"m","permission":{"edit":"ask","bash":"ask"}}`}, req)
	if !slices.Contains(env, "OPENCODE_DISABLE_PROJECT_CONFIG=1") {
		t.Fatalf("env %q: the project's opencode.json would be read", env)
	}
	e := edit(env)
	for pat, want := range map[string]string{"*": "ask", ".chirality/*": "ask", "*/.chirality/*": "ask", ".mcp.json": "ask", "*/.mcp.json": "ask", "state/*": "ask"} {
		if e[pat] != want {
			t.Errorf("edit[%q] = %v, want %s (edit %v)", pat, e[pat], want, e)
		}
	}
	if !strings.Contains(env[0], `"model":"m"`) || !strings.Contains(env[0], `"bash":"ask"`) {
		t.Errorf("the user's configuration was lost: %s", env[0])
	}
	if e := edit(acp.OpenCodeEnv(nil, req)); e["*"] != "allow" || e[".chirality/*"] != "ask" {
		t.Errorf("without a user config: edit %v", e)
	}
	req.PermissionMode = "bypassPermissions"
	env = acp.OpenCodeEnv(nil, req)
	if len(env) != 1 || env[0] != "OPENCODE_DISABLE_PROJECT_CONFIG=1" {
		t.Errorf("bypassPermissions: env %q, want the project's configuration off only", env)
	}
}

// openCodePermission is the "permission" object of env's
// OPENCODE_CONFIG_CONTENT (nil when there is none).
func openCodePermission(t *testing.T, env []string) map[string]any {
	t.Helper()
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "OPENCODE_CONFIG_CONTENT="); ok {
			var cfg map[string]any
			if err := json.Unmarshal([]byte(v), &cfg); err != nil {
				t.Fatal(err)
			}
			p, _ := cfg["permission"].(map[string]any)
			return p
		}
	}
	return nil
}
