package agentserver

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/chirality/harness"
	"github.com/chirality/harness/internal/httpapi"
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
const MaxRewindTurns = 1000

// ErrNothingToRewind: a rewind asked for neither files nor conversation
// (400).
var ErrNothingToRewind = httpapi.BadRequest("a rewind needs files, conversation or both set to true")

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
	if err := s.decode(w, r, &body); err != nil {
		writeError(w, err)
		return
	}
	sess, err := s.h.UpdateSession(s.SessionID(), harness.SessionUpdate{Persona: body.Persona, Model: body.Model,
		PermissionMode: body.PermissionMode, Effort: body.Effort, Title: body.Title})
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, viewOf(sess))
}

func (s *Server) turns(w http.ResponseWriter, r *http.Request) {
	turns, err := s.h.Turns(s.SessionID())
	if err != nil {
		writeError(w, err)
		return
	}
	if turns == nil {
		turns = []harness.TurnInfo{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"turns": turns})
}

func (s *Server) fork(w http.ResponseWriter, r *http.Request) {
	var body struct {
		AtSeq int64 `json:"atSeq"`
	}
	if err := s.decode(w, r, &body); err != nil {
		writeError(w, err)
		return
	}
	from := s.SessionID()
	ctx, cancel := context.WithTimeout(r.Context(), conversationTimeout)
	defer cancel()
	sess, err := s.Fork(ctx, body.AtSeq)
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
	if atSeq < 0 {
		return nil, fmt.Errorf("%w: atSeq must be a seq (1 or more), or 0 for the whole conversation", ErrBadBody)
	}
	s.ctl.Lock()
	defer s.ctl.Unlock()
	from := s.SessionID()
	sess, err := s.h.Fork(ctx, from, harness.ForkOptions{AtSeq: atSeq})
	if err != nil {
		return nil, err
	}
	starts, forked, err := s.scan(sess.ID, 0)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.id, s.starts, s.moved = sess.ID, starts, max(0, forked-1)
	s.wakeLocked()
	s.mu.Unlock()
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
	if err := s.decode(w, r, &body); err != nil {
		writeError(w, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), conversationTimeout)
	defer cancel()
	res, err := s.Rewind(ctx, body.ToTurn, body.Turns, harness.RewindOptions{Files: body.Files, Conversation: body.Conversation})
	if err != nil {
		writeError(w, err)
		return
	}
	if res.Files == nil {
		res.Files = []harness.FileChange{}
	}
	writeJSON(w, http.StatusOK, res)
}

// Rewind undoes the session's turns from toTurn (a user:message seq) or,
// when toTurn is 0, its last n turns not undone yet (0 = 1), as o says
// (o.ToTurn is set from them). It fails with ErrNothingToRewind, ErrBadBody
// (toTurn and turns both set, or out of range), the Harness's errors
// (ErrBusy, ErrSeqNotFound, ErrUnsupported); the event streams get the
// rewound event.
func (s *Server) Rewind(ctx context.Context, toTurn int64, n int, o harness.RewindOptions) (harness.RewindResult, error) {
	switch {
	case !o.Files && !o.Conversation:
		return harness.RewindResult{}, ErrNothingToRewind
	case toTurn != 0 && n != 0:
		return harness.RewindResult{}, fmt.Errorf("%w: give toTurn or turns, not both", ErrBadBody)
	case toTurn < 0 || n < 0 || n > MaxRewindTurns:
		return harness.RewindResult{}, fmt.Errorf("%w: toTurn is a turn's seq; turns is 1 to %d", ErrBadBody, MaxRewindTurns)
	}
	s.ctl.Lock()
	defer s.ctl.Unlock()
	id := s.SessionID()
	t, err := s.target(id, toTurn, n)
	if err != nil {
		return harness.RewindResult{}, err
	}
	o.ToTurn = t.Seq
	res, err := s.h.Rewind(ctx, id, o)
	s.mu.Lock()
	s.wakeLocked() // the session:rewound record (also after a partial failure)
	s.mu.Unlock()
	return res, err
}

// target is the turn a rewind of session id goes back to: the one whose
// user:message is seq toTurn, or (toTurn 0) the n-th last turn not undone
// yet (n 0 = 1). It fails with harness.ErrSeqNotFound.
func (s *Server) target(id string, toTurn int64, n int) (harness.TurnInfo, error) {
	turns, err := s.h.Turns(id)
	if err != nil {
		return harness.TurnInfo{}, err
	}
	if toTurn != 0 {
		for _, t := range turns {
			if t.Seq == toTurn {
				return t, nil
			}
		}
		return harness.TurnInfo{}, fmt.Errorf("%w: %d is not the seq of a turn of this session (GET /turns)", harness.ErrSeqNotFound, toTurn)
	}
	var live []harness.TurnInfo
	for _, t := range turns {
		if !t.Rewound {
			live = append(live, t)
		}
	}
	n = max(n, 1)
	if n > len(live) {
		return harness.TurnInfo{}, fmt.Errorf("%w: %d turn(s) to undo, not %d", harness.ErrSeqNotFound, len(live), n)
	}
	return live[len(live)-n], nil
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
	id := s.SessionID()
	t, err := s.target(id, toTurn, n)
	if err != nil {
		writeError(w, err)
		return
	}
	out := RewindPreview{ToTurn: t.Seq, Text: t.Text, Files: []FileChange{}}
	ctx, cancel := context.WithTimeout(r.Context(), conversationTimeout)
	defer cancel()
	changes, filesError, err := httpapi.FilesPreview(ctx, s.h, id, t.Seq)
	if err != nil {
		writeError(w, err)
		return
	}
	out.FilesError = filesError
	for _, c := range changes {
		out.Files = append(out.Files, FileChange{Path: c.Path, Op: c.Op})
	}
	writeJSON(w, http.StatusOK, out)
}

// conversationTimeout bounds a fork, a rewind and GET /rewind's diff of
// the project's files, as at the gateway.
const conversationTimeout = httpapi.ConversationTimeout

// trust is POST /trust: a person trusts a persona file or a project MCP
// server of the session's project, as a trust event showed it (hash).
func (s *Server) trust(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Kind string `json:"kind"`
		Name string `json:"name"`
		Path string `json:"path"`
		Hash string `json:"hash"`
	}
	if err := s.decode(w, r, &body); err != nil {
		writeError(w, err)
		return
	}
	if body.Kind == "" || body.Hash == "" || (body.Name == "" && body.Path == "") {
		writeError(w, fmt.Errorf("%w: kind, hash and name or path are required", ErrBadBody))
		return
	}
	sess, err := s.h.Session(s.SessionID())
	if err != nil {
		writeError(w, err)
		return
	}
	it, err := s.h.AcceptTrust(sess.ProjectRoot, body.Kind, body.Name, body.Path, body.Hash)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"trusted": it})
}
