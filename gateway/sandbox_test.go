package gateway

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chirality/harness"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/sandbox"
)

// The test binary is also the sandbox entry sandboxed agents start
// through (an init, not a TestMain: the package has none to share).
func init() { sandbox.Main() }

// Over HTTP: a session created with sandbox true says so, and its real
// Claude Code agent, its Bash tool allowed by rule, cannot write outside
// the project (a permission error in tool:result, nothing written) while
// a write inside works.
func TestSandboxOverHTTP(t *testing.T) {
	outside := t.TempDir()
	s := newServerWith(t, func(c *harness.Config) { c.AllowedTools = []string{"Bash"} }, nil)
	if err := os.Mkdir(filepath.Join(s.root, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmds := []string{"echo x > " + filepath.Join(outside, "abs"), "echo inside > src/in.txt"}
	s.api.SetResponder(func(r *claudetest.Request) claudetest.Reply {
		if n := len(r.ToolResults()); n < len(cmds) {
			return claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse("", "Bash", map[string]any{"command": cmds[n], "description": "write"})}}
		}
		return claudetest.TextReply("done")
	})
	code, out := s.createJSON(map[string]any{"persona": nil, "sandbox": true})
	if code != 201 || !strings.Contains(out, `"sandbox":true`) {
		t.Fatalf("create: %d %s", code, out)
	}
	id := between(out, `"id":"`, `"`)
	var results []*event.ToolResult
	for _, e := range s.turnSSE(id, "write") {
		if e.Event.Type == event.TypeToolResult {
			results = append(results, e.Event.ToolResult)
		}
	}
	if len(results) != 2 || !strings.Contains(strings.ToLower(results[0].Content), "permission denied") || results[1].IsError {
		t.Fatalf("tool:results %+v", results)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("written outside: %d entries", len(ents))
	}
	if b, _ := os.ReadFile(filepath.Join(s.root, "src", "in.txt")); string(b) != "inside\n" {
		t.Errorf("src/in.txt = %q", b)
	}
	if code, out := s.do("GET", "/api/harness/session/"+id, ""); code != 200 || !strings.Contains(out, `"sandbox":true`) {
		t.Errorf("GET session: %d %s", code, out)
	}
}

func between(s, from, to string) string {
	_, after, _ := strings.Cut(s, from)
	v, _, _ := strings.Cut(after, to)
	return v
}

// A kernel without Landlock refuses a sandboxed turn: 503, like a missing
// agent binary (the server's machine lacks it, not the request).
func TestSandboxUnavailableIs503(t *testing.T) {
	if got := statusOf(fmt.Errorf("turn: %w", harness.ErrSandboxUnavailable)); got != 503 {
		t.Errorf("statusOf = %d, want 503", got)
	}
}
