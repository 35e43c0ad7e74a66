package harness

import (
	"slices"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/internal/protect"
	"github.com/chirality/harness/sandbox"
	"github.com/chirality/harness/session"
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
	return nil
}
