package worktree

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRewrittenCommondirRunsNothing: an agent that points its worktree's
// commondir at a repository of its own, whose configuration defines a
// textconv, clean/smudge filter, merge driver and external diff that
// write a marker, with a .gitattributes naming them, gets none of them
// run by the harness's Diff, Dirty, Commit, Settle, Unmerged, Merge and
// Remove; they work on the real repository, and commondir is restored.
func TestRewrittenCommondirRunsNothing(t *testing.T) {
	ctx := context.Background()
	root := newRepo(t)
	m := New(0)
	var repairs []string
	m.OnRepair = func(wt, what string) { repairs = append(repairs, wt+": "+what) }
	info := create(t, m, root, "w")
	gitDir, common, err := m.gitDirs(ctx, info.Dir)
	if err != nil {
		t.Fatal(err)
	}

	// the agent's commit on its detached HEAD, as in a sandboxed turn
	g, err := m.Grants(ctx, info.Dir, info.Branch)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Detach(ctx, info.Dir); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(info.Dir, "a.txt"), "two\n")
	if _, err := m.r.git(ctx, info.Dir, g.Env, "commit", "-qam", "two"); err != nil {
		t.Fatal(err)
	}

	// its repository: the real one's objects and refs, its configuration
	evil := filepath.Join(t.TempDir(), "evil.git")
	gitT(t, root, "clone", "-q", "--mirror", root, evil)
	marker := filepath.Join(t.TempDir(), "marker")
	run := "touch " + marker + "; "
	for k, v := range map[string]string{
		"diff.x.textconv":            "sh -c '" + run + "cat \"$0\"'",
		"filter.x.clean":             "sh -c '" + run + "cat'",
		"filter.x.smudge":            "sh -c '" + run + "cat'",
		"merge.x.driver":             run + "false",
		"diff.external":              "sh -c '" + run + "true'",
		"core.sshCommand":            run + "false",
		"core.fsmonitor":             run + "false",
		"core.pager":                 run + "cat",
		"core.editor":                run + "true",
		"sequence.editor":            run + "true",
		"core.askPass":               run + "true",
		"gc.auto":                    "1",
		"uploadpack.packObjectsHook": run + "false",
	} {
		gitT(t, evil, "config", k, v)
	}
	if err := os.WriteFile(filepath.Join(gitDir, "commondir"), []byte(evil+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(info.Dir, ".gitattributes"), "* diff=x filter=x merge=x\n")
	write(t, filepath.Join(info.Dir, "b.txt"), "new\n")

	// the attack is real: git left to find the repository runs the filter
	_, _ = m.r.git(ctx, info.Dir, nil, "add", "-A")
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the attacker's filter did not run when git found the repository itself (%v): the test proves nothing", err)
	}
	os.Remove(marker)
	if err := os.WriteFile(filepath.Join(gitDir, "commondir"), []byte(evil+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// GIT_COMMON_DIR alone overrides commondir (an agent may rewrite it
	// again while the harness runs git: Diff runs during a turn)
	p, err := pin(info.Dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.AdoptObjects(ctx, info.Dir); err != nil { // the agent's commit, as Diff does
		t.Fatal(err)
	}
	for _, args := range [][]string{{"status", "--porcelain"}, {"add", "-A"}, {"diff", "--cached"}, {"diff", "HEAD"}} {
		if err := os.WriteFile(filepath.Join(gitDir, "commondir"), []byte(evil+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := m.r.git(ctx, info.Dir, p.env(), args...); err != nil {
			t.Fatalf("git %v pinned: %v", args, err)
		}
		if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("git %v with GIT_DIR, GIT_COMMON_DIR and GIT_WORK_TREE set ran the agent's command", args)
		}
	}
	noMarker := func(step string) {
		t.Helper()
		if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s ran the agent's command (marker: %v)", step, err)
		}
		if b, _ := os.ReadFile(filepath.Join(gitDir, "commondir")); strings.TrimSpace(string(b)) != "../.." {
			t.Fatalf("%s: commondir is %q, not restored", step, b)
		}
		_ = os.WriteFile(filepath.Join(gitDir, "commondir"), []byte(evil+"\n"), 0o644) // and again
	}

	d, err := m.Diff(ctx, info.Dir, info.BaseCommit)
	if err != nil {
		t.Fatal(err)
	}
	noMarker("Diff")
	if len(repairs) != 1 || !strings.HasPrefix(repairs[0], info.Dir+": commondir") {
		t.Errorf("OnRepair told %q; want the commondir of %s once", repairs, info.Dir)
	}
	if !strings.Contains(d.Patch, "+two") || !strings.Contains(d.Patch, "+new") {
		t.Errorf("Diff patch misses the changes:\n%s", d.Patch)
	}
	if dirty, err := m.Dirty(ctx, info.Dir); err != nil || !dirty {
		t.Errorf("Dirty: %v, %v; want true", dirty, err)
	}
	noMarker("Dirty")
	if un, err := m.Unmerged(ctx, root, info.Dir, info.Branch, "HEAD"); err != nil || !un {
		t.Errorf("Unmerged: %v, %v; want true", un, err)
	}
	noMarker("Unmerged")
	moved, err := m.Settle(ctx, root, info.Dir, info.Branch)
	if err != nil || moved == "" || gitT(t, root, "rev-parse", info.Branch) != moved {
		t.Fatalf("Settle: %q, %v", moved, err)
	}
	noMarker("Settle")
	c, err := m.Commit(ctx, info.Dir, "rest")
	if err != nil || c == "" || gitT(t, root, "rev-parse", info.Branch) != c {
		t.Fatalf("Commit: %q, %v", c, err)
	}
	noMarker("Commit")
	if got := gitT(t, root, "show", c+":b.txt"); got != "new" {
		t.Errorf("committed b.txt = %q", got)
	}
	// a conflicting change on main, so that a merge driver would be asked
	write(t, filepath.Join(root, "a.txt"), "three\n")
	gitT(t, root, "commit", "-qam", "three")
	if _, err := m.Merge(ctx, MergeOptions{Top: root, Dir: info.Dir, Branch: info.Branch, Strategy: Merge}); !errors.Is(err, ErrConflict) {
		t.Errorf("Merge of a conflicting change: %v; want ErrConflict", err)
	}
	noMarker("Merge")
	gitT(t, root, "reset", "-q", "--hard", "HEAD~1")
	res, err := m.Merge(ctx, MergeOptions{Top: root, Dir: info.Dir, Branch: info.Branch, Strategy: Rebase})
	if err != nil || read(t, filepath.Join(root, "b.txt")) != "new\n" {
		t.Fatalf("Merge: %+v, %v", res, err)
	}
	noMarker("Merge (rebase)")
	if err := m.Remove(ctx, root, info.Dir, info.Branch); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Remove ran the agent's command (marker: %v)", err)
	}
	if _, err := os.Stat(filepath.Join(common, "worktrees", filepath.Base(gitDir))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the worktree's git directory is left after Remove: %v", err)
	}
}

// TestRedirectedDotGitRefused: a worktree's .git file naming a directory
// inside the worktree (a repository the agent made there) is refused.
func TestRedirectedDotGitRefused(t *testing.T) {
	ctx := context.Background()
	root := newRepo(t)
	m := New(0)
	info := create(t, m, root, "w")
	fake := filepath.Join(info.Dir, "sub", "fake")
	gitT(t, root, "clone", "-q", "--mirror", root, fake)
	if err := os.MkdirAll(filepath.Join(fake, "worktrees", "w"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(info.Dir, ".git"), "gitdir: "+filepath.Join(fake, "worktrees", "w")+"\n")
	if _, err := m.Diff(ctx, info.Dir, info.BaseCommit); !errors.Is(err, ErrTampered) {
		t.Errorf("Diff through a .git file naming the worktree's own repository: %v; want ErrTampered", err)
	}
	write(t, filepath.Join(info.Dir, ".git"), "nonsense\n")
	if _, err := m.Dirty(ctx, info.Dir); !errors.Is(err, ErrTampered) {
		t.Errorf("Dirty with a .git file of nonsense: %v; want ErrTampered", err)
	}
}

// TestDotGitElsewhereRefused: a .git file naming a repository the agent
// made outside its worktree, or another worktree's git directory, is
// refused where the harness knows the repository (Create's record, and
// Settle, Unmerged and Merge with a Manager that has none); a rewritten
// gitdir of the worktree's own is put back.
func TestDotGitElsewhereRefused(t *testing.T) {
	ctx := context.Background()
	root := newRepo(t)
	m := New(0)
	info := create(t, m, root, "w")
	other := create(t, m, root, "v")
	gitDir, _, err := m.gitDirs(ctx, info.Dir)
	if err != nil {
		t.Fatal(err)
	}
	otherGitDir, _, err := m.gitDirs(ctx, other.Dir)
	if err != nil {
		t.Fatal(err)
	}
	dotGit := filepath.Join(info.Dir, ".git")
	orig := read(t, dotGit)

	// its own gitdir rewritten: restored, and git works
	write(t, filepath.Join(gitDir, "gitdir"), "/nowhere/.git\n")
	if _, err := m.Dirty(ctx, info.Dir); err != nil {
		t.Fatalf("Dirty with a rewritten gitdir: %v", err)
	}
	if got := strings.TrimSpace(read(t, filepath.Join(gitDir, "gitdir"))); got != dotGit {
		t.Errorf("gitdir = %q after Dirty; want %q", got, dotGit)
	}

	// another worktree's git directory: refused, its gitdir untouched
	otherPtr := read(t, filepath.Join(otherGitDir, "gitdir"))
	write(t, dotGit, "gitdir: "+otherGitDir+"\n")
	if _, err := m.Dirty(ctx, info.Dir); !errors.Is(err, ErrTampered) {
		t.Errorf("Dirty through another worktree's git directory: %v; want ErrTampered", err)
	}
	if got := read(t, filepath.Join(otherGitDir, "gitdir")); got != otherPtr {
		t.Errorf("the other worktree's gitdir was rewritten to %q", got)
	}

	// a repository of the agent's outside the worktree
	evil := filepath.Join(t.TempDir(), "evil.git")
	gitT(t, root, "clone", "-q", "--mirror", root, evil)
	evilWT := filepath.Join(evil, "worktrees", filepath.Base(gitDir))
	if err := os.MkdirAll(evilWT, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(evilWT, "HEAD"), gitT(t, root, "rev-parse", "HEAD")+"\n")
	write(t, filepath.Join(evilWT, "gitdir"), dotGit+"\n")
	write(t, filepath.Join(evilWT, "commondir"), "../..\n")
	write(t, dotGit, "gitdir: "+evilWT+"\n")
	if _, err := m.Diff(ctx, info.Dir, info.BaseCommit); !errors.Is(err, ErrTampered) {
		t.Errorf("Diff through a repository outside the worktree, after Create: %v; want ErrTampered", err)
	}
	if _, err := m.Commit(ctx, info.Dir, "x"); !errors.Is(err, ErrTampered) {
		t.Errorf("Commit through a repository outside the worktree, after Create: %v; want ErrTampered", err)
	}
	fresh := New(0) // a harness started anew: no record
	if _, err := fresh.Settle(ctx, root, info.Dir, info.Branch); !errors.Is(err, ErrTampered) {
		t.Errorf("Settle through a repository outside the worktree: %v; want ErrTampered", err)
	}
	if _, err := fresh.Unmerged(ctx, root, info.Dir, info.Branch, "HEAD"); !errors.Is(err, ErrTampered) {
		t.Errorf("Unmerged through a repository outside the worktree: %v; want ErrTampered", err)
	}
	if _, err := fresh.Merge(ctx, MergeOptions{Top: root, Dir: info.Dir, Branch: info.Branch}); !errors.Is(err, ErrTampered) {
		t.Errorf("Merge through a repository outside the worktree: %v; want ErrTampered", err)
	}
	if err := fresh.Expect(ctx, root, info.Dir); !errors.Is(err, ErrTampered) {
		t.Errorf("Expect: %v; want ErrTampered", err)
	}

	// a repository of the agent's in place of the .git file
	if err := os.Remove(dotGit); err != nil {
		t.Fatal(err)
	}
	gitT(t, root, "clone", "-q", "--mirror", root, dotGit)
	if _, err := m.Dirty(ctx, info.Dir); !errors.Is(err, ErrTampered) {
		t.Errorf("Dirty with a repository for a .git file, after Create: %v; want ErrTampered", err)
	}
	if err := fresh.Expect(ctx, root, info.Dir); !errors.Is(err, ErrTampered) {
		t.Errorf("Expect with a repository for a .git file: %v; want ErrTampered", err)
	}
	if err := os.RemoveAll(dotGit); err != nil {
		t.Fatal(err)
	}

	// a repository found by its top's name (an orphan's, by the hash)
	write(t, dotGit, "gitdir: "+evilWT+"\n")
	if err := New(0).ExpectRepo(info.Dir, func(top string) bool { return top == root }); !errors.Is(err, ErrTampered) {
		t.Errorf("ExpectRepo through a repository outside the worktree: %v; want ErrTampered", err)
	}
	write(t, dotGit, orig)
	if err := New(0).ExpectRepo(info.Dir, func(top string) bool { return top == root }); err != nil {
		t.Errorf("ExpectRepo: %v", err)
	}

	// put back, all is well again
	write(t, dotGit, orig)
	if err := fresh.Expect(ctx, root, info.Dir); err != nil {
		t.Fatal(err)
	}
	if _, err := fresh.Diff(ctx, info.Dir, info.BaseCommit); err != nil {
		t.Fatal(err)
	}
}

// TestConfigWorktreeMovedAside: in a repository with
// extensions.worktreeConfig on, a config.worktree the agent wrote in its
// worktree's git directory (which git would read) runs nothing of the
// harness's.
func TestConfigWorktreeMovedAside(t *testing.T) {
	ctx := context.Background()
	root := newRepo(t)
	gitT(t, root, "config", "extensions.worktreeConfig", "true")
	m := New(0)
	info := create(t, m, root, "w")
	gitDir, _, err := m.gitDirs(ctx, info.Dir)
	if err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "marker")
	write(t, filepath.Join(gitDir, "config.worktree"), "[filter \"x\"]\n\tclean = \"sh -c 'touch "+marker+"; cat'\"\n")
	write(t, filepath.Join(info.Dir, ".gitattributes"), "* filter=x\n")
	write(t, filepath.Join(info.Dir, "b.txt"), "new\n")
	c, err := m.Commit(ctx, info.Dir, "b")
	if err != nil || c == "" {
		t.Fatalf("Commit: %q, %v", c, err)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Commit ran the filter of the agent's config.worktree (marker: %v)", err)
	}
	if _, err := os.Stat(filepath.Join(gitDir, "config.worktree")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("config.worktree left in place: %v", err)
	}
}
