package acp_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chirality/harness/acp"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/sandbox/sandboxtest"
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
			cwd, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			sc := sandboxtest.New(t, cwd, t.TempDir())
			escapes := sc.Escapes(t)
			cmds := append(escapes, sandboxtest.Inside)
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
			e := realEngine(t, spec, cfg, fake, sc.Home)
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
			for i, c := range escapes {
				if !sandboxtest.Denied(results[i].Content) {
					t.Errorf("%q: tool:result %+v, want a permission error", c, results[i])
				}
			}
			if last := results[len(escapes)]; last.IsError || !strings.Contains(last.Content, "inside") {
				t.Errorf("the write inside: %+v", last)
			}
			sc.Check(t)
		})
	}
}
