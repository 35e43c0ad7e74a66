package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Merge strategies.
const (
	Squash = "squash"
	Merge  = "merge"
	Rebase = "rebase"
)

// MergeOptions says what to merge where.
type MergeOptions struct {
	// Top is the repository's main worktree; Dir the session's worktree
	// and Branch its branch.
	Top, Dir, Branch string
	// Into is the target branch ("" = the branch checked out in Top).
	Into string
	// Strategy is Squash, Merge or Rebase ("" = Squash).
	Strategy string
	// Message is the merge's (or squash's) commit message, and of the
	// commit of the worktree's uncommitted changes.
	Message string
}

// MergeResult is a merge done.
type MergeResult struct {
	// Commit is the target branch's new tip.
	Commit string
	// Into is the target branch.
	Into string
}

// Merge commits the worktree's uncommitted changes on its branch, then
// merges the branch into the target. The merge is computed without
// touching the target (git merge-tree, or cherry-picks in a temporary
// worktree for Rebase); only a clean result moves the target: with
// update-ref, or when the target is checked out in Top with a fast-forward
// `git merge` that updates that working tree. It fails with ErrDirty when
// Top has uncommitted changes of its own and the target is checked out
// there, and with a *ConflictError naming the paths when the merge
// conflicts; either way the target and Top are untouched.
func (m *Manager) Merge(ctx context.Context, o MergeOptions) (*MergeResult, error) {
	if err := m.Expect(ctx, o.Top, o.Dir); err != nil {
		return nil, err
	}
	_ = m.AdoptObjects(ctx, o.Dir) // a sandboxed agent's commits (Grants); git says what is missing
	switch o.Strategy {
	case "":
		o.Strategy = Squash
	case Squash, Merge, Rebase:
	default:
		return nil, fmt.Errorf("%w (got %q)", ErrBadStrategy, o.Strategy)
	}
	// the message goes to git as an argument: bounded, and no NUL (which
	// no argument can hold), refused before anything is written
	if len(o.Message) > MaxMessage || strings.ContainsRune(o.Message, 0) {
		return nil, fmt.Errorf("%w: %d bytes (at most %d, no NUL)", ErrBadMessage, len(o.Message), MaxMessage)
	}
	unlock := m.locks.Lock(o.Top)
	defer unlock()
	into := o.Into
	if into == "" {
		b, err := m.r.out(ctx, o.Top, "symbolic-ref", "--short", "-q", "HEAD")
		if err != nil || b == "" {
			return nil, fmt.Errorf("%w: %s has no branch checked out (detached HEAD); name the target with into", ErrBadBranch, o.Top)
		}
		into = b
	}
	if into == o.Branch || strings.HasPrefix(into, "-") {
		return nil, fmt.Errorf("%w: cannot merge %s into %q", ErrBadBranch, o.Branch, into)
	}
	ref := "refs/heads/" + into
	old, err := m.r.out(ctx, o.Top, "rev-parse", "--verify", "-q", ref)
	if err != nil || old == "" {
		return nil, fmt.Errorf("%w: target branch %q does not exist", ErrBadBranch, into)
	}
	checkedOut, err := m.checkedOutAt(ctx, o.Top, ref)
	if err != nil {
		return nil, err
	}
	if checkedOut != "" && checkedOut != o.Top {
		return nil, fmt.Errorf("%w: %s is checked out in the worktree %s; merge into a branch checked out in the project or in none", ErrBadBranch, into, checkedOut)
	}
	if checkedOut == o.Top {
		out, err := m.r.git(ctx, o.Top, nil, "status", "--porcelain", "-z", "--untracked-files=no")
		if err != nil {
			return nil, err
		}
		if len(out) > 0 {
			return nil, fmt.Errorf("%w: %s (branch %s) has uncommitted changes; commit or stash them first", ErrDirty, o.Top, into)
		}
	}
	if _, err := m.Commit(ctx, o.Dir, o.Message); err != nil {
		return nil, err
	}
	tip, err := m.r.out(ctx, o.Top, "rev-parse", "--verify", "refs/heads/"+o.Branch)
	if err != nil {
		return nil, err
	}
	var next string
	if o.Strategy == Rebase {
		next, err = m.rebase(ctx, o.Top, old, tip)
	} else {
		next, err = m.mergeTree(ctx, o.Top, old, tip, o.Strategy, o.Message)
	}
	if err != nil {
		return nil, err
	}
	if next != old {
		if checkedOut == o.Top {
			// A fast-forward by git itself, so the working tree and index
			// follow as after `git merge`.
			if _, err := m.r.git(ctx, o.Top, nil, "merge", "-q", "--ff-only", "--no-edit", next); err != nil {
				return nil, fmt.Errorf("%w: %w", ErrDirty, err)
			}
		} else if _, err := m.r.git(ctx, o.Top, nil, "update-ref", "-m", "harness: merge "+o.Branch, ref, next, old); err != nil {
			return nil, err
		}
	}
	return &MergeResult{Commit: next, Into: into}, nil
}

