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
			cwd, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			sc := sandboxtest.New(t, cwd, t.TempDir())
			escapes := sc.Escapes(t)
			results := runSandboxed(t, name, cwd, sc.Home, false, func(*claudetest.FakeAPI) []string { return append(escapes, sandboxtest.Inside) })
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

// TestRealAgentsSandboxNetwork: each agent, sandboxed, reaches the fake
// model API (its turn completes) and its shell may dial the API's port,
// but a connection to another loopback port fails with a permission
// error in tool:result; with OpenNetwork that connection is made.
func TestRealAgentsSandboxNetwork(t *testing.T) {
	for _, name := range []string{acp.OpenCode, acp.ClaudeACP, acp.Copilot} {
		t.Run(name, func(t *testing.T) {
			other := sandboxtest.Listen(t)
			cmds := func(fake *claudetest.FakeAPI) []string {
				return []string{sandboxtest.Connect(other), sandboxtest.Connect(sandboxtest.PortOf(t, fake.URL))}
			}
			results := runSandboxed(t, name, t.TempDir(), t.TempDir(), false, cmds)
			if !sandboxtest.Denied(results[0].Content) {
				t.Errorf("dial port %d: tool:result %+v, want a permission error", other, results[0])
			}
			if r := results[1]; r.IsError || !strings.Contains(r.Content, "connected") {
				t.Errorf("dial the API's port: tool:result %+v, want connected", r)
			}
			results = runSandboxed(t, name, t.TempDir(), t.TempDir(), true, cmds)
			if r := results[0]; r.IsError || !strings.Contains(r.Content, "connected") {
				t.Errorf("OpenNetwork: dial port %d: tool:result %+v, want connected", other, r)
			}
		})
	}
}

// runSandboxed runs one sandboxed turn of the agent name in cwd with
// HOME home, every tool call allowed, the model running each of cmds
// (given the fake API) in the agent's shell in turn, and returns the
// tool:results, one per command.
func runSandboxed(t *testing.T, name, cwd, home string, openNet bool, cmds func(*claudetest.FakeAPI) []string) []*event.ToolResult {
	t.Helper()
	spec, cfg, fake := realAgent(t, name)
	todo := cmds(fake)
	var mu sync.Mutex
	next := 0
	fake.SetResponder(func(r *claudetest.Request) claudetest.Reply {
		if len(r.Tools) == 0 {
			return claudetest.TextReply("A title")
		}
		mu.Lock()
		defer mu.Unlock()
		if next == len(todo) {
			return claudetest.TextReply("done")
		}
		tool, in := spec.shell(todo[next])
		next++
		return claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse("", tool, in)}}
	})
	e := realEngine(t, spec, cfg, fake, home)
	defer shutdownReal(t, e)
	tr, err := e.StartTurn(context.Background(), engine.Request{
		SessionKey: "s1", Message: "run", Cwd: cwd, PermissionMode: "default", Approver: allowAll{}, Sandbox: true, OpenNetwork: openNet,
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
	if len(results) != len(todo) {
		t.Fatalf("%d tool:result events, want %d", len(results), len(todo))
	}
	return results
}
