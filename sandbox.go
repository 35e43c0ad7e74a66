package harness

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/sandbox"
	"github.com/chirality/harness/session"
	"github.com/chirality/harness/worktree"
)

// ErrSandboxUnavailable: the session asks for the kernel sandbox and this
// kernel has no Landlock (the gateway answers 503). The turn does not
// start: a sandboxed session never runs unsandboxed.
var ErrSandboxUnavailable = sandbox.ErrUnavailable

// sandboxRequest marks req sandboxed when the session, the server or the
// trust record asks for it, after checking the kernel can: the engine
// then starts its agent through the sandbox entry (package sandbox),
// whose protected paths are req.Protected (protectedPaths). The session
// file is the agent's to write, so a sandbox a person
// chose is kept in the trust record too, and the file cannot take it back
// (nor can an unreadable record: then the file's word stands). The
// agent's TCP is limited too unless Config.SandboxOpenNetwork names its
// engine (eng) or "*".
func (h *Harness) sandboxRequest(s *session.Session, eng string, req *engine.Request) error {
	if !s.Sandbox && !h.cfg.Sandbox {
		if g, _ := h.trust.Session(s.ProjectRoot, s.ID); g == nil || !g.Sandbox {
			return nil
		}
	}
	if _, err := sandbox.Available(); err != nil {
		return err
	}
	req.Sandbox = true
	req.OpenNetwork = slices.Contains(h.cfg.SandboxOpenNetwork, eng) || slices.Contains(h.cfg.SandboxOpenNetwork, "*")
	if s.Isolation == session.IsolationWorktree && s.Branch != "" {
		// what a commit in the worktree needs (worktree.Grants; its HEAD
		// is detached as the turn starts: detachWorktree)
		ctx, cancel := context.WithTimeout(context.Background(), h.gitTimeout())
		// the worktree's .git file is its agent's to write: it must name
		// the project's repository (worktree.Expect)
		top, err := h.gitwt().Toplevel(ctx, s.ProjectRoot)
		if err == nil {
			err = h.gitwt().Expect(ctx, top, s.Dir())
		}
		var g *worktree.Grants
		if err == nil {
			g, err = h.gitwt().Grants(ctx, s.Dir(), s.Branch)
		}
		cancel()
		if err != nil {
			return fmt.Errorf("sandbox: the worktree's git directories: %w", mapWorktreeErr(err))
		}
		req.SandboxWritable = append(req.SandboxWritable, g.Writable...)
		req.Env = append(req.Env, g.Env...)
	}
	return nil
}

// detachWorktree puts sandboxed worktree session s's worktree on a
// detached HEAD (worktree.Detach) just before its agent's turn starts, so
// the agent commits with no ref of the repository writable to it
// (worktree.Grants); settleWorktree brings its commits onto the branch
// when the turn ends.
func (h *Harness) detachWorktree(s *session.Session, req engine.Request) error {
	if !req.Sandbox || s.Isolation != session.IsolationWorktree || s.Branch == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), h.gitTimeout())
	defer cancel()
	if err := h.gitwt().Detach(ctx, s.Dir()); err != nil {
		return fmt.Errorf("sandbox: the worktree's HEAD: %w", mapWorktreeErr(err))
	}
	return nil
}

// settleWorktree ends a sandboxed agent's hold on worktree session s's
// git state (worktree.Settle): its objects are adopted into the
// repository, its branch moved forward to the commits it made on its
// worktree's detached HEAD, and the branch checked out again. A HEAD that
// does not descend from the branch leaves the branch where it was (the
// agent's files stay as its uncommitted changes), logged in the project's
// log; so is any other failure. A worktree on its branch costs one git
// command more than adopting nothing.
func (h *Harness) settleWorktree(ctx context.Context, s *session.Session) {
	if s.Isolation != session.IsolationWorktree || s.Workdir == "" || s.Branch == "" {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, h.gitTimeout())
	defer cancel()
	top, err := h.gitwt().Toplevel(ctx, s.ProjectRoot)
	if err != nil {
		return // no repository any more
	}
	moved, err := h.gitwt().Settle(ctx, top, wtDir(s, top), s.Branch)
	log := h.projectLog(s.ProjectRoot)
	if err != nil {
		log.Warn().Str("sessionId", s.ID).Str("branch", s.Branch).Err(err).Msg("the sandboxed agent's worktree HEAD not brought onto its branch")
	} else if moved != "" {
		log.Info().Str("sessionId", s.ID).Str("branch", s.Branch).Str("commit", moved).Msg("branch moved to the sandboxed agent's commits")
	}
}

// gitTimeout bounds one git step of a worktree session.
func (h *Harness) gitTimeout() time.Duration {
	return cmp.Or(h.cfg.Worktrees.Timeout, worktree.DefaultTimeout)
}
