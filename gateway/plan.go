package gateway

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/chirality/harness"
)

// POST /session/{id}/plan: a person's decision on the plan the session's
// running turn waits with (plan:ready): approve (continue, the next turns
// in mode) or revise (feedback back to the agent). 409 when no plan
// waits.

type planDecisionRequest struct {
	Decision string `json:"decision" oa:"enum=approve|revise,required"`
	Mode     string `json:"mode,omitempty" oa:"enum=default|acceptEdits" doc:"approve only: the permission mode the agent continues in and the session's next turns run in (default: default)"`
	Feedback string `json:"feedback,omitempty" oa:"maxLength=65536" doc:"revise only (required): what the agent is told to change"`
}

type planDecisionAnswer struct {
	// Decided is true: plan:resolved is in the log and the agent has it.
	Decided bool `json:"decided" doc:"true: plan:resolved is in the log and the agent has the answer"`
}

func (g *Gateway) decidePlan(w http.ResponseWriter, r *http.Request) {
	var req planDecisionRequest
	if err := decodeBody(r, &req); err != nil {
		g.writeError(w, r, err)
		return
	}
	err := g.ops.DecidePlan(mux.Vars(r)["id"], harness.PlanDecision{Decision: req.Decision, Mode: req.Mode, Feedback: req.Feedback})
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, planDecisionAnswer{Decided: true})
}
