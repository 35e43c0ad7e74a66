package gateway

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chirality/harness"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/internal/gittest"
)

type wtSession struct {
	ID        string `json:"id"`
	Isolation string `json:"isolation"`
	Workdir   string `json:"workdir"`
	Branch    string `json:"branch"`
	Base      string `json:"base"`
}

func (s *testServer) createWorktree(extra map[string]any) wtSession {
	s.t.Helper()
	body := map[string]any{"persona": nil, "isolation": "worktree"}
	for k, v := range extra {
		body[k] = v
	}
	code, out := s.createJSON(body)
	var env struct {
		Session wtSession `json:"session"`
	}
	if code != 201 || json.Unmarshal([]byte(out), &env) != nil {
		s.t.Fatalf("create: %d %s", code, out)
	}
	return env.Session
}

// Over HTTP, with the real Claude Code CLI writing a file with its Bash
// tool: the session runs in its worktree (GET shows isolation, workdir,
// branch, base), the diff shows the agent's file, a delete with unmerged
// work is 409, a merge into a dirty tree is 409, a clean merge lands in
// the project's tree, a conflicting one is 409 with its paths, and the
// refusals at creation are 422 / 400.
func TestWorktreeOverHTTP(t *testing.T) {
	plain := realDir(t)
	s := newServerWith(t, func(c *harness.Config) {
		c.AllowedTools = []string{"Bash"}
		c.Roots = append(c.Roots, plain)
	}, nil)
	if err := os.WriteFile(filepath.Join(s.root, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gittest.Init(t, s.root)
	s.api.SetResponder(func(r *claudetest.Request) claudetest.Reply {
		if len(r.ToolResults()) == 0 {
			return claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse("", "Bash",
				map[string]any{"command": "echo from the agent > agent.txt", "description": "write a file"})}}
		}
		return claudetest.TextReply("done")
	})

	ws := s.createWorktree(nil)
	if ws.Isolation != "worktree" || ws.Base != "main" || ws.Branch != "harness/"+ws.ID[:8] || !filepath.IsAbs(ws.Workdir) ||
		strings.HasPrefix(ws.Workdir, s.root) {
		t.Fatalf("created %+v", ws)
	}
	if code, out := s.do("GET", "/api/harness/session/"+ws.ID, ""); code != 200 || !strings.Contains(out, `"workdir":"`+ws.Workdir+`"`) ||
		!strings.Contains(out, `"branch":"`+ws.Branch+`"`) || !strings.Contains(out, `"isolation":"worktree"`) {
		t.Fatalf("GET session: %d %s", code, out)
	}
	s.turnSSE(ws.ID, "write a file")
	if got, err := os.ReadFile(filepath.Join(ws.Workdir, "agent.txt")); err != nil || string(got) != "from the agent\n" {
		t.Fatalf("agent.txt in the worktree: %q, %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(s.root, "agent.txt")); !os.IsNotExist(err) {
		t.Fatal("the agent wrote in the project's tree")
	}
	code, out := s.do("GET", "/api/harness/session/"+ws.ID+"/diff", "")
	var d struct {
		Base, Branch, Patch string
		Files               []struct {
			Path, Status         string
			Additions, Deletions int
		}
	}
	if code != 200 || json.Unmarshal([]byte(out), &d) != nil || d.Base != "main" || d.Branch != ws.Branch ||
		len(d.Files) != 1 || d.Files[0].Path != "agent.txt" || d.Files[0].Status != "added" || d.Files[0].Additions != 1 ||
		!strings.Contains(d.Patch, "+from the agent") {
		t.Fatalf("diff: %d %s", code, out)
	}
	if code, _ := s.do("DELETE", "/api/harness/session/"+ws.ID, ""); code != 409 {
		t.Fatalf("delete with unmerged work: %d", code)
	}

	if err := os.WriteFile(filepath.Join(s.root, "a.txt"), []byte("a person's edit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _ := s.do("POST", "/api/harness/session/"+ws.ID+"/merge", `{"strategy":"squash","message":"agent work"}`); code != 409 {
		t.Fatalf("merge into a dirty tree: %d", code)
	}
	gittest.Git(t, s.root, "checkout", "--", "a.txt")
	if code, _ := s.do("POST", "/api/harness/session/"+ws.ID+"/merge", `{"strategy":"octopus"}`); code != 400 {
		t.Fatalf("bad strategy: %d", code)
	}
	code, out = s.do("POST", "/api/harness/session/"+ws.ID+"/merge", `{"strategy":"squash","message":"agent work"}`)
	var res struct {
		Merged bool
		Commit string
	}
	if code != 200 || json.Unmarshal([]byte(out), &res) != nil || !res.Merged || res.Commit != gittest.Git(t, s.root, "rev-parse", "main") {
		t.Fatalf("merge: %d %s", code, out)
	}
	if got, _ := os.ReadFile(filepath.Join(s.root, "agent.txt")); string(got) != "from the agent\n" {
		t.Fatalf("project tree after merge: %q", got)
	}
	if gittest.Git(t, s.root, "log", "-1", "--format=%s") != "agent work" {
		t.Fatal("merge message not used")
	}
	if code, _ := s.do("DELETE", "/api/harness/session/"+ws.ID, ""); code != 204 {
		t.Fatalf("delete after merge: %d", code)
	}
	if _, err := os.Stat(ws.Workdir); !os.IsNotExist(err) {
		t.Fatal("worktree left after delete")
	}

	// Two sessions writing one file: the second merge conflicts.
	x, y := s.createWorktree(nil), s.createWorktree(map[string]any{"branch": "work/y", "base": "main"})
	for i, w := range []wtSession{x, y} {
		if err := os.WriteFile(filepath.Join(w.Workdir, "c.txt"), []byte{byte('0' + i), '\n'}, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if code, out := s.do("POST", "/api/harness/session/"+x.ID+"/merge", `{}`); code != 200 {
		t.Fatalf("merge x: %d %s", code, out)
	}
	head := gittest.Git(t, s.root, "rev-parse", "main")
	code, out = s.do("POST", "/api/harness/session/"+y.ID+"/merge", `{"strategy":"merge"}`)
	var conflict struct {
		Conflicts []string
	}
	if code != 409 || json.Unmarshal([]byte(out), &conflict) != nil || !slices.Equal(conflict.Conflicts, []string{"c.txt"}) {
		t.Fatalf("conflicting merge: %d %s", code, out)
	}
	if gittest.Git(t, s.root, "rev-parse", "main") != head {
		t.Fatal("a conflicting merge moved the target")
	}
	if code, _ := s.do("DELETE", "/api/harness/session/"+y.ID+"?force=1", ""); code != 204 {
		t.Fatalf("forced delete: %d", code)
	}
	if gittest.Git(t, s.root, "branch", "--list", "work/y") != "" {
		t.Fatal("branch left after delete")
	}

	for _, c := range []struct {
		body map[string]any
		code int
	}{
		{map[string]any{"projectRoot": plain}, 422},
		{map[string]any{"base": "no-such-ref"}, 422},
		{map[string]any{"isolation": "vm"}, 400},
		{map[string]any{"branch": "bad..name"}, 400},
	} {
		body := map[string]any{"persona": nil, "isolation": "worktree"}
		for k, v := range c.body {
			body[k] = v
		}
		if code, out := s.createJSON(body); code != c.code {
			t.Errorf("create %v: %d %s, want %d", c.body, code, out, c.code)
		}
	}
	plainID := sessionID(t, func() string { _, out := s.createJSON(map[string]any{"persona": nil}); return out }())
	if code, _ := s.do("GET", "/api/harness/session/"+plainID+"/diff", ""); code != 422 {
		t.Fatalf("diff of a session without a worktree: %d", code)
	}
}
