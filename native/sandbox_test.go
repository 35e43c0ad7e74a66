package native

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/mcpconfig"
	"github.com/chirality/harness/mcpconfig/mcptest"
)

// TestEngineSandboxedMCPServer: a sandboxed native turn starts its stdio
// MCP server in the kernel sandbox. The reference filesystem server,
// told it may write the workdir, a directory outside and the scratch
// HOME (so its own checks pass), is asked by the model to write outside,
// through a symlink planted in the workdir, and to ~/.bashrc: each fails
// with a permission error in tool:result; a write inside works.
func TestEngineSandboxedMCPServer(t *testing.T) {
	entry, err := mcptest.Find("@modelcontextprotocol/server-filesystem/dist/index.js")
	if err != nil {
		t.Fatal(err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal(err)
	}
	cwd, outside, home := t.TempDir(), t.TempDir(), t.TempDir()
	if err := os.Mkdir(filepath.Join(cwd, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(cwd, "link")); err != nil {
		t.Fatal(err)
	}
	bashrc := filepath.Join(home, ".bashrc")
	if err := os.WriteFile(bashrc, []byte("# rc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := mcptest.Config(mcpconfig.Server{Name: "fs", Type: mcpconfig.Stdio, Command: node, Args: []string{entry, cwd, outside, home}})
	write := func(p string) claudetest.Reply {
		return claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse("", "mcp__fs__write_file", map[string]any{"path": p, "content": "x\n"})}}
	}
	f := newFixture(t)
	f.api.Script(write(filepath.Join(outside, "abs")), write(filepath.Join(cwd, "link", "via-link")), write(bashrc),
		write(filepath.Join(cwd, "src", "inside.txt")), claudetest.TextReply("done"))
	e := newEngine(f)
	defer e.Shutdown(context.Background())
	tr, err := e.StartTurn(context.Background(), engine.Request{SessionKey: "s1", Message: "escape", Cwd: cwd, StateDir: t.TempDir(),
		MCP: cfg, PermissionMode: "dontAsk", AllowedTools: []string{"mcp__fs"}, Sandbox: true})
	if err != nil {
		t.Fatal(err)
	}
	evs := drain(t, tr)
	if s := evs[0].Init.MCPServers; len(s) != 1 || s[0].Status != "connected" {
		t.Fatalf("mcpServers %+v", s)
	}
	var results []*event.ToolResult
	for _, ev := range evs {
		if ev.Type == event.TypeToolResult {
			results = append(results, ev.ToolResult)
		}
	}
	if len(results) != 4 {
		t.Fatalf("%d tool:result events, want 4: %v", len(results), types(evs))
	}
	for i, r := range results[:3] {
		if !r.IsError || !strings.Contains(strings.ToLower(r.Content), "permission denied") && !strings.Contains(r.Content, "EACCES") {
			t.Errorf("escape %d: tool:result %+v, want a permission error", i, r)
		}
	}
	if r := results[3]; r.IsError {
		t.Errorf("the write inside: %+v", r)
	}
	if b, _ := os.ReadFile(filepath.Join(cwd, "src", "inside.txt")); string(b) != "x\n" {
		t.Errorf("src/inside.txt = %q", b)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("written outside the workdir: %d entries", len(ents))
	}
	if b, _ := os.ReadFile(bashrc); string(b) != "# rc\n" {
		t.Errorf(".bashrc = %q", b)
	}
}
