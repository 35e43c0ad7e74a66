package harness

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/session"
	"github.com/chirality/harness/worktree"
)

// Errors of worktree sessions (the gateway's status in parentheses).
var (
	// ErrNotGitRepo: isolation "worktree" needs the project in a git
	// repository (422).
	ErrNotGitRepo = engine.NewError(engine.ErrCannot, "project is not in a git repository")
	// ErrBaseNotFound: the base named is not a commit of the project's
	// repository (422).
	ErrBaseNotFound = engine.NewError(engine.ErrCannot, "base not found")
	// ErrInvalidIsolation: isolation is "" or "worktree"; a branch name
	// must be a valid, new git branch; a strategy is squash, merge or
	// rebase (400).
	ErrInvalidIsolation = engine.NewError(engine.ErrInvalid, "invalid isolation option")
	// ErrNotIsolated: the session has no worktree to diff or merge (422).
	ErrNotIsolated = engine.NewError(engine.ErrCannot, "session has no worktree (create it with isolation \"worktree\")")
	// ErrDirtyTarget: the merge's target is checked out with uncommitted
	// changes of its own (409); nothing was merged.
	ErrDirtyTarget = engine.NewError(engine.ErrConflict, "merge target has uncommitted changes")
	// ErrMergeConflict: the merge conflicts (409); the error is a
	// *MergeConflictError naming the paths; the target is untouched.
	ErrMergeConflict = engine.NewError(engine.ErrConflict, "merge conflicts")
	// ErrUnmerged: the session's worktree holds changes not merged into
	// the project's branch; delete it with force to drop them (409).
	ErrUnmerged = engine.NewError(engine.ErrConflict, "session has unmerged changes")
	// ErrWorktreeTampered: the session's worktree no longer points at its
	// repository (its .git file was changed, by its agent or anyone); no
	// git command runs in it until a person puts it back (409).
	ErrWorktreeTampered = engine.NewError(engine.ErrConflict, "the session's worktree was tampered with")
)

// errForkIsolated refuses Fork of a worktree session: the fork would run
// outside the worktree, its file checkpoints in another store.
var errForkIsolated = fmt.Errorf("%w: a fork of a worktree session (create a worktree session with base set to its branch instead, or merge it first)", ErrUnsupported)

// MergeConflictError names the paths a merge conflicts on.
type MergeConflictError struct {
	Paths []string
}

func (e *MergeConflictError) Error() string {
	return fmt.Sprintf("merge conflicts in %v; the target branch and the project's tree are untouched", e.Paths)
}

func (e *MergeConflictError) Is(t error) bool { return errors.Is(ErrMergeConflict, t) }

// WorktreeConfig configures worktree sessions.
type WorktreeConfig struct {
	// Dir holds the worktrees, as <Dir>/<hash of the repository>/<session
	// id> ("" = <StateDir>-worktrees, next to the state directory: not in
	// it, for the state directory is a protected path, and a worktree's
	// files are its agent's to write under the session's rules). It
	// belongs to this state directory: at New, a worktree there whose
	// session is gone is removed (its work kept on its branch when
	// unmerged).
	Dir string
	// Timeout bounds one git command (0 = worktree.DefaultTimeout).
	Timeout time.Duration
}

// Diff is what a worktree session changed since its base.
type Diff = worktree.Diff

// MergeOptions says how MergeSession merges.
type MergeOptions struct {
	// Strategy is squash (the default), merge or rebase.
	Strategy string
	// Message is the commit message of the merge (or squash), and of the
	// commit of the session's uncommitted changes.
	Message string
	// Into is the target branch ("" = the branch the project has
	// checked out).
	Into string
}

// MergeResult is a merge done: the target branch and its new tip.
type MergeResult struct {
	Merged bool   `json:"merged"`
	Commit string `json:"commit" doc:"the target's new tip"`
	Into   string `json:"into"`
}

// DeleteOptions says how DeleteSessionWith deletes.
type DeleteOptions struct {
	// Force drops a worktree session's unmerged changes.
	Force bool
}

