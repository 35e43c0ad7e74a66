package rpc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chirality/harness/internal/gittest"
)

// thread.create's isolation extension: refused at create (not at the
// first turn) outside a git repository or with a missing base; in a
// repository, the thread's turns run in a worktree of their own, so the
// real CLI's Bash tool writes there and not in the directory.
func TestThreadInWorktree(t *testing.T) {
	e := newEnv(t)
	wts := t.TempDir()
	e.cfg.Worktrees.Dir = wts
	e.api.SetResponder(touchResponder)
	c := e.start(t)
	defer c.close()
	if m := c.call(1, "thread.create", map[string]any{"isolation": "worktree"}); m.Error == nil || m.Error.Code != CodeInvalidParams ||
		!strings.Contains(m.Error.Message, "not in a git repository") {
		t.Fatalf("outside git: %s", m.raw)
	}
	if m := c.call(2, "thread.create", map[string]any{"isolation": "jail"}); m.Error == nil || m.Error.Code != CodeInvalidParams {
		t.Fatalf("unknown isolation: %s", m.raw)
	}
	os.WriteFile(filepath.Join(e.cwd, "a.txt"), []byte("a\n"), 0o644)
	gittest.Init(t, e.cwd)
	if m := c.call(3, "thread.create", map[string]any{"isolation": "worktree", "base": "nope"}); m.Error == nil || m.Error.Code != CodeInvalidParams ||
		!strings.Contains(m.Error.Message, "base not found") {
		t.Fatalf("missing base: %s", m.raw)
	}
	var created struct{ Thread Thread }
	c.result(4, "thread.create", map[string]any{"isolation": "worktree"}, &created)
	if created.Thread.Isolation != "worktree" {
		t.Fatalf("thread %+v", created.Thread)
	}
	c.result(5, "turn.start", map[string]any{"threadId": created.Thread.ThreadID, "input": []any{map[string]any{"type": "text", "text": "make a marker"}},
		"model": map[string]any{"providerID": "claude-code"}}, nil)
	req := c.next("approval.requested", isNote("approval.requested"))
	c.result(6, "approval.respond", map[string]any{"requestId": req.Params["requestId"], "decision": "once"}, nil)
	c.next("turn.completed", isNote("turn.completed"))
	if _, err := os.Stat(filepath.Join(e.cwd, "marker")); err == nil {
		t.Fatal("the tool ran in the directory, not the worktree")
	}
	found, _ := filepath.Glob(filepath.Join(wts, "*", "*", "marker"))
	if len(found) != 1 {
		t.Fatalf("marker in the worktree: %v", found)
	}
}
