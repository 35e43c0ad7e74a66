package agentserver

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/chirality/harness"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/gateway/ops"
	"github.com/chirality/harness/internal/httpguard"
	"github.com/chirality/harness/session"
)

// Conversation control (issue 21): switch what the next turns run with,
// fork, rewind. The routes (behind the same guard as the others):
//
//	GET  /session   → 200 SessionView
//	POST /session   {"persona"?, "model"?, "permissionMode"?, "effort"?, "title"?} → 200 SessionView;
//	                a field left out is kept, "" clears the choice (back to the persona's and the
//	                server's); applies from the next turn (allowed while one runs). 404 unknown
//	                persona, 400 a bad permission mode or effort, 403 bypassPermissions not allowed
//	GET  /turns     → 200 {"turns": [{seq, text, checkpoint, files, rewound}]} (harness.TurnInfo)
//	POST /fork      {"atSeq"?} → 200 {"sessionId", "from"}: the server now serves the fork (a
//	                copy of the conversation up to the turn holding atSeq; all of it by default);
//	                every event stream says so with a session event and goes on with the fork.
//	                409 while a turn runs, 404 unknown atSeq, 422 the engine cannot fork
//	POST /rewind    {"toTurn"? | "turns"?, "files"?, "conversation"?} → 200 {"files": [{path, op}],
//	                "conversation"}: undo the turns from toTurn (a turn's seq, as /turns lists)
//	                or the last `turns` turns not already undone (default 1): the project's files
//	                as they were before it (files), the conversation cut there (conversation);
//	                at least one of them. The event streams get a rewound event. 409 while a turn
//	                runs, 404 no such turn (or no file snapshot before it), 422 the engine cannot
//	                cut its conversation or the project is too large to snapshot, 503 no git
//	GET  /rewind    ?turns=N | ?toTurn=S → 200 {"toTurn", "text", "files": [{path, op}], "filesError"?}:
//	                what POST /rewind with the same turn would undo, changing nothing: the turn's
//	                message and the files that would be restored; filesError says why its files
//	                cannot be (no snapshot before it, too large, no git), its conversation may
//	                still be cut. 404 no such turn, 400 a bad query
//
// Event stream ids after a session event are seqs of the new session.

// SessionView is what GET and POST /session answer.
type SessionView struct {
	SessionID      string `json:"sessionId"`
	Engine         string `json:"engine"`
	Persona        string `json:"persona"`
	Model          string `json:"model"`
	PermissionMode string `json:"permissionMode"`
	Effort         string `json:"effort"`
	Title          string `json:"title"`
	// Isolation ("worktree"), Workdir, Branch and Base are a worktree
	// session's: where its turns run, on which branch, from which base.
	Isolation string `json:"isolation,omitempty"`
	Workdir   string `json:"workdir,omitempty"`
	Branch    string `json:"branch,omitempty"`
	Base      string `json:"base,omitempty"`
}

func viewOf(s *session.Session) SessionView {
	return SessionView{SessionID: s.ID, Engine: s.Engine, Persona: s.Persona, Model: s.Model, PermissionMode: s.PermissionMode,
		Effort: s.Effort, Title: s.Title, Isolation: s.Isolation, Workdir: s.Workdir, Branch: s.Branch, Base: s.Base}
}

// MaxRewindTurns bounds POST /rewind's turns.
const MaxRewindTurns = ops.MaxRewindTurns

// ErrNothingToRewind: a rewind asked for neither files nor conversation
// (400).
var ErrNothingToRewind = ops.ErrNothingToRewind

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) {
	sess, err := s.h.Session(s.SessionID())
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, viewOf(sess))
}

func (s *Server) updateSession(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Persona        *string `json:"persona"`
		Model          *string `json:"model"`
		PermissionMode *string `json:"permissionMode"`
		Effort         *string `json:"effort"`
		Title          *string `json:"title"`
	}
	if err := decode(r, &body); err != nil {
		writeError(w, err)
		return
	}
	sess, err := s.ops.UpdateSession(s.SessionID(), harness.SessionUpdate{Persona: body.Persona, Model: body.Model,
		PermissionMode: body.PermissionMode, Effort: body.Effort, Title: body.Title})
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, viewOf(sess))
}

func (s *Server) turns(w http.ResponseWriter, r *http.Request) {
	turns, err := s.ops.Turns(s.SessionID())
	answer(w, http.StatusOK, map[string]any{"turns": turns}, err)
}

func (s *Server) fork(w http.ResponseWriter, r *http.Request) {
	var body struct {
		AtSeq int64 `json:"atSeq"`
	}
	if err := decode(r, &body); err != nil {
		writeError(w, err)
		return
	}
	from := s.SessionID()
	sess, err := s.Fork(r.Context(), body.AtSeq)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"sessionId": sess.ID, "from": from})
}

