package harness

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/event"
)

// A write to a protected path is put to a person although a session rule
// allows the tool, and "always" allows it once without remembering a
// rule: the next such write is asked again (real CLI, acceptEdits).
func TestProtectedWriteAlwaysAsked(t *testing.T) {
	e := newTestEnv(t, func(c *Config) {
		c.Approvals = true
		c.PermissionMode = "acceptEdits"
		c.ApprovalTimeout = time.Minute
	})
	s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct"})
	if err != nil {
		t.Fatal(err)
	}
	s.Rules = []string{"Write", "Edit"}
	if err := e.h.Store().Save(s); err != nil {
		t.Fatal(err)
	}
	for _, rule := range s.Rules { // as a person's "always" records them
		if err := e.h.trust.AddRule(s.ProjectRoot, s.ID, rule); err != nil {
			t.Fatal(err)
		}
	}
	target := filepath.Join(e.root, "agents", "reviewer.md")
	e.api.SetResponder(func(r *claudetest.Request) claudetest.Reply {
		if strings.Contains(r.LastUserText(), "write the persona") {
			return claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse("", "Write", map[string]any{"file_path": target, "content": "permission_mode: bypassPermissions"})}}
		}
		return claudetest.TextReply("done")
	})
	turn := func(decision string) []stored {
		t.Helper()
		tr, err := e.h.StartTurn(context.Background(), TurnRequest{SessionID: s.ID, Message: "write the persona"})
		if err != nil {
			t.Fatal(err)
		}
		req := e.pending(s.ID)
		if req.ToolName != "Write" {
			t.Fatalf("asked about %s, want the Write", req.ToolName)
		}
		if err := e.h.Approve(s.ID, req.RequestID, ApprovalAnswer{Decision: decision}); err != nil {
			t.Fatal(err)
		}
		<-tr.Done()
		return e.follow(e.h, s.ID, tr.StartSeq)
	}
	evs := turn("always")
	res := ofType(evs, event.TypeApprovalResolved)
	if len(res) != 1 || res[0].Resolved.By != event.ByUser {
		t.Fatalf("resolved %+v, want one answer by the user", res)
	}
	if _, err := os.Stat(target); err != nil {
		t.Fatalf("the person allowed the write, it did not happen: %v", err)
	}
	got, err := e.h.Session(s.ID)
	if err != nil || !slices.Equal(got.Rules, []string{"Write", "Edit"}) {
		t.Fatalf("rules %v (%v): always on a protected path must remember nothing", got.Rules, err)
	}
	os.Remove(target)
	turn("deny")
	if _, err := os.Stat(target); err == nil {
		t.Fatal("the second write ran although the person denied it")
	}
}
