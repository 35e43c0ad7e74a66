package acp_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chirality/harness/acp"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
)

type allowAll struct{}

func (allowAll) Ask(context.Context, engine.ApprovalRequest) engine.ApprovalDecision {
	return engine.ApprovalDecision{Allow: true}
}

// TestRealAgentsSandboxEscapes: opencode and claude-agent-acp, every
// tool call allowed by the approver, run in the kernel sandbox. The
// model's shell tries each way out of the workdir in turn; each fails
// with a permission error in tool:result and nothing appears outside,
// while a write inside works.
func TestRealAgentsSandboxEscapes(t *testing.T) {
	for _, name := range []string{acp.OpenCode, acp.ClaudeACP} {
		t.Run(name, func(t *testing.T) {
			spec, cfg, fake := realAgent(t, name)
			home := t.TempDir()
			cwd, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			outside := t.TempDir()
			for _, d := range []string{".chirality", "agents", "src"} {
				if err := os.Mkdir(filepath.Join(cwd, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Symlink(outside, filepath.Join(cwd, "link")); err != nil {
				t.Fatal(err)
			}
			bashrc := filepath.Join(home, ".bashrc")
			if err := os.WriteFile(bashrc, []byte("# rc\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			rel, err := filepath.Rel(cwd, filepath.Join(outside, "parent"))
			if err != nil {
				t.Fatal(err)
			}
			cmds := []string{
				"echo x > " + rel,
				"echo x > " + filepath.Join(outside, "abs"),
				"echo x > .chirality/x",
				"echo x > agents/x",
				"p=$(printf %s " + bashrc[:len(bashrc)-2] + " rc); echo x >> \"$p\"",
				"cd link && echo x > via-link",
				"sh -c 'echo x > " + filepath.Join(outside, "grandchild") + "'",
				"echo inside > src/in.txt && cat src/in.txt",
			}
			var mu sync.Mutex
			next := 0
			fake.SetResponder(func(r *claudetest.Request) claudetest.Reply {
				if len(r.Tools) == 0 {
					return claudetest.TextReply("A title")
				}
				mu.Lock()
				defer mu.Unlock()
				if next == len(cmds) {
					return claudetest.TextReply("done")
				}
				tool, in := spec.shell(cmds[next])
				next++
				return claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse("", tool, in)}}
			})
			e := realEngine(t, spec, cfg, fake, home)
			defer shutdownReal(t, e)
			tr, err := e.StartTurn(context.Background(), engine.Request{
				SessionKey: "s1", Message: "escape", Cwd: cwd, PermissionMode: "default", Approver: allowAll{}, Sandbox: true,
			})
			if err != nil {
				t.Fatal(err)
			}
			var results []*event.ToolResult
			for tr.Next() {
				if ev := tr.Event(); ev.Type == event.TypeToolResult {
					results = append(results, ev.ToolResult)
				}
			}
			_ = tr.Close()
			if err := tr.Err(); err != nil {
				t.Fatalf("turn: %v", err)
			}
			if len(results) != len(cmds) {
				t.Fatalf("%d tool:result events, want %d", len(results), len(cmds))
			}
			for i, c := range cmds[:len(cmds)-1] {
				if !strings.Contains(strings.ToLower(results[i].Content), "permission denied") {
					t.Errorf("%q: tool:result %+v, want a permission error", c, results[i])
				}
			}
			if last := results[len(cmds)-1]; last.IsError || !strings.Contains(last.Content, "inside") {
				t.Errorf("the write inside: %+v", last)
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
		})
	}
}
