package gateway

import (
	"net/http"

	"github.com/gorilla/mux"
)

// POST /session/{id}/steer: a person's message put into the running
// turn (harness.Steer). 200 once the engine has it; 409 when no turn
// runs; 422 naming the engines that can when the session's cannot.

type steerRequest struct {
	Message string `json:"message" oa:"required,minLength=1,maxLength=262144" doc:"the person's words, at most 256 KiB"`
}

type steerAnswer struct {
	// Delivered is true: the running turn has the message.
	Delivered bool `json:"delivered" doc:"true: the running turn has the message"`
}

func (g *Gateway) steer(w http.ResponseWriter, r *http.Request) {
	var req steerRequest
	if err := decodeBody(r, &req); err != nil {
		g.writeError(w, r, err)
		return
	}
	if err := g.ops.Steer(r.Context(), mux.Vars(r)["id"], req.Message); err != nil {
		g.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, steerAnswer{Delivered: true})
}