// mergeTree merges tip into old with `git merge-tree --write-tree` and
// commits the result (two parents for Merge, one for Squash). A merge
// that changes nothing returns old.
func (m *Manager) mergeTree(ctx context.Context, top, old, tip, strategy, message string) (string, error) {
	tree, conflicts, err := m.writeTree(ctx, top, old, tip)
	if err != nil {
		return "", err
	}
	if len(conflicts) > 0 {
		return "", &ConflictError{Paths: conflicts}
	}
	oldTree, err := m.r.out(ctx, top, "rev-parse", old+"^{tree}")
	if err != nil {
		return "", err
	}
	if tree == oldTree {
		return old, nil
	}
	if message == "" {
		message = "harness: merge session changes"
	}
	args := []string{"commit-tree", tree, "-p", old}
	if strategy == Merge {
		args = append(args, "-p", tip)
	}
	return m.r.out(ctx, top, append(args, "-m", message)...)
}

// writeTree runs `git merge-tree --write-tree` on two commits and returns
// the merged tree, or the conflicting paths.
func (m *Manager) writeTree(ctx context.Context, top, a, b string) (string, []string, error) {
	out, err := m.r.git(ctx, top, nil, "merge-tree", "--write-tree", "-z", "--name-only", "--no-messages", a, b)
	if err != nil && exitCode(err) != 1 {
		return "", nil, err
	}
	// <tree> NUL then, on conflict, <path> NUL … (a path per stage).
	fields := bytes.Split(out, []byte{0})
	tree := strings.TrimSpace(string(fields[0]))
	if err == nil {
		return tree, nil, nil
	}
	var paths []string
	for _, f := range fields[1:] {
		if len(f) > 0 && !slices.Contains(paths, string(f)) {
			paths = append(paths, string(f))
		}
	}
	if len(paths) == 0 {
		return "", nil, err
	}
	return tree, paths, nil
}

// rebase cherry-picks old..tip onto old in a temporary detached worktree
// and returns the last commit; on a conflict it aborts and names the
// paths. The temporary worktree goes either way.
func (m *Manager) rebase(ctx context.Context, top, old, tip string) (string, error) {
	counted, err := m.r.out(ctx, top, "rev-list", "--count", old+".."+tip)
	if err != nil {
		return "", err
	}
	if counted == "0" {
		return old, nil
	}
	parent, err := os.MkdirTemp("", "harness-rebase-*")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(parent)
	tmp := filepath.Join(parent, "wt")
	if _, err := m.r.git(ctx, top, nil, "worktree", "add", "-q", "--detach", tmp, old); err != nil {
		return "", err
	}
	defer func() {
		_, _ = m.r.git(context.WithoutCancel(ctx), top, nil, "worktree", "remove", "--force", tmp)
	}()
	if _, err := m.r.git(ctx, tmp, nil, "cherry-pick", "--keep-redundant-commits", "--allow-empty", old+".."+tip); err != nil {
		out, _ := m.r.git(ctx, tmp, nil, "diff", "--name-only", "-z", "--diff-filter=U")
		_, _ = m.r.git(context.WithoutCancel(ctx), tmp, nil, "cherry-pick", "--abort")
		var paths []string
		for _, p := range bytes.Split(out, []byte{0}) {
			if len(p) > 0 {
				paths = append(paths, string(p))
			}
		}
		if len(paths) > 0 {
			return "", &ConflictError{Paths: paths}
		}
		return "", err
	}
	return m.r.out(ctx, tmp, "rev-parse", "HEAD")
}

// checkedOutAt returns the worktree that has ref checked out, "" if none.
func (m *Manager) checkedOutAt(ctx context.Context, top, ref string) (string, error) {
	out, err := m.r.git(ctx, top, nil, "worktree", "list", "--porcelain", "-z")
	if err != nil {
		return "", err
	}
	var path string
	for _, line := range bytes.Split(out, []byte{0}) {
		s := string(line)
		switch {
		case strings.HasPrefix(s, "worktree "):
			path = strings.TrimPrefix(s, "worktree ")
			if real, err := filepath.EvalSymlinks(path); err == nil {
				path = real
			}
		case s == "branch "+ref:
			return path, nil
		}
	}
	return "", nil
}

