package harness

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/internal/protect"
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
// then starts its agent through the sandbox entry (package sandbox). A
// worktree session's own protected paths are added to the project
// root's. The session file is the agent's to write, so a sandbox a person
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
	if dir := s.Dir(); dir != s.ProjectRoot {
		req.Protected = append(req.Protected, protect.Paths(dir)...)
	}
	if s.Isolation == session.IsolationWorktree && s.Branch != "" {
		// what a commit on the session's branch needs (worktree.Grants)
		ctx, cancel := context.WithTimeout(context.Background(), h.gitTimeout())
		g, err := h.gitwt().Grants(ctx, s.Dir(), s.Branch)
		cancel()
		if err != nil {
			return fmt.Errorf("sandbox: the worktree's git directories: %w", mapWorktreeErr(err))
		}
		req.SandboxWritable = append(req.SandboxWritable, g.Writable...)
		req.Env = append(req.Env, g.Env...)
	}
	return nil
}

// adoptObjects moves the git objects a sandboxed agent wrote in worktree
// session s's private store into its repository (worktree.Grants), so
// that its branch's commits are the repository's; a failure is logged.
func (h *Harness) adoptObjects(s *session.Session) {
	if s.Isolation != session.IsolationWorktree || s.Workdir == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), h.gitTimeout())
	defer cancel()
	if err := h.gitwt().AdoptObjects(ctx, s.Dir()); err != nil {
		h.log.Warn().Str("session", s.ID).Err(err).Msg("adopting the worktree's git objects failed")
	}
}

// gitTimeout bounds one git step of a worktree session.
func (h *Harness) gitTimeout() time.Duration {
	return cmp.Or(h.cfg.Worktrees.Timeout, worktree.DefaultTimeout)
}
