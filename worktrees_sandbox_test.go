package harness

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/codex/codextest"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/sandbox/sandboxtest"
	"github.com/chirality/harness/session"
)

// TestSandboxWorktreeCommit: the real Claude Code, sandboxed in a
// worktree session, commits with Bash `git commit -am`: the commit lands
// on the session's branch, seen from the project's repository after the
// turn, and the worktree is on its branch again. Its attempts on the rest
// of the repository's .git — its config, a hook, the main branch's ref
// (by git and by hand), another session's harness/* branch (update-ref,
// the ref file by hand, `git branch -f`), its own branch's ref,
// packed-refs, gc, the shared objects — each fail with a permission
// error, and none changed anything.
func TestSandboxWorktreeCommit(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.AllowedTools = []string{"Bash"} })
	writeFile(t, filepath.Join(e.root, "a.txt"), "a\n")
	userGitRoot(t, e.root, "init", "-q", "-b", "main")
	userGitRoot(t, e.root, "add", "a.txt")
	userGitRoot(t, e.root, "commit", "-q", "-m", "first")
	git := filepath.Join(e.root, ".git")
	mainTip := gitOut(t, e.root, "rev-parse", "main")
	config, _ := os.ReadFile(filepath.Join(git, "config"))
	s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct", Isolation: session.IsolationWorktree, Sandbox: true})
	if err != nil {
		t.Fatal(err)
	}
	other, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct", Isolation: session.IsolationWorktree})
	if err != nil {
		t.Fatal(err)
	}
	otherRef := "refs/heads/" + other.Branch
	gitOut(t, other.Workdir, "checkout", "-q", "--detach") // as in a sandboxed turn of its own: `git branch -f` would not refuse it
	const commit = "echo more >> a.txt && git -c user.name=A -c user.email=a@example.com commit -qam 'agent commit' && git log -1 --format=%s"
	// the repository's .git as the agent finds it (a literal path outside
	// the workdir is refused by Claude Code's own checks first)
	const g = `g=$(git rev-parse --path-format=absolute --git-common-dir) && `
	denied := map[string]string{
		"toolu_config":    g + `echo '[core]' >> "$g/config"`,
		"toolu_hook":      g + `echo 'exit 0' > "$g/hooks/pre-commit"`,
		"toolu_updateref": "git update-ref refs/heads/main HEAD",
		"toolu_mainref":   g + "echo " + strings.Repeat("0", 40) + ` > "$g/refs/heads/main"`,
		"toolu_packrefs":  "git pack-refs --all",
		"toolu_other":     "git update-ref " + otherRef + " HEAD",
		"toolu_otherfile": g + `git rev-parse HEAD > "$g/` + otherRef + `"`,
		"toolu_otherf":    "git branch -f " + other.Branch + " HEAD",
		"toolu_ownref":    "git update-ref refs/heads/" + s.Branch + " HEAD~1",
		"toolu_gc":        "git gc --prune=now",
		"toolu_objects":   g + `rm -rf "$g/objects/pack" "$g/objects/` + mainTip[:2] + `"`,
	}
	blocks := []claudetest.Block{claudetest.ToolUse("toolu_commit", "Bash", map[string]any{"command": commit, "description": "commit"})}
	for id, c := range denied {
		blocks = append(blocks, claudetest.ToolUse(id, "Bash", map[string]any{"command": c, "description": id}))
	}
	e.api.Script(claudetest.Reply{Blocks: blocks}, claudetest.TextReply("done"))
	evs, _ := e.turn(s.ID, "commit")
	results := map[string]*event.ToolResult{}
	for _, ev := range ofType(evs, event.TypeToolResult) {
		results[ev.ToolResult.ToolUseID] = ev.ToolResult
	}
	if r := results["toolu_commit"]; r == nil || r.IsError || !strings.Contains(r.Content, "agent commit") {
		t.Fatalf("the commit: tool:result %+v", r)
	}
	for id, c := range denied {
		if r := results[id]; r == nil || !r.IsError || !sandboxtest.Denied(r.Content) {
			t.Errorf("%q: tool:result %+v, want a permission error", c, r)
		}
	}
	s, err = e.h.Session(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got := gitOut(t, e.root, "log", "-1", "--format=%s", s.Branch); got != "agent commit" {
		t.Errorf("branch %s's tip, seen from the project: %q, want the agent's commit", s.Branch, got)
	}
	if got := gitOut(t, e.root, "rev-parse", "main"); got != mainTip {
		t.Errorf("main moved: %s, was %s", got, mainTip)
	}
	if got := gitOut(t, e.root, "rev-parse", otherRef); got != mainTip {
		t.Errorf("the other session's branch %s moved: %s, was %s", other.Branch, got, mainTip)
	}
	if got := gitOut(t, s.Workdir, "symbolic-ref", "HEAD"); got != "refs/heads/"+s.Branch {
		t.Errorf("the worktree's HEAD after the turn: %q, want its branch", got)
	}
	if b, _ := os.ReadFile(filepath.Join(git, "config")); string(b) != string(config) {
		t.Errorf(".git/config changed:\n%s", b)
	}
	if _, err := os.Stat(filepath.Join(git, "hooks", "pre-commit")); err == nil {
		t.Error(".git/hooks/pre-commit was written")
	}
	if _, err := os.Stat(filepath.Join(git, "packed-refs")); err == nil {
		t.Error("packed-refs was written")
	}
	userGitRoot(t, e.root, "fsck", "--no-progress") // every object of every branch is there
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := e.h.SessionDiff(ctx, s.ID)
	if err != nil || len(d.Files) != 1 || d.Files[0].Path != "a.txt" || !strings.Contains(d.Patch, "+more") {
		t.Errorf("diff %+v, %v; want a.txt's committed line", d, err)
	}
}

// Codex in default mode (a person asked) in a worktree session reads and
// writes its worktree: a command a person allows copies a.txt there. Its
// permission profile denies reading and writing the protected paths,
// the state directory among them, where worktrees were once kept.
func TestCodexWorktreeSession(t *testing.T) {
	e, fake := codexEnv(t)
	writeFile(t, filepath.Join(e.root, "a.txt"), "a\n")
	userGitRoot(t, e.root, "init", "-q", "-b", "main")
	userGitRoot(t, e.root, "add", "a.txt")
	userGitRoot(t, e.root, "commit", "-q", "-m", "first")
	s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct", Engine: "codex", Isolation: session.IsolationWorktree})
	if err != nil {
		t.Fatal(err)
	}
	mode := "default"
	if _, err := e.h.UpdateSession(s.ID, SessionUpdate{PermissionMode: &mode}); err != nil {
		t.Fatal(err)
	}
	fake.Script(codextest.Reply{Call: &codextest.Call{Command: "cat a.txt > copy.txt"}}, codextest.Reply{Text: "copied"})
	tr, err := e.h.StartTurn(context.Background(), TurnRequest{SessionID: s.ID, Message: "copy a.txt"})
	if err != nil {
		t.Fatal(err)
	}
	asked := askedOrEnded(t, e, s.ID, tr)
	if len(asked) == 0 {
		t.Fatalf("the turn ended without asking: %v\n%v", tr.Err(), logEvents(t, e, e.h, s.ID))
	}
	if err := e.h.Approve(s.ID, asked[0].RequestID, ApprovalAnswer{Decision: "allow"}); err != nil {
		t.Fatal(err)
	}
	<-tr.Done()
	if b, err := os.ReadFile(filepath.Join(s.Workdir, "copy.txt")); err != nil || string(b) != "a\n" {
		t.Fatalf("copy.txt in the worktree: %q %v", b, err)
	}
}
