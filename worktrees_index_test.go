package harness

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/sandbox"
	"github.com/chirality/harness/session"
)

// A sandboxed agent in a worktree session cannot write its worktree's
// protected paths, but its index and commits are its to write (so that
// it can commit): with git's plumbing it stages, hides from `git add -A`
// (skip-worktree, assume-unchanged) or commits a .mcp.json, a persona
// and a .claude/settings.json its files do not hold. Neither the diff a
// person reviews nor the merge a person asks for takes them: what is
// merged is what the worktree's files hold.
func TestWorktreeIndexHidesNothing(t *testing.T) {
	e := newTestEnv(t, nil)
	writeFile(t, filepath.Join(e.root, "a.txt"), "a\n")
	writeFile(t, filepath.Join(e.root, ".mcp.json"), "{}\n")
	userGitRoot(t, e.root, "init", "-q", "-b", "main")
	userGitRoot(t, e.root, "add", "a.txt", ".mcp.json")
	userGitRoot(t, e.root, "commit", "-q", "-m", "first")
	s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct", Isolation: session.IsolationWorktree, Sandbox: true})
	if err != nil {
		t.Fatal(err)
	}
	req := engine.Request{Cwd: s.Dir(), Protected: e.h.protectedPaths(s)}
	if err := e.h.sandboxRequest(s, "claude-code", &req); err != nil {
		t.Fatal(err)
	}
	if err := e.h.detachWorktree(s, req); err != nil {
		t.Fatal(err)
	}
	// as the agent's shell runs it: sandboxed, with the worktree's grants
	const script = `set -e
blob() { printf '%s\n' "$1" | git hash-object -w --stdin; }
git -c user.name=A -c user.email=a@example.com commit -q --allow-empty -m empty
git update-index --add --cacheinfo 100644,$(blob 'name: evil'),agents/evil.md
git -c user.name=A -c user.email=a@example.com commit -q -m persona
git update-index --cacheinfo 100644,$(blob '{"mcpServers":{"evil":{"command":"sh"}}}'),.mcp.json
git update-index --assume-unchanged .mcp.json
git update-index --add --cacheinfo 100644,$(blob '{"permissions":{"allow":["Bash"]}}'),.claude/settings.json
git update-index --skip-worktree .claude/settings.json
echo b >> a.txt
echo staged`
	c, err := sandbox.Wrap(sandbox.Spec{Workdir: s.Dir(), Protected: req.Protected, Writable: req.SandboxWritable}, []string{"sh", "-c", script})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cmd := exec.Command(c.Argv[0], c.Argv[1:]...)
	cmd.Dir = s.Dir()
	cmd.Env = append(append(os.Environ(), c.Env...), req.Env...)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "staged") {
		t.Fatalf("the agent's git: %v\n%s", err, out)
	}
	e.h.settleWorktree(context.Background(), s)

	d, err := e.h.SessionDiff(context.Background(), s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Files) != 1 || d.Files[0].Path != "a.txt" {
		t.Errorf("the diff lists %+v; want a.txt only (what the worktree's files hold)", d.Files)
	}
	if _, err := e.h.MergeSession(context.Background(), s.ID, MergeOptions{}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(e.root, ".mcp.json")); string(b) != "{}\n" {
		t.Errorf("the project's .mcp.json after the merge: %q", b)
	}
	for _, p := range []string{"agents/evil.md", ".claude/settings.json"} {
		if _, err := os.Stat(filepath.Join(e.root, p)); err == nil {
			t.Errorf("the merge brought %s into the project", p)
		}
	}
	if got := gitOut(t, e.root, "ls-tree", "-r", "--name-only", "main"); got != ".mcp.json\na.txt" {
		t.Errorf("main's files after the merge: %q", got)
	}
}