// Fork forks the session served (harness.Harness.Fork: up to the turn
// holding atSeq, all of it for 0) and serves the fork from then on: the
// event streams send a session event and go on with it. It fails with
// the Harness's errors (ErrBusy while a turn runs, ErrSeqNotFound,
// ErrUnsupported) and then changes nothing.
func (s *Server) Fork(ctx context.Context, atSeq int64) (*session.Session, error) {
	s.ctl.Lock()
	defer s.ctl.Unlock()
	from := s.SessionID()
	sess, err := s.ops.Fork(ctx, from, atSeq)
	if err != nil {
		return nil, err
	}
	forked, err := s.lastOf(sess.ID, event.TypeSessionForked, 0)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.id, s.moved = sess.ID, max(0, forked-1)
	s.mu.Unlock()
	s.wake()
	s.log.Info().Str("from", from).Str("session", sess.ID).Msg("forked: serving the fork")
	return sess, nil
}

func (s *Server) rewind(w http.ResponseWriter, r *http.Request) {
	var body struct {
		ToTurn       int64 `json:"toTurn"`
		Turns        int   `json:"turns"`
		Files        bool  `json:"files"`
		Conversation bool  `json:"conversation"`
	}
	if err := decode(r, &body); err != nil {
		writeError(w, err)
		return
	}
	res, err := s.Rewind(r.Context(), body.ToTurn, body.Turns, harness.RewindOptions{Files: body.Files, Conversation: body.Conversation})
	if res.Files == nil {
		res.Files = []harness.FileChange{}
	}
	answer(w, http.StatusOK, res, err)
}

// Rewind undoes the session's turns from toTurn (a user:message seq) or,
// when toTurn is 0, its last n turns not undone yet (0 = 1), as o says
// (o.ToTurn is set from them). It fails with ErrNothingToRewind,
// ops.ErrBadSeq (toTurn and turns both set, or out of range), the
// Harness's errors (ErrBusy, ErrSeqNotFound, ErrUnsupported); the event
// streams get the rewound event.
func (s *Server) Rewind(ctx context.Context, toTurn int64, n int, o harness.RewindOptions) (harness.RewindResult, error) {
	s.ctl.Lock()
	defer s.ctl.Unlock()
	res, err := s.ops.Rewind(ctx, s.SessionID(), toTurn, n, o)
	s.wake() // the session:rewound record (also after a partial failure)
	return res, err
}

// RewindPreview is what GET /rewind answers.
type RewindPreview struct {
	ToTurn     int64        `json:"toTurn"`
	Text       string       `json:"text"`
	Files      []FileChange `json:"files"`
	FilesError string       `json:"filesError,omitempty"`
}

// FileChange is a file a rewind would restore: its path in the project and
// op, as from the snapshot to the files now (added, modified, deleted).
type FileChange struct {
	Path string `json:"path"`
	Op   string `json:"op"`
}

func (s *Server) previewRewind(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var toTurn int64
	var n int
	var err error
	if v := q.Get("toTurn"); v != "" {
		if toTurn, err = strconv.ParseInt(v, 10, 64); err != nil || toTurn <= 0 {
			writeError(w, fmt.Errorf("%w: toTurn must be a turn's seq, got %s", ErrBadBody, httpguard.Quote(v)))
			return
		}
	}
	if v := q.Get("turns"); v != "" {
		if n, err = strconv.Atoi(v); err != nil || n <= 0 || n > MaxRewindTurns || toTurn != 0 {
			writeError(w, fmt.Errorf("%w: turns must be 1 to %d (and toTurn not given), got %s", ErrBadBody, MaxRewindTurns, httpguard.Quote(v)))
			return
		}
	}
	p, err := s.ops.PreviewRewind(r.Context(), s.SessionID(), toTurn, n)
	if err != nil {
		writeError(w, err)
		return
	}
	out := RewindPreview{ToTurn: p.Turn.Seq, Text: p.Turn.Text, Files: []FileChange{}, FilesError: p.FilesError}
	for _, c := range p.Files {
		out.Files = append(out.Files, FileChange{Path: c.Path, Op: c.Op})
	}
	writeJSON(w, http.StatusOK, out)
}

// trust is POST /trust: a person trusts a persona file or a project MCP
// server of the session's project, as a trust event showed it (hash).
func (s *Server) trust(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Kind string `json:"kind"`
		Name string `json:"name"`
		Path string `json:"path"`
		Hash string `json:"hash"`
	}
	if err := decode(r, &body); err != nil {
		writeError(w, err)
		return
	}
	root, err := s.ops.ProjectRoot(s.SessionID())
	if err != nil {
		writeError(w, err)
		return
	}
	it, err := s.ops.AcceptTrust(root, body.Kind, body.Name, body.Path, body.Hash)
	answer(w, http.StatusOK, map[string]any{"trusted": it}, err)
}
