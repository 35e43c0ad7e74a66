package agentserver

import (
	"encoding/json"
	"testing"

	"github.com/chirality/harness"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/internal/gittest"
)

// GET /sessions lists the project's sessions with the branch each
// worktree session works on, the served one marked current; GET
// /session shows the served session's worktree.
func TestSessionsListsWorktreeBranches(t *testing.T) {
	e := newEnv(t, engine.Anthropic, "")
	gittest.Init(t, e.root)
	wt, err := e.h.NewSession(harness.SessionSpec{ProjectRoot: e.root, Mode: "direct", Engine: engine.Anthropic, Isolation: "worktree", Branch: "feature/x"})
	if err != nil {
		t.Fatal(err)
	}
	code, body := e.get("/sessions")
	if code != 200 {
		t.Fatalf("GET /sessions: %d %s", code, body)
	}
	var list SessionList
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Sessions) != 2 {
		t.Fatalf("want 2 sessions, got %s", body)
	}
	seen := map[string]SessionItem{}
	for _, s := range list.Sessions {
		seen[s.SessionID] = s
	}
	if s := seen[wt.ID]; s.Isolation != "worktree" || s.Branch != "feature/x" || s.Base != "main" || s.Current {
		t.Errorf("the worktree session: %+v", s)
	}
	if s := seen[e.id]; !s.Current || s.Isolation != "" || s.Branch != "" {
		t.Errorf("the served session: %+v", s)
	}

	// Served, the worktree session's GET /session says where it works.
	e.id = wt.ID
	e.serve()
	code, body = e.get("/session")
	var v SessionView
	if err := json.Unmarshal([]byte(body), &v); code != 200 || err != nil {
		t.Fatalf("GET /session: %d %s", code, body)
	}
	if v.Isolation != "worktree" || v.Branch != "feature/x" || v.Workdir != wt.Workdir || v.Workdir == e.root {
		t.Errorf("GET /session of a worktree session: %+v (workdir want %s)", v, wt.Workdir)
	}
}
