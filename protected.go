package harness

import (
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/internal/protect"
	"github.com/chirality/harness/session"
)

// protectedPaths are session s's protected paths (engine.Request.Protected):
// the project root's, a worktree session's worktree's (its agents/,
// .mcp.json, .claude/settings.json… reach the project at a merge, and
// its agent writes them sandboxed or not) and the state directory.
func (h *Harness) protectedPaths(s *session.Session) []string {
	p := protect.Paths(s.ProjectRoot, h.store.StateDir())
	if dir := s.Dir(); dir != s.ProjectRoot {
		p = append(p, protect.Paths(dir)...)
	}
	return p
}

// protectedWrite reports whether q writes one of the turn's protected
// paths (engine.Request.Protected: the project's .chirality/, agents/,
// .mcp.json, the agents' own project configuration, the harness's state
// directory). Such a use is always put to a person: no session rule
// allows it, and "always" allows it once without remembering a rule
// (approvals.Ask, approvals.answer). Where nobody is asked (dontAsk),
// each engine denies it (see engine.Request.Protected).
func (r *runner) protectedWrite(q engine.ApprovalRequest) bool {
	_, ok := protect.Write(protect.Or(r.req.Protected, r.req.Cwd), r.req.Cwd, q.ToolName, q.Input)
	if ok {
		r.log.Info().Str("sessionId", r.s.ID).Str("tool", q.ToolName).Msg("a protected path is written: a person is asked, whatever the rules")
	}
	return ok
}

// unsandboxed reports whether the engine marked q as one that may run
// outside the agent's sandbox once allowed
// (engine.ApprovalRequest.Unsandboxed): like a protected write, it is always put to a person. Where nobody is
// asked the engine declines it (Codex: no Approver, or approval policy
// never, which refuses an escalation by itself).
func (r *runner) unsandboxed(q engine.ApprovalRequest) bool {
	if q.Unsandboxed {
		r.log.Info().Str("sessionId", r.s.ID).Str("tool", q.ToolName).Msg("a use may run outside the agent's sandbox: a person is asked, whatever the rules")
	}
	return q.Unsandboxed
}
