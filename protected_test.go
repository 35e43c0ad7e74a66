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
	"github.com/chirality/harness/session"
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

// worktreeWrite makes a worktree session (acceptEdits, a person asked
// where the rules say so, and a session rule allowing Write, as a
// person's "always" records it) in a new git project, and starts a turn
// whose agent Writes content to rel in the worktree once. It returns the
// approval requests waiting when one came, or none if the turn ended
// first.
func worktreeWrite(t *testing.T, rel, content string) (*testEnv, *session.Session, *Turn, []event.ApprovalRequested) {
	t.Helper()
	e := newTestEnv(t, func(c *Config) {
		c.Approvals = true
		c.PermissionMode = "acceptEdits"
		c.ApprovalTimeout = time.Minute
	})
	writeFile(t, filepath.Join(e.root, "a.txt"), "a\n")
	userGitRoot(t, e.root, "init", "-q", "-b", "main")
	userGitRoot(t, e.root, "add", "a.txt")
	userGitRoot(t, e.root, "commit", "-q", "-m", "first")
	s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct", Isolation: session.IsolationWorktree})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.h.trust.AddRule(s.ProjectRoot, s.ID, "Write"); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(s.Workdir, filepath.FromSlash(rel))
	e.api.SetResponder(func(r *claudetest.Request) claudetest.Reply {
		if strings.Contains(r.LastUserText(), "write the file") && len(r.ToolResults()) == 0 {
			return claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse("", "Write", map[string]any{"file_path": target, "content": content})}}
		}
		return claudetest.TextReply("done")
	})
	tr, err := e.h.StartTurn(context.Background(), TurnRequest{SessionID: s.ID, Message: "write the file"})
	if err != nil {
		t.Fatal(err)
	}
	return e, s, tr, askedOrEnded(t, e, s.ID, tr)
}

// askedOrEnded waits until turn tr of session id asks a person or ends,
// and returns the approval requests waiting (none when it ended first).
func askedOrEnded(t *testing.T, e *testEnv, id string, tr *Turn) []event.ApprovalRequested {
	t.Helper()
	var asked []event.ApprovalRequested
	waitFor(t, "an approval request or the turn's end", func() bool {
		asked = e.h.PendingApprovals(id)
		select {
		case <-tr.Done():
			return true
		default:
			return len(asked) > 0
		}
	})
	return asked
}

// A worktree session's own protected paths are protected as the project
// root's are, sandboxed or not: a Write of the worktree's agents/ is put
// to a person although a session rule allows Write (a merge would bring
// the file into the project), and the CLI does not write it unasked in
// acceptEdits (real CLI).
func TestProtectedWriteInWorktree(t *testing.T) {
	e, s, tr, asked := worktreeWrite(t, "agents/reviewer.md", "permission_mode: bypassPermissions")
	target := filepath.Join(s.Workdir, "agents", "reviewer.md")
	if len(asked) == 0 || asked[0].ToolName != "Write" {
		t.Fatalf("asked %+v; want the Write of the worktree's agents/ put to a person", asked)
	}
	if _, err := os.Stat(target); err == nil {
		t.Fatal("the persona file was written before a person answered")
	}
	if err := e.h.Approve(s.ID, asked[0].RequestID, ApprovalAnswer{Decision: "deny"}); err != nil {
		t.Fatal(err)
	}
	<-tr.Done()
	if _, err := os.Stat(target); err == nil {
		t.Fatal("the write ran although the person denied it")
	}
}

// A worktree session in the default place writes its own files as a
// session in the project does: under its rules, not put to a person. The
// worktrees were kept inside the state directory, a protected path, so
// every write of a worktree session was asked.
func TestWorktreeWritesFollowTheRules(t *testing.T) {
	e, s, tr, asked := worktreeWrite(t, "notes.txt", "notes\n")
	state, _ := filepath.EvalSymlinks(e.h.store.StateDir())
	if wd, _ := filepath.EvalSymlinks(s.Workdir); strings.HasPrefix(wd, state+string(filepath.Separator)) {
		t.Errorf("the worktree %s is inside the protected state directory %s", wd, state)
	}
	if len(asked) > 0 {
		e.h.Approve(s.ID, asked[0].RequestID, ApprovalAnswer{Decision: "deny"})
		<-tr.Done()
		t.Fatalf("asked %+v; want the worktree's own file written under its rules", asked)
	}
	if b, err := os.ReadFile(filepath.Join(s.Workdir, "notes.txt")); err != nil || string(b) != "notes\n" {
		t.Fatalf("notes.txt: %q %v", b, err)
	}
}