// isolate checks spec's isolation options and, for isolation
// "worktree", makes the worktree of a new session ID: the returned
// template has the ID and the worktree's fields (empty otherwise).
func (h *Harness) isolate(root string, spec SessionSpec) (session.Session, error) {
	switch spec.Isolation {
	case "":
		if spec.Base != "" || spec.Branch != "" {
			return session.Session{}, fmt.Errorf("%w: base and branch need isolation \"worktree\"", ErrInvalidIsolation)
		}
		return session.Session{}, nil
	case session.IsolationWorktree:
		return h.newWorktree(context.Background(), root, cmp.Or(spec.ID, uuid.NewString()), spec)
	}
	return session.Session{}, fmt.Errorf("%w: isolation %q: want \"worktree\" or none", ErrInvalidIsolation, spec.Isolation)
}

// unisolate removes the worktree isolate made for a session that was
// then not stored.
func (h *Harness) unisolate(tmpl *session.Session) {
	if tmpl.Isolation == "" {
		return
	}
	if err := h.removeWorktree(context.Background(), tmpl); err != nil {
		h.log.Warn().Str("sessionId", tmpl.ID).Str("workdir", tmpl.Workdir).Err(err).Msg("worktree of an unstored session not removed")
	}
}

// CheckWorktree checks, writing nothing but a remote base's fetched
// remote-tracking ref, that a session with isolation "worktree" from base
// ("" = HEAD) can be made in the project at projectRoot: it fails as NewSession would (ErrInvalidRoot,
// ErrRootNotAllowed, ErrNotGitRepo, ErrBaseNotFound). For a door that
// makes its session later (the JSON-RPC thread).
func (h *Harness) CheckWorktree(ctx context.Context, projectRoot, base string) error {
	root, err := h.ResolveRoot(projectRoot)
	if err != nil {
		return err
	}
	_, _, err = h.gitwt().ResolveBase(ctx, root, base)
	return mapWorktreeErr(err)
}

// worktreeDir is where worktrees are kept (WorktreeConfig.Dir).
func (h *Harness) worktreeDir() string {
	if h.cfg.Worktrees.Dir != "" {
		return h.cfg.Worktrees.Dir
	}
	return filepath.Clean(h.store.StateDir()) + "-worktrees"
}

// worktreeDirs are the directories cleanWorktrees looks in: worktreeDir,
// and where a harness before it kept them by default (<StateDir>/worktrees,
// inside the protected state directory), so their orphans go too.
func (h *Harness) worktreeDirs() []string {
	if h.cfg.Worktrees.Dir != "" {
		return []string{h.cfg.Worktrees.Dir}
	}
	return []string{h.worktreeDir(), filepath.Join(h.store.StateDir(), "worktrees")}
}

// gitwt returns the worktree manager, made on first use.
func (h *Harness) gitwt() *worktree.Manager {
	h.wtOnce.Do(func() {
		h.wt = worktree.New(h.cfg.Worktrees.Timeout)
		h.wt.OnRepair = func(wt, what string) {
			h.log.Warn().Str("worktree", wt).Str("repaired", what).Msg("a worktree's git directory was changed (by its agent?): put back")
		}
	})
	return h.wt
}

// mapWorktreeErr turns package worktree's errors into this package's.
func mapWorktreeErr(err error) error {
	var ce *worktree.ConflictError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ce):
		return &MergeConflictError{Paths: ce.Paths}
	case errors.Is(err, worktree.ErrNotRepo):
		return fmt.Errorf("%w: %w", ErrNotGitRepo, err)
	case errors.Is(err, worktree.ErrNoBase):
		return fmt.Errorf("%w: %w", ErrBaseNotFound, err)
	case errors.Is(err, worktree.ErrBadBranch), errors.Is(err, worktree.ErrBadStrategy), errors.Is(err, worktree.ErrBadMessage):
		return fmt.Errorf("%w: %w", ErrInvalidIsolation, err)
	case errors.Is(err, worktree.ErrDirty):
		return fmt.Errorf("%w: %w", ErrDirtyTarget, err)
	case errors.Is(err, worktree.ErrNoGit):
		return fmt.Errorf("%w: %w", ErrNotGitRepo, err)
	case errors.Is(err, worktree.ErrTampered):
		return fmt.Errorf("%w: %w", ErrWorktreeTampered, err)
	}
	return err
}

