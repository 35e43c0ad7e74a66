package worktree

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// gitT runs git in dir for a test, with the package's environment.
func gitT(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := runner{}.git(context.Background(), dir, nil, args...)
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

// newRepo makes a repository on branch main with one commit of a.txt.
func newRepo(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	gitT(t, dir, "init", "-q", "-b", "main")
	write(t, filepath.Join(dir, "a.txt"), "one\n")
	gitT(t, dir, "add", "a.txt")
	gitT(t, dir, "commit", "-q", "-m", "first")
	return dir
}

func write(t testing.TB, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func create(t *testing.T, m *Manager, root, name string) *Info {
	t.Helper()
	info, err := m.Create(context.Background(), CreateOptions{ProjectRoot: root, Dir: filepath.Join(t.TempDir(), name), Branch: "harness/" + name})
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func TestCreateDiffMerge(t *testing.T) {
	ctx := context.Background()
	m := New(0)
	root := newRepo(t)
	info := create(t, m, root, "s1")
	if info.Base != "main" || info.BaseCommit != gitT(t, root, "rev-parse", "HEAD") || info.Workdir != info.Dir {
		t.Fatalf("info = %+v", info)
	}
	// A committed change, an uncommitted one, an untracked file and the
	// harness's own state (which must not show).
	write(t, filepath.Join(info.Dir, "a.txt"), "one\ntwo\n")
	gitT(t, info.Dir, "commit", "-q", "-am", "two")
	write(t, filepath.Join(info.Dir, "a.txt"), "one\ntwo\nthree\n")
	write(t, filepath.Join(info.Dir, "new.txt"), "x\n")
	write(t, filepath.Join(info.Dir, ".chirality", "checkpoints", "junk"), "state\n")
	d, err := m.Diff(ctx, info.Dir, info.BaseCommit)
	if err != nil {
		t.Fatal(err)
	}
	want := []FileChange{{Path: "a.txt", Status: "modified", Additions: 2}, {Path: "new.txt", Status: "added", Additions: 1}}
	if !slices.Equal(d.Files, want) {
		t.Fatalf("files = %+v, want %+v", d.Files, want)
	}
	if !strings.Contains(d.Patch, "+three") || !strings.Contains(d.Patch, "+x") || strings.Contains(d.Patch, "junk") {
		t.Fatalf("patch = %s", d.Patch)
	}
	// The worktree's own index is untouched by Diff.
	if st := gitT(t, info.Dir, "status", "--porcelain", "--", "new.txt"); st != "?? new.txt" {
		t.Fatalf("status after diff = %q", st)
	}
	// The project's tree never saw any of it.
	if read(t, filepath.Join(root, "a.txt")) != "one\n" {
		t.Fatal("project changed")
	}

	res, err := m.Merge(ctx, MergeOptions{Top: root, Dir: info.Dir, Branch: info.Branch, Strategy: Squash, Message: "session s1"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Into != "main" || gitT(t, root, "rev-parse", "main") != res.Commit {
		t.Fatalf("result %+v", res)
	}
	if read(t, filepath.Join(root, "a.txt")) != "one\ntwo\nthree\n" || read(t, filepath.Join(root, "new.txt")) != "x\n" {
		t.Fatal("main working tree not updated")
	}
	if _, err := os.Stat(filepath.Join(root, ".chirality")); err == nil {
		t.Fatal("harness state merged")
	}
	if un, err := m.Unmerged(ctx, root, info.Dir, info.Branch, "HEAD"); err != nil || un {
		t.Fatalf("unmerged after squash = %v, %v", un, err)
	}
	if err := m.Remove(ctx, root, info.Dir, info.Branch); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(info.Dir); !os.IsNotExist(err) {
		t.Fatalf("worktree still there: %v", err)
	}
	if out, _ := (runner{}).out(ctx, root, "branch", "--list", info.Branch); out != "" {
		t.Fatalf("branch still there: %q", out)
	}
}

func TestMergeConflictLeavesTargetUntouched(t *testing.T) {
	ctx := context.Background()
	for _, strategy := range []string{Squash, Merge, Rebase} {
		t.Run(strategy, func(t *testing.T) {
			m := New(0)
			root := newRepo(t)
			a, b := create(t, m, root, "a"), create(t, m, root, "b")
			write(t, filepath.Join(a.Dir, "a.txt"), "from a\n")
			write(t, filepath.Join(b.Dir, "a.txt"), "from b\n")
			if _, err := m.Merge(ctx, MergeOptions{Top: root, Dir: a.Dir, Branch: a.Branch, Strategy: strategy, Message: "a"}); err != nil {
				t.Fatal(err)
			}
			head := gitT(t, root, "rev-parse", "main")
			_, err := m.Merge(ctx, MergeOptions{Top: root, Dir: b.Dir, Branch: b.Branch, Strategy: strategy, Message: "b"})
			paths, ok := IsConflict(err)
			if !ok || !slices.Equal(paths, []string{"a.txt"}) || !errors.Is(err, ErrConflict) {
				t.Fatalf("err = %v, paths %v", err, paths)
			}
			if gitT(t, root, "rev-parse", "main") != head || read(t, filepath.Join(root, "a.txt")) != "from a\n" {
				t.Fatal("target moved")
			}
			if st := gitT(t, root, "status", "--porcelain"); st != "" {
				t.Fatalf("main tree dirty: %q", st)
			}
			if un, _ := m.Unmerged(ctx, root, b.Dir, b.Branch, "HEAD"); !un {
				t.Fatal("conflicting branch counted as merged")
			}
			if strategy == Merge && gitT(t, root, "rev-list", "--count", "--merges", "main") != "1" {
				t.Fatal("no merge commit")
			}
		})
	}
}

func TestMergeRefusesDirtyTarget(t *testing.T) {
	ctx := context.Background()
	m := New(0)
	root := newRepo(t)
	a := create(t, m, root, "a")
	write(t, filepath.Join(a.Dir, "b.txt"), "b\n")
	write(t, filepath.Join(root, "a.txt"), "local edit\n")
	head := gitT(t, root, "rev-parse", "main")
	if _, err := m.Merge(ctx, MergeOptions{Top: root, Dir: a.Dir, Branch: a.Branch}); !errors.Is(err, ErrDirty) {
		t.Fatalf("err = %v", err)
	}
	if gitT(t, root, "rev-parse", "main") != head || read(t, filepath.Join(root, "a.txt")) != "local edit\n" {
		t.Fatal("target touched")
	}
	gitT(t, root, "branch", "other")
	// A message over MaxMessage or with a NUL (git takes it as an
	// argument) is refused before anything is committed or merged.
	for _, msg := range []string{strings.Repeat("m", MaxMessage+1), "a\x00b"} {
		if _, err := m.Merge(ctx, MergeOptions{Top: root, Dir: a.Dir, Branch: a.Branch, Into: "other", Message: msg}); !errors.Is(err, ErrBadMessage) {
			t.Fatalf("message of %d bytes: err = %v, want ErrBadMessage", len(msg), err)
		}
	}
	if gitT(t, root, "rev-parse", "other") != head || gitT(t, root, "rev-parse", a.Branch) != head {
		t.Fatal("a refused message still committed or merged")
	}
	// Into a branch not checked out: allowed, the main tree untouched.
	res, err := m.Merge(ctx, MergeOptions{Top: root, Dir: a.Dir, Branch: a.Branch, Into: "other", Strategy: Merge})
	if err != nil || res.Into != "other" {
		t.Fatalf("into other: %v %+v", err, res)
	}
	if gitT(t, root, "show", "other:b.txt") != "b" || read(t, filepath.Join(root, "a.txt")) != "local edit\n" {
		t.Fatal("other not merged, or main tree touched")
	}
}

func TestCreateFailures(t *testing.T) {
	ctx := context.Background()
	m := New(0)
	if _, err := m.Create(ctx, CreateOptions{ProjectRoot: t.TempDir(), Dir: filepath.Join(t.TempDir(), "x"), Branch: "harness/x"}); !errors.Is(err, ErrNotRepo) {
		t.Fatalf("not a repo: %v", err)
	}
	root := newRepo(t)
	dir := filepath.Join(t.TempDir(), "x")
	if _, err := m.Create(ctx, CreateOptions{ProjectRoot: root, Dir: dir, Branch: "harness/x", Base: "nope"}); !errors.Is(err, ErrNoBase) {
		t.Fatalf("missing base: %v", err)
	}
	if _, err := m.Create(ctx, CreateOptions{ProjectRoot: root, Dir: dir, Branch: "main"}); !errors.Is(err, ErrBadBranch) {
		t.Fatalf("existing branch: %v", err)
	}
	if _, err := m.Create(ctx, CreateOptions{ProjectRoot: root, Dir: dir, Branch: "bad..name"}); !errors.Is(err, ErrBadBranch) {
		t.Fatalf("bad branch: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatal("a failed create wrote the worktree")
	}
	// A remote-tracking ref as the base; a project in a subdirectory.
	gitT(t, root, "update-ref", "refs/remotes/origin/main", "HEAD")
	write(t, filepath.Join(root, "sub", "f.txt"), "f\n")
	gitT(t, root, "add", ".")
	gitT(t, root, "commit", "-q", "-m", "sub")
	info, err := m.Create(ctx, CreateOptions{ProjectRoot: filepath.Join(root, "sub"), Dir: dir, Branch: "harness/x", Base: "origin/main"})
	if err != nil {
		t.Fatal(err)
	}
	if info.Workdir != filepath.Join(dir, "sub") || info.Base != "origin/main" {
		t.Fatalf("info = %+v", info)
	}
}

func TestRemoveOrphanKeepsUnmergedWork(t *testing.T) {
	ctx := context.Background()
	m := New(0)
	root := newRepo(t)
	a, b := create(t, m, root, "a"), create(t, m, root, "b")
	write(t, filepath.Join(a.Dir, "a.txt"), "work\n") // uncommitted
	kept, err := m.RemoveOrphan(ctx, a.Dir)
	if err != nil || kept != a.Branch {
		t.Fatalf("kept %q, %v", kept, err)
	}
	if gitT(t, root, "show", a.Branch+":a.txt") != "work" {
		t.Fatal("uncommitted work lost")
	}
	if kept, err := m.RemoveOrphan(ctx, b.Dir); err != nil || kept != "" {
		t.Fatalf("clean orphan: kept %q, %v", kept, err)
	}
	for _, d := range []string{a.Dir, b.Dir} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Fatalf("%s still there", d)
		}
	}
	if n := strings.Count(gitT(t, root, "worktree", "list", "--porcelain"), "worktree "); n != 1 {
		t.Fatalf("%d worktrees left", n)
	}
}

func TestGitHasNoUserConfig(t *testing.T) {
	// A hook in the repository must not run.
	root := newRepo(t)
	hook := filepath.Join(root, ".git", "hooks", "post-checkout")
	marker := filepath.Join(t.TempDir(), "ran")
	write(t, hook, "#!/bin/sh\ntouch "+marker+"\n")
	if err := os.Chmod(hook, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("sh"); err != nil {
		t.Fatal(err)
	}
	create(t, New(0), root, "h")
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatal("a hook ran")
	}
}

// A base naming a remote's ref is fetched first: a commit pushed to the
// remote after the clone is the worktree's base; a branch the remote
// lacks is ErrNoBase; an unreachable remote falls back to the ref as it
// was, saying why in FetchError; a local branch is not fetched.
func TestCreateFetchesARemoteBase(t *testing.T) {
	origin := newRepo(t)
	clone := filepath.Join(t.TempDir(), "clone")
	gitT(t, origin, "clone", "-q", origin, clone)
	write(t, filepath.Join(origin, "a.txt"), "two\n")
	gitT(t, origin, "commit", "-q", "-am", "second")
	tip := gitT(t, origin, "rev-parse", "HEAD")
	if gitT(t, clone, "rev-parse", "origin/main") == tip {
		t.Fatal("the clone has the new commit already")
	}
	m := New(0)
	ctx := context.Background()
	info, err := m.Create(ctx, CreateOptions{ProjectRoot: clone, Dir: filepath.Join(t.TempDir(), "w1"), Branch: "harness/w1", Base: "origin/main"})
	if err != nil {
		t.Fatal(err)
	}
	if info.BaseCommit != tip || info.Base != "origin/main" || info.FetchError != "" || read(t, filepath.Join(info.Workdir, "a.txt")) != "two\n" {
		t.Fatalf("base %s commit %s (want %s) fetchError %q", info.Base, info.BaseCommit, tip, info.FetchError)
	}
	if _, err := m.Create(ctx, CreateOptions{ProjectRoot: clone, Dir: filepath.Join(t.TempDir(), "w2"), Branch: "harness/w2", Base: "origin/nope"}); !errors.Is(err, ErrNoBase) || !strings.Contains(err.Error(), "has no branch nope") {
		t.Fatalf("a branch the remote lacks: %v", err)
	}
	if _, _, err := m.ResolveBase(ctx, clone, "refs/remotes/origin/nope"); !errors.Is(err, ErrNoBase) {
		t.Fatalf("a branch the remote lacks, as a full ref: %v", err)
	}

	// The remote goes away: the ref as it was, and why.
	gone := filepath.Join(t.TempDir(), "gone")
	if err := os.Rename(origin, gone); err != nil {
		t.Fatal(err)
	}
	info, err = m.Create(ctx, CreateOptions{ProjectRoot: clone, Dir: filepath.Join(t.TempDir(), "w3"), Branch: "harness/w3", Base: "origin/main"})
	if err != nil {
		t.Fatal(err)
	}
	if info.BaseCommit != tip || info.FetchError == "" {
		t.Fatalf("an unreachable remote: commit %s fetchError %q", info.BaseCommit, info.FetchError)
	}
	// A local branch named like no remote: no fetch, no error.
	info, err = m.Create(ctx, CreateOptions{ProjectRoot: clone, Dir: filepath.Join(t.TempDir(), "w4"), Branch: "harness/w4", Base: "main"})
	if err != nil || info.FetchError != "" {
		t.Fatalf("a local base: %v %+v", err, info)
	}
}
