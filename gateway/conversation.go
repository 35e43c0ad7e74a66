package gateway

import (
	"fmt"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/chirality/harness"
)

// Conversation controls: switch (PATCH /session/{id}), fork, turns and
// rewind. The operations (package gateway/ops, agent serve's too) check
// and bound them and the core does the work; these handlers only read the
// request and answer. Errors go through statusOf like every other route.

type patchRequest struct {
	Title          *string `json:"title"`
	Persona        *string `json:"persona" doc:"a persona ID, or \"\" for none"`
	Model          *string `json:"model" doc:"the model of the next turns (\"\" = the persona's or the engine's default)"`
	PermissionMode *string `json:"permissionMode" doc:"default, acceptEdits, plan, dontAsk, bypassPermissions (the last only where the server allows it), or \"\" for the server's / persona's"`
	Effort         *string `json:"effort" doc:"reasoning effort for engines that take one (low, medium, high, …; \"\" = the engine's default)"`
	// Budget replaces the session's budget (a zero one removes it).
	Budget *harness.Budget `json:"budget" doc:"replaces the session's budget, set by a person (a zero one removes it)"`
}

// patchSession renames a session and changes what its next turns run with.
func (g *Gateway) patchSession(w http.ResponseWriter, r *http.Request) {
	var req patchRequest
	if err := decodeBody(r, &req); err != nil {
		g.writeError(w, r, err)
		return
	}
	if req.Title == nil && req.Persona == nil && req.Model == nil && req.PermissionMode == nil && req.Effort == nil && req.Budget == nil {
		g.writeError(w, r, fmt.Errorf("%w: nothing to change (send one of title, persona, model, permissionMode, effort, budget)", errBadBody))
		return
	}
	if req.Budget != nil {
		if !g.setBudget(w, r, mux.Vars(r)["id"], req.Budget) { // usage.go
			return
		}
		if req.Title == nil && req.Persona == nil && req.Model == nil && req.PermissionMode == nil && req.Effort == nil {
			g.getSession(w, r)
			return
		}
	}
	s, err := g.ops.UpdateSession(mux.Vars(r)["id"], harness.SessionUpdate{
		Title: req.Title, Persona: req.Persona, Model: req.Model, PermissionMode: req.PermissionMode, Effort: req.Effort,
	})
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, g.envelope(s))
}

type forkRequest struct {
	AtSeq int64 `json:"atSeq" oa:"format=int64,min=0" doc:"keep the conversation up to and including the turn that holds the event of this seq; 0 or absent = all of it"`
}

// forkSession answers 201 with the new session. The body is optional: none
// forks the whole conversation.
func (g *Gateway) forkSession(w http.ResponseWriter, r *http.Request) {
	var req forkRequest
	if r.ContentLength != 0 {
		if err := decodeBody(r, &req); err != nil {
			g.writeError(w, r, err)
			return
		}
	}
	s, err := g.ops.Fork(r.Context(), mux.Vars(r)["id"], req.AtSeq)
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, g.envelope(s))
}

// turnJSON is one turn as the API sends it.
type turnJSON struct {
	Seq        int64  `json:"seq" oa:"format=int64" doc:"the seq of the user:message that opened the turn (toTurn of a rewind)"`
	Text       string `json:"text" doc:"the user's message"`
	Checkpoint bool   `json:"checkpoint" doc:"the engine reported a position after this turn: a fork or rewind can cut the conversation right after it (a rewind to a later turn cuts after the last such turn before it)"`
	Files      bool   `json:"files" doc:"a snapshot of the project's files from before this turn exists"`
	Rewound    bool   `json:"rewound" doc:"a rewind undid this turn"`
}

func turnOf(t harness.TurnInfo) turnJSON {
	return turnJSON{Seq: t.Seq, Text: t.Text, Checkpoint: t.Checkpoint, Files: t.Files, Rewound: t.Rewound}
}

func (g *Gateway) listTurns(w http.ResponseWriter, r *http.Request) {
	turns, err := g.ops.Turns(mux.Vars(r)["id"])
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	out := make([]turnJSON, 0, len(turns))
	for _, t := range turns {
		out = append(out, turnOf(t))
	}
	writeJSON(w, http.StatusOK, out)
}

// changeJSON is one changed file as the API sends it: a file a rewind
// restored (harness.FileChange) or a preview's (checkpoint.Change, with its
// patch, cut by the checkpoint store's bounds).
type changeJSON struct {
	Path      string `json:"path" doc:"relative to the project root, with /"`
	Op        string `json:"op" oa:"enum=added|modified|deleted,open" doc:"what happened to the file since the snapshot (a rewind undoes it)"`
	Patch     string `json:"patch,omitempty" doc:"a unified diff from the snapshot to the file now (preview only; absent for binary files)"`
	Truncated bool   `json:"truncated,omitempty" doc:"the patch was cut to the gateway's limit"`
}

type rewindRequest struct {
	ToTurn       int64 `json:"toTurn" oa:"format=int64,min=1,required" doc:"the seq of the user:message of the turn to go back to: it and every later turn are undone"`
	Files        bool  `json:"files" doc:"restore the project's files as they were before that turn"`
	Conversation bool  `json:"conversation" doc:"cut the conversation there: the next turn continues from before it"`
}

type rewindJSON struct {
	Files        []changeJSON `json:"files" doc:"the files restored"`
	Conversation bool         `json:"conversation" doc:"the conversation was cut"`
}

// rewindSession goes back to before a turn: files, conversation or both.
func (g *Gateway) rewindSession(w http.ResponseWriter, r *http.Request) {
	var req rewindRequest
	if err := decodeBody(r, &req); err != nil {
		g.writeError(w, r, err)
		return
	}
	if req.ToTurn <= 0 {
		g.writeError(w, r, fmt.Errorf("%w: toTurn must be a positive integer (the seq of the turn's user:message)", errBadSeq))
		return
	}
	res, err := g.ops.Rewind(r.Context(), mux.Vars(r)["id"], req.ToTurn, 0, harness.RewindOptions{Files: req.Files, Conversation: req.Conversation})
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	files := make([]changeJSON, 0, len(res.Files))
	for _, c := range res.Files {
		files = append(files, changeJSON{Path: c.Path, Op: c.Op})
	}
	writeJSON(w, http.StatusOK, rewindJSON{Files: files, Conversation: res.Conversation})
}
