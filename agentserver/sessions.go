package agentserver

import (
	"net/http"
)

// GET /sessions → 200 {"sessions": [SessionItem…]}: the sessions of the
// served session's project, newest first, with the branch each worktree
// session works on (the TUI's /sessions lists them).

// SessionItem is one session of GET /sessions.
type SessionItem struct {
	SessionID string `json:"sessionId"`
	Title     string `json:"title"`
	Engine    string `json:"engine"`
	// Current is the session this server serves.
	Current bool `json:"current"`
	// Running: a turn runs; PendingApprovals: questions it waits on.
	Running          bool `json:"running"`
	PendingApprovals int  `json:"pendingApprovals"`
	// Isolation, Branch and Base are a worktree session's.
	Isolation string `json:"isolation,omitempty"`
	Branch    string `json:"branch,omitempty"`
	Base      string `json:"base,omitempty"`
}

// SessionList is what GET /sessions answers.
type SessionList struct {
	Sessions []SessionItem `json:"sessions"`
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	cur := s.SessionID()
	root, err := s.ops.ProjectRoot(cur)
	if err != nil {
		writeError(w, err)
		return
	}
	list, err := s.h.ListSessions(root)
	if err != nil {
		writeError(w, err)
		return
	}
	out := SessionList{Sessions: make([]SessionItem, 0, len(list))}
	for _, x := range list {
		out.Sessions = append(out.Sessions, SessionItem{SessionID: x.ID, Title: x.Title, Engine: x.Engine, Current: x.ID == cur,
			Running: x.Running, PendingApprovals: x.PendingApprovals, Isolation: x.Isolation, Branch: x.Branch, Base: x.Base})
	}
	writeJSON(w, http.StatusOK, out)
}
