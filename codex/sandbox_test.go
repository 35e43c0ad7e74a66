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

// TestRealCodexSandboxNetwork: the sandboxed codex reaches the fake API
// (the port of its config.toml's base_url) and its shell may dial that
// port, but a connection to another loopback port fails with a
// permission error in tool:result; with OpenNetwork it is made.
func TestRealCodexSandboxNetwork(t *testing.T) {
	g := newRig(t)
	other, api := sandboxtest.Listen(t), sandboxtest.PortOf(t, g.fake.URL)
	g.fake.Script(codextest.Reply{Call: &codextest.Call{Command: sandboxtest.Connect(other)}},
		codextest.Reply{Call: &codextest.Call{Command: sandboxtest.Connect(api)}}, codextest.Reply{Text: "done"},
		codextest.Reply{Call: &codextest.Call{Command: sandboxtest.Connect(other)}}, codextest.Reply{Text: "done"})
	turn := func(open bool, want int) []event.Event {
		t.Helper()
		r := g.turn(t, engine.Request{SessionKey: "s-net", Message: "dial", Cwd: t.TempDir(), PermissionMode: "bypassPermissions", Sandbox: true, OpenNetwork: open}, nil)
		if r.err != nil {
			t.Fatalf("turn: %v", r.err)
		}
		results := r.find(event.TypeToolResult)
		if len(results) != want {
			t.Fatalf("%d tool:result events, want %d: %v", len(results), want, r.types())
		}
		return results
	}
	results := turn(false, 2)
	if res := results[0].ToolResult; !sandboxtest.Denied(res.Content) {
		t.Errorf("dial port %d: tool:result %+v, want a permission error", other, res)
	}
	if res := results[1].ToolResult; res.IsError || !strings.Contains(res.Content, "connected") {
		t.Errorf("dial the API's port %d: tool:result %+v, want connected", api, res)
	}
	if res := turn(true, 1)[0].ToolResult; res.IsError || !strings.Contains(res.Content, "connected") {
		t.Errorf("OpenNetwork: dial port %d: tool:result %+v, want connected", other, res)
	}
}
