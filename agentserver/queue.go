package agentserver

import (
	"errors"
	"iter"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/chirality/harness"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/session"
)

// The served session's prompt queue (issue 32; harness.TurnRequest.Queue): the
// core's one queue, the same the gateway's routes show.
//
//	POST   /prompt {content, queue: true}  → 200 {accepted} (started) | 202 {queued, promptId, position}
//	GET    /queue                          → 200 {prompts: [{promptId, message, queuedAt}]}
//	PATCH  /queue/{promptId} {message?, position?} → 200 {prompts} | 404
//	DELETE /queue/{promptId}               → 204 | 404
//
// The core starts a queued prompt's turn itself when the turn before it
// ends; the server's event streams go on with it (watch).

// QueueList is GET /queue's answer (and PATCH's).
type QueueList struct {
	Prompts []harness.QueuedPrompt `json:"prompts"`
}

// QueuedAnswer is POST /prompt's answer when the prompt was queued.
type QueuedAnswer struct {
	Queued   bool   `json:"queued"`
	PromptID string `json:"promptId"`
	Position int    `json:"position"`
}

// QueueEditRequest is PATCH /queue/{promptId}'s body.
type QueueEditRequest struct {
	Message  *string `json:"message,omitempty"`
	Position *int    `json:"position,omitempty"`
}

// promptOrQueue is POST /prompt with queue: start the turn, or queue it
// behind the running one (and what is queued already).
func (s *Server) promptOrQueue(w http.ResponseWriter, r *http.Request, content string) {
	if s.isClosed() {
		writeError(w, harness.ErrClosed)
		return
	}
	s.ctl.Lock() // not while a fork moves the server
	_, err := s.ops.StartTurn(r.Context(), harness.TurnRequest{SessionID: s.SessionID(), Message: content, Queue: true})
	s.ctl.Unlock()
	s.wake()
	var q *harness.Queued
	switch {
	case errors.As(err, &q):
		writeJSON(w, http.StatusAccepted, QueuedAnswer{Queued: true, PromptID: q.PromptID, Position: q.Position})
	case err != nil:
		writeError(w, err)
	default:
		writeJSON(w, http.StatusOK, map[string]bool{"accepted": true})
	}
}

func (s *Server) getQueue(w http.ResponseWriter, r *http.Request) {
	list, err := s.ops.Queue(s.SessionID())
	answer(w, http.StatusOK, QueueList{Prompts: list}, err)
}

func (s *Server) patchQueued(w http.ResponseWriter, r *http.Request) {
	var body QueueEditRequest
	var list []harness.QueuedPrompt
	err := decode(r, &body)
	if err == nil {
		list, err = s.ops.EditQueued(s.SessionID(), mux.Vars(r)["promptId"], harness.QueueEdit{Message: body.Message, Position: body.Position})
	}
	answer(w, http.StatusOK, QueueList{Prompts: list}, err)
}

func (s *Server) deleteQueued(w http.ResponseWriter, r *http.Request) {
	if err := s.ops.DeleteQueued(s.SessionID(), mux.Vars(r)["promptId"]); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// watch wakes the event streams at every record of the served session
// but the deltas of a running turn (which a stream follows already) until
// Close: so the streams go on with what another hand did (the core's
// queue starting the next turn, another door's turn, fork or rewind) as
// with the server's own. Records the watch missed (its queue full) wake
// them too: they read the log. New starts it; Close ends and waits for it.
func (s *Server) watch(events iter.Seq2[session.Record, error]) {
	defer s.streams.Done()
	for rec, err := range events {
		if err != nil {
			s.wake()
			continue
		}
		ev := rec.Typed
		if ev.Type == event.TypeChatDelta || ev.Type == event.TypeThinkingDelta || ev.SessionID != s.SessionID() {
			continue
		}
		s.wake()
	}
}
