package codex_test

import (
	"strings"
	"testing"

	"github.com/chirality/harness/codex/codextest"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/sandbox/sandboxtest"
)

// TestRealCodexSandboxEscapes: the real codex, no approval asked and its
// own sandbox off (bypassPermissions), run in the kernel sandbox. Each
// shell command that writes outside the workdir, or into its protected
// paths, fails with a permission error in tool:result; nothing lands
// outside; a write inside still works.
func TestRealCodexSandboxEscapes(t *testing.T) {
	g := newRig(t)
	sc := sandboxtest.New(t, t.TempDir(), g.home)
	escapes := sc.Escapes(t)
	var script []codextest.Reply
	for _, c := range append(escapes, sandboxtest.Inside) {
		script = append(script, codextest.Reply{Call: &codextest.Call{Command: c}})
	}
	g.fake.Script(append(script, codextest.Reply{Text: "done"})...)
	r := g.turn(t, engine.Request{Message: "escape", Cwd: sc.Workdir, PermissionMode: "bypassPermissions", Sandbox: true}, nil)
	if r.err != nil {
		t.Fatalf("turn: %v", r.err)
	}
	results := r.find(event.TypeToolResult)
	if len(results) != len(escapes)+1 {
		t.Fatalf("%d tool:result events, want %d: %v", len(results), len(escapes)+1, r.types())
	}
	for i, c := range escapes {
		if res := results[i].ToolResult; !sandboxtest.Denied(res.Content) {
			t.Errorf("%q: tool:result %+v, want a permission error", c, res)
		}
	}
	if res := results[len(escapes)].ToolResult; res.IsError || !strings.Contains(res.Content, "inside") {
		t.Errorf("the write inside: %+v", res)
	}
	sc.Check(t)
}
