package agentserver

import (
	"net/http"
)

// Steering (issue 32; harness.Steer), an opt-in extension of agent
// serve's contract: a person's message put into the running turn, which
// the engine takes at its next step (the native loop's next model call,
// Claude Code's streamed input, Codex's turn/steer, an ACP agent that
// advertises steering). The message is a user event of the running turn
// on GET /events; it never starts a turn.
//
//	POST /steer {"content": "…"} → 200 {"ok":true} once the engine has it;
//	            409 when no turn runs (send it with POST /prompt, or queue it);
//	            422 naming the engines that can when the session's cannot;
//	            400 for an empty content or a malformed body

// SteerRequest is POST /steer's body.
type SteerRequest struct {
	Content string `json:"content"`
}

// SteerAnswer is POST /steer's answer: OK is true, the running turn has
// the message.
type SteerAnswer struct {
	OK bool `json:"ok"`
}

func (s *Server) steer(w http.ResponseWriter, r *http.Request) {
	var body SteerRequest
	err := decode(r, &body)
	if err == nil {
		err = s.ops.Steer(r.Context(), s.SessionID(), body.Content)
	}
	answer(w, http.StatusOK, SteerAnswer{OK: true}, err)
}
