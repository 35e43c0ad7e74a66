package gateway

import (
	"errors"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/chirality/harness"
	"github.com/chirality/harness/internal/eventsel"
)

// The session's prompt queue (harness.TurnRequest.Queue): POST /turn with
// queue true queues behind a running turn (202); these routes list, edit,
// move and delete what is queued.

type queueList struct {
	Prompts []harness.QueuedPrompt `json:"prompts"`
}

type queueAnswer struct {
	Queued   bool   `json:"queued" oa:"const=true"`
	PromptID string `json:"promptId"`
	Position int    `json:"position" oa:"min=0" doc:"0 = next to run"`
}

// queueTurn is POST /turn with queue: the turn starts (its stream, as
// without queue) or the message is queued (202).
func (g *Gateway) queueTurn(w http.ResponseWriter, r *http.Request, req turnRequest, sel eventsel.Set) {
	t, err := g.ops.StartTurn(r.Context(), harness.TurnRequest{SessionID: req.SessionID, Message: req.Message, Options: req.options(), Queue: true})
	var q *harness.Queued
	switch {
	case errors.As(err, &q):
		writeJSON(w, http.StatusAccepted, queueAnswer{Queued: true, PromptID: q.PromptID, Position: q.Position})
	case err != nil:
		g.writeError(w, r, err)
	default:
		g.stream(w, r, req.SessionID, t.StartSeq, sel)
	}
}

func (g *Gateway) getQueue(w http.ResponseWriter, r *http.Request) {
	list, err := g.ops.Queue(mux.Vars(r)["id"])
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, queueList{Prompts: list})
}

type queueEditRequest struct {
	Message  *string `json:"message" oa:"minLength=1" doc:"the prompt's new text"`
	Position *int    `json:"position" oa:"min=0" doc:"move it here (0 = next; past the end = last)"`
}

func (g *Gateway) patchQueued(w http.ResponseWriter, r *http.Request) {
	var req queueEditRequest
	if err := decodeBody(r, &req); err != nil {
		g.writeError(w, r, err)
		return
	}
	v := mux.Vars(r)
	list, err := g.ops.EditQueued(v["id"], v["promptId"], harness.QueueEdit{Message: req.Message, Position: req.Position})
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, queueList{Prompts: list})
}

func (g *Gateway) deleteQueued(w http.ResponseWriter, r *http.Request) {
	v := mux.Vars(r)
	if err := g.ops.DeleteQueued(v["id"], v["promptId"]); err != nil {
		g.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
