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
	"github.com/chirality/harness/sandbox/sandboxtest"
)

// TestRealCLISandboxEscapes: the real CLI, every tool call allowed by
// rule, sandboxed. The model tries to write outside the workdir in every
// way it can, with Bash and with Write; only the kernel stands in the
// way, and each attempt comes back as a permission error in tool:result
// while a write inside the workdir still works.
func TestRealCLISandboxEscapes(t *testing.T) {
	r := newRealCLI(t)
	sc := sandboxtest.New(t, r.cwd, r.home)
	var blocks []claudetest.Block
	var denied []string
	for i, c := range sc.Escapes(t) {
		id := fmt.Sprintf("toolu_escape%d", i)
		denied = append(denied, id)
		blocks = append(blocks, claudetest.ToolUse(id, "Bash", map[string]any{"command": c, "description": id}))
	}
	denied = append(denied, "toolu_write_abs", "toolu_write_chirality")
	blocks = append(blocks,
		claudetest.ToolUse("toolu_write_abs", "Write", map[string]any{"file_path": filepath.Join(sc.Outside, "written"), "content": "x\n"}),
		claudetest.ToolUse("toolu_write_chirality", "Write", map[string]any{"file_path": filepath.Join(r.cwd, ".chirality", "w"), "content": "x\n"}),
		claudetest.ToolUse("toolu_inside", "Bash", map[string]any{"command": sandboxtest.Inside, "description": "inside"}),
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
	for _, id := range denied {
		if res := results[id]; res == nil || !res.IsError || !sandboxtest.Denied(res.Content) {
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
	if _, err := os.Stat(filepath.Join(r.cwd, ".chirality", "w")); err == nil {
		t.Error(".chirality/w was written")
	}
	sc.Check(t)
}

// TestRealCLISandboxNetwork: the sandboxed CLI's model requests reach the
// fake API, and its Bash tool may dial the API's port, but a connection
// to another loopback port fails with a permission error in
// tool:result. With OpenNetwork the same connection is made.
func TestRealCLISandboxNetwork(t *testing.T) {
	r := newRealCLI(t)
	other, api := sandboxtest.Listen(t), sandboxtest.PortOf(t, r.api.URL)
	dial := func(id string, port int) claudetest.Block {
		return claudetest.ToolUse(id, "Bash", map[string]any{"command": sandboxtest.Connect(port), "description": id})
	}
	r.api.Script(claudetest.Reply{Blocks: []claudetest.Block{dial("toolu_other", other), dial("toolu_api", api)}}, claudetest.TextReply("done"),
		claudetest.Reply{Blocks: []claudetest.Block{dial("toolu_open", other)}}, claudetest.TextReply("done"))
	results := func(opts claudecode.TurnOpts) map[string]*event.ToolResult {
		t.Helper()
		evs, err := r.turn("s-net", "dial", opts)
		if err != nil {
			t.Fatalf("turn failed: %v", err)
		}
		if len(ofType(evs, event.TypeSessionComplete)) != 1 {
			t.Fatalf("the turn did not complete: its model requests did not all reach the API")
		}
		out := map[string]*event.ToolResult{}
		for _, e := range ofType(evs, event.TypeToolResult) {
			out[e.ToolResult.ToolUseID] = e.ToolResult
		}
		return out
	}
	res := results(claudecode.TurnOpts{AllowedTools: []string{"Bash"}, Sandbox: true})
	if r := res["toolu_other"]; r == nil || !r.IsError || !sandboxtest.Denied(r.Content) {
		t.Errorf("dial port %d: tool:result %+v, want a permission error", other, r)
	}
	if r := res["toolu_api"]; r == nil || r.IsError || !strings.Contains(r.Content, "connected") {
		t.Errorf("dial the API's port %d: tool:result %+v, want connected", api, r)
	}
	res = results(claudecode.TurnOpts{AllowedTools: []string{"Bash"}, Sandbox: true, OpenNetwork: true})
	if r := res["toolu_open"]; r == nil || r.IsError || !strings.Contains(r.Content, "connected") {
		t.Errorf("OpenNetwork: dial port %d: tool:result %+v, want connected", other, r)
	}
}