// Unmerged reports whether the worktree at dir holds changes that the
// commit target (of the main worktree Top; "HEAD" = what it has checked
// out) lacks: uncommitted changes, or a branch whose merge into target
// would change target's tree (so a squashed or rebased branch counts as
// merged once its changes are in), or a detached HEAD with commits the
// branch lacks (a sandboxed agent's, not yet settled: see Settle).
func (m *Manager) Unmerged(ctx context.Context, top, dir, branch, target string) (bool, error) {
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		if err := m.Expect(ctx, top, dir); err != nil {
			return false, err
		}
		_ = m.AdoptObjects(ctx, dir) // a sandboxed agent's commits (Grants); git says what is missing
		dirty, err := m.Dirty(ctx, dir)
		if err != nil || dirty {
			return dirty, err
		}
	}
	tip, err := m.r.out(ctx, top, "rev-parse", "--verify", "-q", "refs/heads/"+branch)
	if err != nil || tip == "" {
		return false, nil // no branch, nothing of it to lose
	}
	if head, err := m.wout(ctx, dir, "rev-parse", "--verify", "-q", "HEAD^{commit}"); err == nil && head != tip {
		// a sandboxed agent's detached HEAD (Detach) with commits its
		// branch lacks yet (Settle brings them)
		if _, err := m.r.git(ctx, top, nil, "merge-base", "--is-ancestor", head, tip); err != nil {
			return true, nil
		}
	}
	t, err := m.r.out(ctx, top, "rev-parse", "--verify", "-q", target+"^{commit}")
	if err != nil {
		return false, err
	}
	tree, conflicts, err := m.writeTree(ctx, top, t, tip)
	if err != nil {
		return false, err
	}
	if len(conflicts) > 0 {
		return true, nil
	}
	tTree, err := m.r.out(ctx, top, "rev-parse", t+"^{tree}")
	if err != nil {
		return false, err
	}
	return tree != tTree, nil
}

// Remove removes the worktree at dir (whatever it holds) and deletes its
// branch, then prunes the repository's stale worktree entries.
func (m *Manager) Remove(ctx context.Context, top, dir, branch string) error {
	unlock := m.locks.Lock(top)
	defer unlock()
	if _, err := os.Stat(dir); err == nil {
		_ = m.AdoptObjects(ctx, dir) // a sandboxed agent's commits (Grants); git says what is missing
		if _, err := m.r.git(ctx, top, nil, "worktree", "remove", "--force", "--force", dir); err != nil {
			return err
		}
	}
	_, _ = m.r.git(ctx, top, nil, "worktree", "prune")
	if branch != "" {
		if _, err := m.r.git(ctx, top, nil, "rev-parse", "--verify", "-q", "refs/heads/"+branch); err == nil {
			if _, err := m.r.git(ctx, top, nil, "branch", "-D", "-q", "--", branch); err != nil {
				return err
			}
		}
	}
	return nil
}

// RemoveOrphan removes the worktree at dir whose session is gone. Its
// uncommitted changes are committed on its branch first, and the branch
// is deleted only when nothing of it is unmerged into its repository's
// HEAD, so no work is lost. It returns the branch kept ("" = deleted).
func (m *Manager) RemoveOrphan(ctx context.Context, dir string) (kept string, err error) {
	_ = m.AdoptObjects(ctx, dir) // a sandboxed agent's commits (Grants); git says what is missing
	p, err := m.pin(dir)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %w", ErrNotRepo, dir, err)
	}
	top := filepath.Dir(p.common) // the main worktree of a non-bare repository
	if real, err := filepath.EvalSymlinks(top); err == nil {
		top = real
	}
	branch, _ := m.wout(ctx, dir, "symbolic-ref", "--short", "-q", "HEAD")
	if _, err := m.Commit(ctx, dir, "harness: uncommitted changes of a removed session"); err != nil {
		return "", err
	}
	unmerged := false
	if branch != "" {
		if unmerged, err = m.Unmerged(ctx, top, dir, branch, "HEAD"); err != nil {
			return "", err
		}
	}
	del := branch
	if unmerged {
		del, kept = "", branch
	}
	return kept, m.Remove(ctx, top, dir, del)
}

// Prune runs `git worktree prune` in the repository at top.
func (m *Manager) Prune(ctx context.Context, top string) error {
	unlock := m.locks.Lock(top)
	defer unlock()
	_, err := m.r.git(ctx, top, nil, "worktree", "prune")
	return err
}

// IsConflict returns the conflicting paths of err, if it is a conflict.
func IsConflict(err error) ([]string, bool) {
	var ce *ConflictError
	if errors.As(err, &ce) {
		return ce.Paths, true
	}
	return nil, false
}
