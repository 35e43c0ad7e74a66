package gateway

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/chirality/harness"
)

// sessionDiff answers what a worktree session changed since its base:
// {base, branch, files, patch}.
func (g *Gateway) sessionDiff(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Minute)
	defer cancel()
	d, err := g.h.SessionDiff(ctx, mux.Vars(r)["id"])
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}

type mergeRequest struct {
	Strategy string `json:"strategy,omitempty"`
	Message  string `json:"message,omitempty"`
	Into     string `json:"into,omitempty"`
}

// mergeSession merges a worktree session's branch: 200 {merged, commit,
// into}, or 409 {error, conflicts} with the target untouched.
func (g *Gateway) mergeSession(w http.ResponseWriter, r *http.Request) {
	var req mergeRequest
	if err := decodeBody(r, &req); err != nil {
		g.writeError(w, r, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Minute)
	defer cancel()
	res, err := g.h.MergeSession(ctx, mux.Vars(r)["id"], harness.MergeOptions{Strategy: req.Strategy, Message: req.Message, Into: req.Into})
	var ce *harness.MergeConflictError
	if errors.As(err, &ce) {
		writeJSON(w, http.StatusConflict, map[string]any{"error": err.Error(), "merged": false, "conflicts": ce.Paths})
		return
	}
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}
