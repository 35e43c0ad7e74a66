package claudecode_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chirality/harness/claudecode"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/event"
)

// TestRealCLISandboxEscapes: the real CLI, every tool call allowed
// (allowed by rule), sandboxed. The model tries to write outside the
// workdir in every way it can; only the kernel stands in the way, and
// each attempt comes back as a permission error in tool:result while a
// write inside the workdir still works.
func TestRealCLISandboxEscapes(t *testing.T) {
	r := newRealCLI(t)
	outside := t.TempDir()
	for _, d := range []string{".chirality", "agents", "src"} {
		if err := os.Mkdir(filepath.Join(r.cwd, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(r.cwd, "link")); err != nil {
		t.Fatal(err)
	}
	bashrc := filepath.Join(r.home, ".bashrc")
	if err := os.WriteFile(bashrc, []byte("# rc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(r.cwd, filepath.Join(outside, "parent"))
	if err != nil {
		t.Fatal(err)
	}
	escapes := map[string]string{
		"toolu_parent":    "echo x > " + rel,
		"toolu_abs":       "echo x > " + filepath.Join(outside, "abs"),
		"toolu_chirality": "echo x > .chirality/x",
		"toolu_agents":    "echo x > agents/x",
		// The CLI's own checks stop the plain forms of these two (a
		// sensitive file, a symlink out); these forms get past them.
		"toolu_bashrc":     "p=$(printf %s " + bashrc[:len(bashrc)-2] + " rc); echo x >> \"$p\"",
		"toolu_symlink":    "cd link && echo x > via-link",
		"toolu_grandchild": "sh -c 'echo x > " + filepath.Join(outside, "grandchild") + "'",
	}
	var blocks []claudetest.Block
	for id, cmd := range escapes {
		blocks = append(blocks, claudetest.ToolUse(id, "Bash", map[string]any{"command": cmd, "description": id}))
	}
	blocks = append(blocks,
		claudetest.ToolUse("toolu_write_abs", "Write", map[string]any{"file_path": filepath.Join(outside, "written"), "content": "x\n"}),
		claudetest.ToolUse("toolu_write_chirality", "Write", map[string]any{"file_path": filepath.Join(r.cwd, ".chirality", "w"), "content": "x\n"}),
		claudetest.ToolUse("toolu_inside", "Bash", map[string]any{"command": "echo inside > src/in.txt && cat src/in.txt", "description": "inside"}),
		claudetest.ToolUse("toolu_write_inside", "Write", map[string]any{"file_path": filepath.Join(r.cwd, "src", "w.txt"), "content": "w\n"}),
	)
	r.api.Script(claudetest.Reply{Blocks: blocks}, claudetest.TextReply("done"))
	evs, err := r.turn("s-sandbox", "escape", claudecode.TurnOpts{AllowedTools: []string{"Bash", "Write"}, Sandbox: true})
	if err != nil {
		t.Fatalf("turn failed: %v", err)
	}
	results := map[string]*event.ToolResult{}
	for _, e := range ofType(evs, event.TypeToolResult) {
		results[e.ToolResult.ToolUseID] = e.ToolResult
	}
	denied := []string{"toolu_write_abs", "toolu_write_chirality"}
	for id := range escapes {
		denied = append(denied, id)
	}
	for _, id := range denied {
		res := results[id]
		if res == nil {
			t.Errorf("%s: no tool:result", id)
			continue
		}
		if !res.IsError || !strings.Contains(strings.ToLower(res.Content), "permission denied") && !strings.Contains(res.Content, "EACCES") {
			t.Errorf("%s: tool:result %+v, want a permission error", id, res)
		}
	}
	for _, id := range []string{"toolu_inside", "toolu_write_inside"} {
		if res := results[id]; res == nil || res.IsError {
			t.Errorf("%s: tool:result %+v, want success", id, res)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(r.cwd, "src", "w.txt")); string(b) != "w\n" {
		t.Errorf("src/w.txt = %q, want the Write tool's content", b)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("written outside the workdir: %v", names(ents))
	}
	for _, p := range []string{".chirality/x", ".chirality/w", "agents/x"} {
		if _, err := os.Stat(filepath.Join(r.cwd, p)); err == nil {
			t.Errorf("%s was written", p)
		}
	}
	if b, _ := os.ReadFile(bashrc); string(b) != "# rc\n" {
		t.Errorf(".bashrc = %q", b)
	}
}

func names(ents []os.DirEntry) string {
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return fmt.Sprint(out)
}
