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
	Strategy string `json:"strategy,omitempty" oa:"enum=squash|merge|rebase" doc:"default squash"`
	Message  string `json:"message,omitempty" oa:"maxLength=65536" doc:"commit message of the merge (or squash), and of the commit of the session's uncommitted changes; at most 64 KiB, no NUL (400)"`
	Into     string `json:"into,omitempty" doc:"target branch (default: the branch the project has checked out)"`
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
		writeJSON(w, http.StatusConflict, mergeConflictJSON{Error: err.Error(), Conflicts: ce.Paths})
		return
	}
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}
