package gateway

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chirality/harness"
	"github.com/chirality/harness/claudecode"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/engines"
)

// GET /health reports every engine and is ok when the server's default
// engine is available: a native-engine server without a Claude CLI is
// healthy (it reported ok:false before), a claude-code one is not.
func TestHealthPerEngine(t *testing.T) {
	noCLI := func(def string) func(*harness.Config) {
		return func(c *harness.Config) {
			c.DefaultEngine = def
			// a later engine of a name wins: claude-code without its binary
			c.Engines = engines.Builtin(engines.Config{ClaudeBinary: "/nonexistent/claude", Env: claudetest.ScratchEnv(t), ChildEnv: c.ChildEnv})
		}
	}
	for _, tc := range []struct {
		name, def string
		ok        bool
	}{
		{"native default", "anthropic", true},
		{"claude-code default", "claude-code", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServerWith(t, noCLI(tc.def), nil)
			code, out := s.do("GET", "/api/harness/health", "")
			var h harness.Health
			if code != 200 || json.Unmarshal([]byte(out), &h) != nil {
				t.Fatalf("health %d %s", code, out)
			}
			if h.OK != tc.ok || h.DefaultEngine != tc.def || h.ClaudeVersion != "" {
				t.Errorf("health %s", out)
			}
			byName := map[string]engine.Status{}
			for _, st := range h.Engines {
				byName[st.Name] = st
			}
			if cc := byName["claude-code"]; cc.Available || cc.Reason == "" {
				t.Errorf("claude-code without its binary: %+v", cc)
			}
			if a := byName["anthropic"]; !a.Available {
				t.Errorf("anthropic with a key: %+v", a)
			}
			if tc.ok != (h.Error == "") || (!tc.ok && !strings.HasPrefix(h.Error, "claude-code: ")) {
				t.Errorf("error %q", h.Error)
			}
		})
	}
	// With the CLI: ok, and its version.
	s := newServer(t, nil)
	code, out := s.do("GET", "/api/harness/health", "")
	var h harness.Health
	if code != 200 || json.Unmarshal([]byte(out), &h) != nil || !h.OK || h.ClaudeVersion != claudecode.TestedCLIVersion || h.DefaultEngine != "claude-code" || len(h.Engines) < 2 {
		t.Fatalf("health %d %s", code, out)
	}
}