// newWorktree makes the worktree of session id of the project at root
// (resolved) as spec asks, and returns the session's fields for it.
func (h *Harness) newWorktree(ctx context.Context, root, id string, spec SessionSpec) (session.Session, error) {
	m := h.gitwt()
	top, err := m.Toplevel(ctx, root)
	if err != nil {
		return session.Session{}, mapWorktreeErr(err)
	}
	sum := sha256.Sum256([]byte(top))
	branch := spec.Branch
	if branch == "" {
		branch = "harness/" + id[:8]
	}
	info, err := m.Create(ctx, worktree.CreateOptions{ProjectRoot: root, Branch: branch, Base: spec.Base,
		Dir: filepath.Join(h.worktreeDir(), hex.EncodeToString(sum[:8]), id)})
	if err != nil {
		return session.Session{}, mapWorktreeErr(err)
	}
	if info.FetchError != "" {
		h.projectLog(root).Warn().Str("sessionId", id).Str("base", info.Base).Str("baseCommit", info.BaseCommit).
			Str("fetchError", info.FetchError).Msg("the remote base could not be fetched: the worktree starts from the remote-tracking ref as it was")
	}
	return session.Session{ID: id, Isolation: session.IsolationWorktree, Workdir: info.Workdir, Branch: info.Branch,
		Base: info.Base, BaseCommit: info.BaseCommit}, nil
}

// worktreeOf returns the worktree session id and its repository's main
// worktree.
func (h *Harness) worktreeOf(ctx context.Context, id string) (*session.Session, string, error) {
	s, err := h.Session(id)
	if err != nil {
		return nil, "", err
	}
	if s.Isolation != session.IsolationWorktree {
		return nil, "", ErrNotIsolated
	}
	top, err := h.gitwt().Toplevel(ctx, s.ProjectRoot)
	if err != nil {
		return nil, "", mapWorktreeErr(err)
	}
	return s, top, nil
}

// wtDir is the worktree's own directory: Workdir, less the project's
// place in its repository (top) when the project is a subdirectory.
func wtDir(s *session.Session, top string) string {
	rel, err := filepath.Rel(top, s.ProjectRoot)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return s.Workdir
	}
	return strings.TrimSuffix(s.Workdir, string(filepath.Separator)+rel)
}

// SessionDiff returns what worktree session id changed since its base:
// committed, uncommitted and untracked files. It may run during a turn.
func (h *Harness) SessionDiff(ctx context.Context, id string) (*Diff, error) {
	s, top, err := h.worktreeOf(ctx, id)
	if err != nil {
		return nil, err
	}
	// the worktree's .git file is its agent's to write (worktree.Expect)
	if err := h.gitwt().Expect(ctx, top, wtDir(s, top)); err != nil {
		return nil, mapWorktreeErr(err)
	}
	d, err := h.gitwt().Diff(ctx, wtDir(s, top), s.BaseCommit)
	if err != nil {
		return nil, mapWorktreeErr(err)
	}
	d.Base, d.Branch = s.Base, s.Branch
	return d, nil
}

// MergeSession commits worktree session id's uncommitted changes on its
// branch and merges the branch into o.Into (see MergeOptions). It fails
// with ErrBusy while a turn runs (and no turn starts while it merges),
// ErrDirtyTarget, or a *MergeConflictError (ErrMergeConflict); on any
// failure the target branch and the project's tree are untouched.
func (h *Harness) MergeSession(ctx context.Context, id string, o MergeOptions) (*MergeResult, error) {
	s, top, err := h.worktreeOf(ctx, id)
	if err != nil {
		return nil, err
	}
	release, err := h.reserve(id)
	if err != nil {
		return nil, err
	}
	defer release()
	h.settleWorktree(ctx, s) // a sandboxed turn that ended without it (a crash)
	res, err := h.gitwt().Merge(ctx, worktree.MergeOptions{Top: top, Dir: wtDir(s, top), Branch: s.Branch,
		Into: o.Into, Strategy: o.Strategy, Message: o.Message})
	log := h.projectLog(s.ProjectRoot)
	if err != nil {
		log.Info().Str("sessionId", id).Str("branch", s.Branch).Str("strategy", o.Strategy).Err(err).Msg("session not merged")
		return nil, mapWorktreeErr(err)
	}
	log.Info().Str("sessionId", id).Str("branch", s.Branch).Str("into", res.Into).Str("commit", res.Commit).
		Str("strategy", o.Strategy).Msg("session merged")
	return &MergeResult{Merged: true, Commit: res.Commit, Into: res.Into}, nil
}

