package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/session"
	"github.com/chirality/harness/worktree"
)

// writeEngine's turn "write <path> <text>" writes text to path under the
// turn's working directory, as an agent's Write tool would; "hold" waits
// for release first. It records each turn's Cwd.
type writeEngine struct {
	scriptEngine
	release chan struct{}
	cwdMu   sync.Mutex
	cwds    map[string]string // by session
}

func (w *writeEngine) Name() string { return "writer" }

func (w *writeEngine) StartTurn(ctx context.Context, req engine.Request) (engine.Turn, error) {
	if req.Message == "hold" {
		<-w.release
	}
	w.cwdMu.Lock()
	w.cwds[req.SessionKey] = req.Cwd
	w.cwdMu.Unlock()
	if rest, ok := strings.CutPrefix(req.Message, "write "); ok {
		path, text, _ := strings.Cut(rest, " ")
		p := filepath.Join(req.Cwd, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, []byte(text+"\n"), 0o644); err != nil {
			return nil, err
		}
	}
	return w.scriptEngine.StartTurn(ctx, req)
}

// newRepoEnv is a test harness on the writer engine whose root is a git
// repository on main with a.txt committed.
func newRepoEnv(t *testing.T) (*testEnv, *writeEngine) {
	t.Helper()
	we := &writeEngine{release: make(chan struct{}), cwds: map[string]string{}}
	e := newTestEnv(t, func(c *Config) { c.Engines = []engine.Engine{we} })
	writeFile(t, filepath.Join(e.root, "a.txt"), "a\n")
	userGitRoot(t, e.root, "init", "-q", "-b", "main")
	userGitRoot(t, e.root, "add", "a.txt")
	userGitRoot(t, e.root, "commit", "-q", "-m", "first")
	return e, we
}

func (e *testEnv) worktreeSession(spec SessionSpec) *session.Session {
	e.t.Helper()
	spec.ProjectRoot, spec.Mode, spec.Engine, spec.Isolation = e.root, "direct", "writer", session.IsolationWorktree
	s, err := e.h.NewSession(spec)
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	return strings.TrimSpace(userGitRoot(t, dir, args...))
}

