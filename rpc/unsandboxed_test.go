package rpc

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chirality/harness"
	"github.com/chirality/harness/engines"
	"github.com/chirality/harness/event"
)

// approval.requested of a use that would run outside the agent's sandbox
// says unsandboxed and offers no "always"; any other offers all three
// and has no unsandboxed.
func TestApprovalRequestedUnsandboxed(t *testing.T) {
	f, out := newTestFollower(t)
	f.apply(event.Event{Type: event.TypeApprovalRequested, Approval: &event.ApprovalRequested{RequestID: "r1", ToolUseID: "t1", ToolName: "Bash", Input: json.RawMessage(`{"command":"git push"}`), Unsandboxed: true}})
	f.apply(event.Event{Type: event.TypeApprovalRequested, Approval: &event.ApprovalRequested{RequestID: "r2", ToolUseID: "t2", ToolName: "Bash", Input: json.RawMessage(`{"command":"ls"}`)}})
	asked := map[string]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m struct {
			Method string         `json:"method"`
			Params map[string]any `json:"params"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if m.Method == "approval.requested" {
			asked[m.Params["requestId"].(string)] = m.Params
		}
	}
	if p := asked["r1"]; p == nil || p["unsandboxed"] != true || !sameOptions(p["options"], "once", "reject") {
		t.Errorf("unsandboxed request: %v, want unsandboxed true and options once, reject", p)
	}
	if p := asked["r2"]; p == nil || p["unsandboxed"] != nil || !sameOptions(p["options"], "once", "always", "reject") {
		t.Errorf("sandboxed request: %v, want no unsandboxed and options once, always, reject", p)
	}
}

func sameOptions(v any, want ...string) bool {
	got, _ := v.([]any)
	if len(got) != len(want) {
		return false
	}
	for i := range want {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

// newTestFollower is a follower of a new thread's turn on a harness of
// its own; what it notifies is written to out.
func newTestFollower(t *testing.T) (*follower, *strings.Builder) {
	t.Helper()
	cwd, _ := filepath.EvalSymlinks(t.TempDir())
	h, err := harness.New(harness.Config{Roots: []string{cwd}, StateDir: t.TempDir(), NoProjectLogs: true, Engines: engines.Builtin(engines.Config{})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Shutdown(context.Background()) })
	out := new(strings.Builder)
	s, err := NewServer(h, out, Options{Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	res, _ := s.threadCreate(json.RawMessage(`{}`))
	tid := res.(deferred).result.(map[string]any)["thread"].(Thread).ThreadID
	return &follower{s: s, t: s.threads[tid], turn: Turn{TurnID: "turn_1", ThreadID: tid}, tools: map[string]toolItem{}, approvals: map[string]string{}}, out
}
