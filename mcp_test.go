package harness

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/internal/secrets"
	"github.com/chirality/harness/mcpconfig"
)

// A turn's MCP servers are the project's .mcp.json, then the server's
// --mcp-config, then the persona's selection, variables expanded, and
// their secrets registered with the scrubber.
func TestTurnMCPServers(t *testing.T) {
	t.Setenv("HARNESS_TEST_MCP_TOKEN", "mcp-secret-9f8e7d6c5b4a")
	flag, err := mcpconfig.Parse([]byte(`{"mcpServers": {"b": {"command": "flag-b"}, "c": {"type": "http", "url": "http://127.0.0.1:1/mcp"}}}`), "--mcp-config")
	if err != nil {
		t.Fatal(err)
	}
	se := &scriptEngine{}
	e := newTestEnv(t, func(c *Config) { c.Engines = []engine.Engine{se}; c.MCP = flag })
	writeFile(t, filepath.Join(e.root, ".mcp.json"),
		`{"mcpServers": {"a": {"command": "proj-a", "env": {"TOKEN": "${HARNESS_TEST_MCP_TOKEN}"}}, "b": {"command": "proj-b"}}}`)
	trustProjectMCP(t, e.h, e.root) // a person trusted the project's servers
	writeFile(t, filepath.Join(e.root, "agents", "AGENT_PLAIN.md"), "---\nengine: script\n---\nBe brief.\n")
	writeFile(t, filepath.Join(e.root, "agents", "AGENT_PICKY.md"), "---\nengine: script\nmcp_servers:\n  - a\n  - own:\n      command: own-cmd\n---\nBe brief.\n")
	writeFile(t, filepath.Join(e.root, "agents", "AGENT_NONE.md"), "---\nengine: script\nmcp_servers: []\n---\nBe brief.\n")

	run := func(personaID string) engine.Request {
		t.Helper()
		s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Persona: personaID, Mode: "direct"})
		if err != nil {
			t.Fatal(err)
		}
		e.turn(s.ID, "hi")
		se.mu.Lock()
		defer se.mu.Unlock()
		return se.reqs[len(se.reqs)-1]
	}
	all := run("PLAIN").MCP
	if got := all.Names(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("PLAIN gets %v, want a b c", got)
	}
	a, _ := all.Get("a")
	b, _ := all.Get("b")
	if a.Env["TOKEN"] != "mcp-secret-9f8e7d6c5b4a" || b.Command != "flag-b" {
		t.Fatalf("a=%v env expanded? b=%v: --mcp-config wins over .mcp.json", a, b)
	}
	if got := secrets.Scrub("token mcp-secret-9f8e7d6c5b4a"); strings.Contains(got, "mcp-secret") {
		t.Fatalf("the env value is not registered with the scrubber: %q", got)
	}
	if got := run("PICKY").MCP.Names(); !slices.Equal(got, []string{"a", "own"}) {
		t.Fatalf("PICKY gets %v, want a own", got)
	}
	if got := run("NONE").MCP; got != nil {
		t.Fatalf("NONE gets %v, want none", got.Names())
	}

	// A broken .mcp.json stops the turn with an error naming the file.
	writeFile(t, filepath.Join(e.root, ".mcp.json"), `{"mcpServers": {"a": {"args": []}}}`)
	s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Persona: "PLAIN", Mode: "direct"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.h.StartTurn(t.Context(), TurnRequest{SessionID: s.ID, Message: "hi"})
	if !errors.Is(err, ErrInvalidMCPConfig) || !errors.Is(err, mcpconfig.ErrInvalid) || !strings.Contains(err.Error(), ".mcp.json: server \"a\"") {
		t.Fatalf("broken .mcp.json: %v", err)
	}
}