// Ten worktree sessions of one repository run a turn each at once, each
// writing the same file differently: none sees another's file, the
// project's tree sees none, each diff shows its own only; merged one by
// one, the first lands (and the project's tree follows) and the next
// conflicts, named, with the target and the tree untouched.
func TestWorktreeSessionsRunIsolated(t *testing.T) {
	e, we := newRepoEnv(t)
	head := gitOut(t, e.root, "rev-parse", "HEAD")
	const n = 10
	ss := make([]*session.Session, n)
	for i := range ss {
		ss[i] = e.worktreeSession(SessionSpec{})
		s := ss[i]
		if s.Isolation != "worktree" || s.Branch != "harness/"+s.ID[:8] || s.Base != "main" || s.BaseCommit != head ||
			!filepath.IsAbs(s.Workdir) || strings.HasPrefix(s.Workdir, e.root+"/") {
			t.Fatalf("session %d = %+v", i, s)
		}
		if _, err := os.Stat(session.FilePath(e.root, s.ID)); err != nil {
			t.Fatalf("session file not under the project root: %v", err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i, s := range ss {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tr, err := e.h.StartTurn(context.Background(), TurnRequest{SessionID: s.ID, Message: fmt.Sprintf("write shared.txt from session %d", i)})
			if err != nil {
				errs <- err
				return
			}
			<-tr.Done()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i, s := range ss {
		if we.cwds[s.ID] != s.Workdir {
			t.Fatalf("turn %d ran in %q, want %q", i, we.cwds[s.ID], s.Workdir)
		}
		if got, _ := os.ReadFile(filepath.Join(s.Workdir, "shared.txt")); string(got) != fmt.Sprintf("from session %d\n", i) {
			t.Fatalf("session %d sees %q", i, got)
		}
		d, err := e.h.SessionDiff(context.Background(), s.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := []worktree.FileChange{{Path: "shared.txt", Status: "added", Additions: 1}}
		if !slices.Equal(d.Files, want) || d.Base != "main" || d.Branch != s.Branch ||
			!strings.Contains(d.Patch, fmt.Sprintf("+from session %d\n", i)) || strings.Count(d.Patch, "+from session") != 1 {
			t.Fatalf("diff %d = %+v", i, d)
		}
	}
	if _, err := os.Stat(filepath.Join(e.root, "shared.txt")); !os.IsNotExist(err) {
		t.Fatal("the project's tree saw a session's file")
	}

	ctx := context.Background()
	res, err := e.h.MergeSession(ctx, ss[0].ID, MergeOptions{Strategy: "squash", Message: "session 0"})
	if err != nil || !res.Merged || res.Into != "main" || res.Commit != gitOut(t, e.root, "rev-parse", "main") {
		t.Fatalf("first merge: %+v, %v", res, err)
	}
	if got, _ := os.ReadFile(filepath.Join(e.root, "shared.txt")); string(got) != "from session 0\n" {
		t.Fatalf("project tree after the merge: %q", got)
	}
	merged := gitOut(t, e.root, "rev-parse", "main")
	for i := 1; i < n; i++ {
		_, err := e.h.MergeSession(ctx, ss[i].ID, MergeOptions{Strategy: "merge", Message: "session"})
		var ce *MergeConflictError
		if !errors.As(err, &ce) || !errors.Is(err, ErrMergeConflict) || !slices.Equal(ce.Paths, []string{"shared.txt"}) {
			t.Fatalf("merge %d: %v", i, err)
		}
		if gitOut(t, e.root, "rev-parse", "main") != merged || gitOut(t, e.root, "status", "--porcelain", "--untracked-files=no") != "" {
			t.Fatalf("merge %d moved the target or touched the tree", i)
		}
	}
}

// Deleting: unmerged work refuses without force, a merged session goes
// without; either way the worktree and branch are gone. An orphan
// worktree (its session file removed) is cleaned at the next New.
func TestWorktreeDeleteAndOrphans(t *testing.T) {
	e, _ := newRepoEnv(t)
	ctx := context.Background()
	branchGone := func(b string) bool { return gitOut(t, e.root, "branch", "--list", b) == "" }

	a := e.worktreeSession(SessionSpec{Branch: "feature/a"})
	e.turn(a.ID, "write x.txt work")
	if err := e.h.DeleteSession(ctx, a.ID); !errors.Is(err, ErrUnmerged) {
		t.Fatalf("delete with unmerged work: %v", err)
	}
	if _, err := os.Stat(a.Workdir); err != nil {
		t.Fatal("a refused delete removed the worktree")
	}
	if err := e.h.DeleteSessionWith(ctx, a.ID, DeleteOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(a.Workdir); !os.IsNotExist(err) || !branchGone("feature/a") {
		t.Fatalf("forced delete left the worktree (%v) or the branch", err)
	}

	b := e.worktreeSession(SessionSpec{})
	e.turn(b.ID, "write y.txt merged")
	if _, err := e.h.MergeSession(ctx, b.ID, MergeOptions{Strategy: "rebase", Message: "y"}); err != nil {
		t.Fatal(err)
	}
	if err := e.h.DeleteSession(ctx, b.ID); err != nil {
		t.Fatalf("delete after merge: %v", err)
	}
	if _, err := os.Stat(b.Workdir); !os.IsNotExist(err) || !branchGone(b.Branch) {
		t.Fatal("delete left the worktree or the branch")
	}

	c := e.worktreeSession(SessionSpec{})
	if err := e.h.Store().Delete(c.ID); err != nil { // the session file goes, the worktree stays
		t.Fatal(err)
	}
	if _, err := os.Stat(c.Workdir); err != nil {
		t.Fatal(err)
	}
	e.open()
	if _, err := os.Stat(c.Workdir); !os.IsNotExist(err) || !branchGone(c.Branch) {
		t.Fatalf("orphan worktree not cleaned at start: %v", err)
	}
	if n := strings.Count(gitOut(t, e.root, "worktree", "list", "--porcelain"), "worktree "); n != 1 {
		t.Fatalf("%d worktrees registered, want the main one", n)
	}

	// An orphan where a harness before kept worktrees by default, inside
	// the state directory, goes too.
	legacy := e.cfg
	legacy.Worktrees.Dir = filepath.Join(e.h.Store().StateDir(), "worktrees")
	old := e.cfg
	e.cfg = legacy
	e.h = e.open()
	d := e.worktreeSession(SessionSpec{})
	if !strings.HasPrefix(d.Workdir, legacy.Worktrees.Dir) {
		t.Fatalf("worktree %s not in %s", d.Workdir, legacy.Worktrees.Dir)
	}
	if err := e.h.Store().Delete(d.ID); err != nil {
		t.Fatal(err)
	}
	e.cfg = old
	e.h = e.open()
	if _, err := os.Stat(d.Workdir); !os.IsNotExist(err) || !branchGone(d.Branch) {
		t.Fatalf("orphan worktree in the old default place not cleaned at start: %v", err)
	}
}

// Refusals: not a repository or a missing base (nothing written), an
// isolation option without isolation, a merge during a turn, a merge
// into a dirty tree, a diff of a session without a worktree, a fork of a
// worktree session (it would run outside the worktree).
func TestWorktreeRefusals(t *testing.T) {
	e, we := newRepoEnv(t)
	ctx := context.Background()
	plain := realDir(t)
	e.cfg.Roots = append(e.cfg.Roots, plain)
	e.h = e.open()
	if _, err := e.h.NewSession(SessionSpec{ProjectRoot: plain, Mode: "direct", Isolation: "worktree"}); !errors.Is(err, ErrNotGitRepo) {
		t.Fatalf("not a repo: %v", err)
	}
	if _, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct", Isolation: "worktree", Base: "no-such"}); !errors.Is(err, ErrBaseNotFound) {
		t.Fatalf("missing base: %v", err)
	}
	if _, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct", Base: "main"}); !errors.Is(err, ErrInvalidIsolation) {
		t.Fatalf("base without isolation: %v", err)
	}
	if _, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct", Isolation: "container"}); !errors.Is(err, ErrInvalidIsolation) {
		t.Fatalf("unknown isolation: %v", err)
	}
	if list, _ := e.h.ListSessions(""); len(list) != 0 {
		t.Fatalf("a refused create wrote %d sessions", len(list))
	}

	s := e.worktreeSession(SessionSpec{})
	held := make(chan error, 1)
	go func() {
		tr, err := e.h.StartTurn(ctx, TurnRequest{SessionID: s.ID, Message: "hold"})
		if err == nil {
			<-tr.Done()
		}
		held <- err
	}()
	waitFor(t, "the held turn", func() bool { return e.h.IsRunning(s.ID) })
	if _, err := e.h.MergeSession(ctx, s.ID, MergeOptions{}); !errors.Is(err, ErrBusy) {
		t.Fatalf("merge during a turn: %v", err)
	}
	close(we.release)
	if err := <-held; err != nil {
		t.Fatal(err)
	}

	e.turn(s.ID, "write z.txt z")
	writeFile(t, filepath.Join(e.root, "a.txt"), "edited by a person\n")
	head := gitOut(t, e.root, "rev-parse", "main")
	if _, err := e.h.MergeSession(ctx, s.ID, MergeOptions{}); !errors.Is(err, ErrDirtyTarget) {
		t.Fatalf("merge into a dirty tree: %v", err)
	}
	if gitOut(t, e.root, "rev-parse", "main") != head {
		t.Fatal("target moved")
	}

	p, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct", Engine: "writer"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.h.SessionDiff(ctx, p.ID); !errors.Is(err, ErrNotIsolated) {
		t.Fatalf("diff without a worktree: %v", err)
	}
	if _, err := e.h.Fork(ctx, s.ID, ForkOptions{}); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("fork of a worktree session: %v", err)
	}
}

// File checkpoints of a worktree session are of its worktree: a restore
// undoes the turn there, and the project's tree is untouched.
func TestWorktreeCheckpoints(t *testing.T) {
	e, _ := newRepoEnv(t)
	s := e.worktreeSession(SessionSpec{})
	evs, _ := e.turn(s.ID, "write a.txt changed")
	if _, err := e.h.RestoreFiles(context.Background(), s.ID, userMessageSeq(t, evs)); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(s.Workdir, "a.txt")); string(got) != "a\n" {
		t.Fatalf("worktree a.txt after restore: %q", got)
	}
	d, err := e.h.SessionDiff(context.Background(), s.ID)
	if err != nil || len(d.Files) != 0 {
		t.Fatalf("diff after restore: %+v, %v (the checkpoint store must not show)", d, err)
	}
}

// A worktree whose .git file was rewritten to name another git directory
// is refused with ErrWorktreeTampered, a conflict (409 at every door), and
// no git command runs through it.
func TestWorktreeTamperedIsAConflict(t *testing.T) {
	e, _ := newRepoEnv(t)
	s := e.worktreeSession(SessionSpec{})
	elsewhere := t.TempDir()
	userGitRoot(t, elsewhere, "init", "-q")
	if err := os.WriteFile(filepath.Join(s.Workdir, ".git"), []byte("gitdir: "+filepath.Join(elsewhere, ".git")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := e.h.SessionDiff(context.Background(), s.ID); !errors.Is(err, ErrWorktreeTampered) || !errors.Is(err, engine.ErrConflict) {
		t.Fatalf("diff through a rewritten .git file: %v; want ErrWorktreeTampered", err)
	}
}
