package runner_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/internal/gittest"
	"github.com/chirality/harness/runner"
)

// A runner with isolation "worktree" makes its session in a worktree;
// a cleared conversation's new session starts from the old one's branch
// with the old one's uncommitted work committed there, so nothing the
// agent did is left behind.
func TestCoreWorktreeCarriesWorkAcrossClear(t *testing.T) {
	e := newEnv(t, "")
	os.WriteFile(filepath.Join(e.root, "README.md"), []byte("# p\n"), 0o644)
	gittest.Init(t, e.root)
	c := e.core(engine.Anthropic, func(cfg *runner.Config) { cfg.Isolation, cfg.Base = "worktree", "main" })
	r := record(c)
	e.api.SetResponder(echo)
	if err := c.Start(context.Background(), "apples"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the first turn", func() bool { return r.endCount() == 1 })
	first, err := e.h.Session(c.SessionID())
	if err != nil {
		t.Fatal(err)
	}
	if first.Isolation != "worktree" || first.Base != "main" || first.Workdir == e.root {
		t.Fatalf("the runner's session: isolation %q base %q workdir %s", first.Isolation, first.Base, first.Workdir)
	}
	// The agent's work, not committed.
	os.WriteFile(filepath.Join(first.Workdir, "work.txt"), []byte("done\n"), 0o644)

	if err := c.Clear(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.SendPrompt("pears")
	waitFor(t, "the second turn", func() bool { return r.endCount() == 2 })
	second, err := e.h.Session(c.SessionID())
	if err != nil {
		t.Fatal(err)
	}
	if second.ID == first.ID || second.Base != first.Branch || second.Branch == first.Branch {
		t.Fatalf("the new session: base %q branch %q (the old one's branch %q)", second.Base, second.Branch, first.Branch)
	}
	if b, err := os.ReadFile(filepath.Join(second.Workdir, "work.txt")); err != nil || string(b) != "done\n" {
		t.Fatalf("the new session's worktree lacks the old one's work: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(e.root, "work.txt")); err == nil {
		t.Fatal("the work reached the project's tree")
	}
	stop(t, c)
}