// checkMerged fails with ErrUnmerged when worktree session s holds
// changes its project's checked-out commit lacks.
func (h *Harness) checkMerged(ctx context.Context, s *session.Session) error {
	top, err := h.gitwt().Toplevel(ctx, s.ProjectRoot)
	if err != nil {
		return nil // no repository any more: nothing to merge into
	}
	un, err := h.gitwt().Unmerged(ctx, top, wtDir(s, top), s.Branch, "HEAD")
	if err != nil {
		return mapWorktreeErr(err)
	}
	if un {
		return fmt.Errorf("%w: branch %s (worktree %s) has changes the project's branch lacks; merge it first, or delete with force to drop them", ErrUnmerged, s.Branch, s.Workdir)
	}
	return nil
}

// removeWorktree removes worktree session s's worktree and branch.
func (h *Harness) removeWorktree(ctx context.Context, s *session.Session) error {
	top, err := h.gitwt().Toplevel(ctx, s.ProjectRoot)
	if err != nil {
		// The repository is gone, and with it the worktree's metadata;
		// its directory is left for a person to look at.
		h.log.Warn().Str("sessionId", s.ID).Str("workdir", s.Workdir).Err(err).Msg("worktree not removed")
		return nil
	}
	return mapWorktreeErr(h.gitwt().Remove(ctx, top, wtDir(s, top), s.Branch))
}

// cleanWorktrees removes the worktrees under worktreeDir whose session is
// gone (a session file removed by hand, a crash between steps). Their
// uncommitted changes are committed on their branch first, and a branch
// with unmerged changes is kept, so no work is lost.
func (h *Harness) cleanWorktrees() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, top := range h.worktreeDirs() {
		h.cleanWorktreesIn(ctx, top)
	}
}

// cleanWorktreesIn is cleanWorktrees in one directory of worktrees.
func (h *Harness) cleanWorktreesIn(ctx context.Context, top string) {
	repos, err := os.ReadDir(top)
	if err != nil {
		return
	}
	for _, r := range repos {
		dirs, err := os.ReadDir(filepath.Join(top, r.Name()))
		if err != nil {
			continue
		}
		for _, d := range dirs {
			if !session.ValidID(d.Name()) {
				continue
			}
			if _, err := h.store.Get(d.Name()); !errors.Is(err, session.ErrNotFound) {
				continue
			}
			dir := filepath.Join(top, r.Name(), d.Name())
			// the worktree's .git file was its agent's to write: it must
			// lead to the repository the directory's name is the hash of
			// (newWorktree)
			repo := r.Name()
			err := h.gitwt().ExpectRepo(dir, func(top string) bool {
				sum := sha256.Sum256([]byte(top))
				return hex.EncodeToString(sum[:8]) == repo
			})
			if err != nil {
				h.log.Warn().Str("sessionId", d.Name()).Str("dir", dir).Err(err).Msg("orphan worktree not removed")
				continue
			}
			kept, err := h.gitwt().RemoveOrphan(ctx, dir)
			if err != nil {
				h.log.Warn().Str("sessionId", d.Name()).Str("dir", dir).Err(err).Msg("orphan worktree not removed")
				continue
			}
			ev := h.log.Info().Str("sessionId", d.Name()).Str("dir", dir)
			if kept != "" {
				ev = ev.Str("branchKept", kept)
			}
			ev.Msg("orphan worktree removed")
		}
	}
}

// CommitSession commits worktree session id's uncommitted changes on its
// branch with message ("" = a default) and returns the new commit, or ""
// when there was nothing to commit. It fails with ErrBusy while a turn
// runs. A runner that continues a worktree session's work in a new
// session (a cleared or compacted conversation) commits the old one's
// changes so the new session, based on its branch, starts with them.
func (h *Harness) CommitSession(ctx context.Context, id, message string) (string, error) {
	s, top, err := h.worktreeOf(ctx, id)
	if err != nil {
		return "", err
	}
	release, err := h.reserve(id)
	if err != nil {
		return "", err
	}
	defer release()
	h.settleWorktree(ctx, s) // a sandboxed turn that ended without it (a crash)
	c, err := h.gitwt().Commit(ctx, wtDir(s, top), message)
	return c, mapWorktreeErr(err)
}
