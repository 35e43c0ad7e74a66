package codex_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chirality/harness/codex/codextest"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
)

// TestRealCodexSandboxEscapes: the real codex, no approval asked and its
// own sandbox off (bypassPermissions), run in the kernel sandbox. Each
// shell command that writes outside the workdir, or into its protected
// paths, fails with a permission error in tool:result; nothing lands
// outside; a write inside still works.
func TestRealCodexSandboxEscapes(t *testing.T) {
	g := newRig(t)
	cwd, outside := t.TempDir(), t.TempDir()
	for _, d := range []string{".chirality", "agents", "src"} {
		if err := os.Mkdir(filepath.Join(cwd, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(cwd, "link")); err != nil {
		t.Fatal(err)
	}
	bashrc := filepath.Join(g.home, ".bashrc")
	if err := os.WriteFile(bashrc, []byte("# rc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(cwd, filepath.Join(outside, "parent"))
	if err != nil {
		t.Fatal(err)
	}
	escapes := []string{
		"echo x > " + rel,
		"echo x > " + filepath.Join(outside, "abs"),
		"echo x > .chirality/x",
		"echo x > agents/x",
		"echo x >> " + bashrc,
		"echo x > link/via-link",
		"sh -c 'echo x > " + filepath.Join(outside, "grandchild") + "'",
	}
	var script []codextest.Reply
	for _, c := range escapes {
		script = append(script, codextest.Reply{Call: &codextest.Call{Command: c}})
	}
	script = append(script, codextest.Reply{Call: &codextest.Call{Command: "echo inside > src/in.txt && cat src/in.txt"}}, codextest.Reply{Text: "done"})
	g.fake.Script(script...)
	r := g.turn(t, engine.Request{Message: "escape", Cwd: cwd, PermissionMode: "bypassPermissions", Sandbox: true}, nil)
	if r.err != nil {
		t.Fatalf("turn: %v", r.err)
	}
	results := r.find(event.TypeToolResult)
	if len(results) != len(escapes)+1 {
		t.Fatalf("%d tool:result events, want %d: %v", len(results), len(escapes)+1, r.types())
	}
	for i, c := range escapes {
		res := results[i].ToolResult
		if !strings.Contains(strings.ToLower(res.Content), "permission denied") {
			t.Errorf("%q: tool:result %+v, want a permission error", c, res)
		}
	}
	if res := results[len(escapes)].ToolResult; res.IsError || !strings.Contains(res.Content, "inside") {
		t.Errorf("the write inside: %+v", res)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("written outside the workdir: %d entries", len(ents))
	}
	for _, p := range []string{".chirality/x", "agents/x"} {
		if _, err := os.Stat(filepath.Join(cwd, p)); err == nil {
			t.Errorf("%s was written", p)
		}
	}
	if b, _ := os.ReadFile(bashrc); string(b) != "# rc\n" {
		t.Errorf(".bashrc = %q", b)
	}
}
