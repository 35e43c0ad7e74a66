package agentserver

import (
	"net/http"

	"github.com/chirality/harness"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/session"
)

// The served session's prompt queue (issue 32; harness.StartOrQueue): the
// core's one queue, the same the gateway's routes show.
//
//	POST   /prompt {content, queue: true}  → 200 {accepted} (started) | 202 {queued, promptId, position}
//	GET    /queue                          → 200 {prompts: [{promptId, message, queuedAt}]}
//	PATCH  /queue/{promptId} {message?, position?} → 200 {prompts} | 404
//	DELETE /queue/{promptId}               → 204 | 404
//
// The core starts a queued prompt's turn itself when the turn before it
// ends; the server's event streams go on with it (watchTurns).

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
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		writeError(w, harness.ErrClosed)
		return
	}
	s.ctl.Lock() // not while a fork moves the server
	id := s.SessionID()
	t, q, err := s.h.StartOrQueue(r.Context(), id, content, harness.TurnOptions{})
	if t != nil {
		s.noteStart(t.StartSeq + 1)
	}
	s.ctl.Unlock()
	switch {
	case err != nil:
		writeError(w, err)
	case q != nil:
		writeJSON(w, http.StatusAccepted, QueuedAnswer{Queued: true, PromptID: q.PromptID, Position: q.Position})
	default:
		writeJSON(w, http.StatusOK, map[string]bool{"accepted": true})
	}
}

func (s *Server) getQueue(w http.ResponseWriter, r *http.Request) {
	list, err := s.h.Queue(s.SessionID())
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, QueueList{Prompts: orEmpty(list)})
}

func (s *Server) patchQueued(w http.ResponseWriter, r *http.Request) {
	var body QueueEditRequest
	if err := s.decode(w, r, &body); err != nil {
		writeError(w, err)
		return
	}
	list, err := s.h.EditQueued(s.SessionID(), r.PathValue("promptId"), harness.QueueEdit{Message: body.Message, Position: body.Position})
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, QueueList{Prompts: orEmpty(list)})
}

func (s *Server) deleteQueued(w http.ResponseWriter, r *http.Request) {
	if err := s.h.DeleteQueued(s.SessionID(), r.PathValue("promptId")); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func orEmpty(l []harness.QueuedPrompt) []harness.QueuedPrompt {
	if l == nil {
		return []harness.QueuedPrompt{}
	}
	return l
}

// noteStart records seq as the user:message that opens a turn (once)
// and wakes the streams waiting for the next turn.
func (s *Server) noteStart(seq int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.starts); n == 0 || s.starts[n-1] < seq {
		s.starts = append(s.starts, seq)
	}
	s.wakeLocked()
}

// watchTurns notes the turns of the served session that another hand
// started (the core, from the queue; another door) until Close, so
// that the streams go on with them as with the server's own. New starts
// it; Close waits for it.
func (s *Server) watchTurns(events <-chan session.Record, stop func()) {
	defer s.streams.Done()
	defer stop()
	for {
		select {
		case <-s.done:
			return
		case rec, ok := <-events:
			if !ok {
				return
			}
			ev := rec.Typed
			if ev == nil || ev.Type != event.TypeUserMessage || rec.Seq == 0 || ev.SessionID != s.SessionID() {
				continue
			}
			s.noteStart(rec.Seq)
		}
	}
}
