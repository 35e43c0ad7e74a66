package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/google/uuid"

	"github.com/chirality/harness"
	"github.com/chirality/harness/checkpoint"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/session"
)

// Conversation control (issue 21), extensions beside the seed's methods
// (PROTOCOL.md): thread.update switches what the next turns run with,
// thread.turns lists the turns, thread.fork copies a thread, and
// thread.rollback undoes turns (the conversation, the files or both).

// CodeUnsupported: the thread's engine cannot do what was asked (fork,
// cut its conversation), or the project's files cannot be restored.
const CodeUnsupported = -32005

// coreError is the one place this door maps an error of the core to the
// protocol's codes (specification 002's, and CodeUnsupported): by
// engine's error set (package engine, errors.go), which every sentinel of
// the core is or is a kind of, with a few particular sentinels named
// first where the protocol has a code or a word for them. A handler adds
// its context by wrapping (fmt.Errorf("thread %s: %w", id, err)).
func coreError(err error) *Error {
	code, word := codeOf(err)
	return errorf(code, word+": "+err.Error())
}

// codeOf is coreError's table: the code and the word its message starts
// with.
func codeOf(err error) (int, string) {
	switch {
	case errors.Is(err, engine.ErrBusy):
		return CodeTurnBusy, "turn busy"
	case errors.Is(err, harness.ErrSeqNotFound), errors.Is(err, engine.ErrNotRunning), errors.Is(err, harness.ErrNoTurnToSteer):
		return CodeTurnNotFound, "turn not found"
	case errors.Is(err, engine.ErrApprovalNotFound), errors.Is(err, engine.ErrApprovalResolved):
		return CodeApprovalMissing, "approval not found"
	case errors.Is(err, harness.ErrNoPlan):
		return CodeApprovalMissing, "plan not found"
	case errors.Is(err, harness.ErrNotFound):
		return CodeThreadNotFound, "thread not found: its session is gone"
	case errors.Is(err, harness.ErrPersonaNotFound), errors.Is(err, harness.ErrInvalidPersona):
		return CodeInvalidParams, "invalid params: agent"
	case errors.Is(err, harness.ErrInvalidPermissionMode), errors.Is(err, harness.ErrBypassRefused):
		return CodeInvalidParams, "invalid params: permissionMode"
	case errors.Is(err, harness.ErrInvalidEffort):
		return CodeInvalidParams, "invalid params: effort"
	case errors.Is(err, engine.ErrInvalid), errors.Is(err, engine.ErrRefused), errors.Is(err, engine.ErrFull),
		errors.Is(err, harness.ErrMessageTooLarge), errors.Is(err, harness.ErrInvalidMCPConfig):
		// The params ask for what cannot be, or too much.
		return CodeInvalidParams, "invalid params"
	case errors.Is(err, engine.ErrCannot), errors.Is(err, checkpoint.ErrNoGit):
		// The engine lacks the control (engine.ErrUnsupported is one), or
		// the project's files cannot be restored.
		return CodeUnsupported, "unsupported"
	}
	return CodeInternalError, "internal error"
}

// newSession makes the thread's session (its first turn, or a
// thread.update before it) with what the thread was given; the caller
// holds t.mu.
func (s *Server) newSession(t *thread, agent, eng, model string) *Error {
	if agent == "" {
		agent = t.meta.Agent
	}
	if eng == "" {
		eng = t.meta.Engine
	}
	if model == "" {
		model = t.meta.Model
	}
	spec := harness.SessionSpec{ProjectRoot: t.meta.Directory, Persona: agent, Mode: "direct",
		Engine: eng, Model: model, Title: t.meta.Title, Isolation: t.meta.Isolation, Base: t.meta.Base}
	if t.meta.Store == storeSession {
		// The thread is the session (same ID), its log the thread's
		// events.jsonl (specification 002).
		spec.ID, spec.Log = t.meta.ThreadID, session.LogThread
	}
	sess, err := s.h.NewSession(spec)
	if err != nil {
		// What the thread's params cannot make (no git repository for
		// a worktree, a base that is not there) is theirs to change.
		if e := coreError(err); e.Code != CodeInternalError && e.Code != CodeUnsupported {
			return e
		}
		return errorf(CodeInvalidParams, "invalid params: "+err.Error())
	}
	if t.meta.PermissionMode != "" || t.meta.Effort != "" {
		u := harness.SessionUpdate{}
		if t.meta.PermissionMode != "" {
			u.PermissionMode = &t.meta.PermissionMode
		}
		if t.meta.Effort != "" {
			u.Effort = &t.meta.Effort
		}
		if _, err := s.h.UpdateSession(sess.ID, u); err != nil {
			_ = s.h.DeleteSession(context.Background(), sess.ID)
			return coreError(err)
		}
	}
	t.meta.SessionID, t.meta.Engine, t.meta.Model, t.meta.Agent = sess.ID, sess.Engine, model, agent
	if err := t.saveMeta(); err != nil {
		s.log.Error().Err(err).Msg("meta.json not saved")
	}
	return nil
}

// threadUpdate is thread.update {threadId, agent?, model?: {providerID?,
// modelID?}, permissionMode?, effort?, title?} → {thread}: what the
// thread's next turns run with (a running turn is not changed). A field
// left out is kept; "" clears agent, modelID, permissionMode or effort
// (back to the defaults). The engine is the thread's: another providerID
// is -32602.
func (s *Server) threadUpdate(raw json.RawMessage) (any, *Error) {
	var p struct {
		Agent *string `json:"agent"`
		Model *struct {
			ProviderID string  `json:"providerID"`
			ModelID    *string `json:"modelID"`
		} `json:"model"`
		PermissionMode *string `json:"permissionMode"`
		Effort         *string `json:"effort"`
		Title          *string `json:"title"`
	}
	if err := params(raw, &p); err != nil {
		return nil, err
	}
	t, terr := s.thread(raw)
	if terr != nil {
		return nil, terr
	}
	str := func(v *string) string {
		if v == nil {
			return ""
		}
		return *v
	}
	checks := []*Error{tooLong("agent", str(p.Agent), MaxNameBytes), tooLong("permissionMode", str(p.PermissionMode), MaxNameBytes),
		tooLong("effort", str(p.Effort), MaxNameBytes), tooLong("title", str(p.Title), MaxTitleBytes)}
	var model *string
	eng := ""
	if p.Model != nil {
		checks = append(checks, tooLong("model.providerID", p.Model.ProviderID, MaxNameBytes), tooLong("model.modelID", str(p.Model.ModelID), MaxNameBytes))
		model = p.Model.ModelID
	}
	if err := firstTooLong(checks...); err != nil {
		return nil, err
	}
	if p.Model != nil {
		var eerr *Error
		if eng, eerr = engineFor(s.h, p.Model.ProviderID); eerr != nil {
			return nil, eerr
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.meta.SessionID == "" {
		// No turn yet: the session is made now, so what is asked is
		// checked now (a bad agent is refused here, not at the first turn).
		old := t.meta
		if t.meta.PermissionMode, t.meta.Effort = str(p.PermissionMode), str(p.Effort); p.Title != nil {
			t.meta.Title = *p.Title
		}
		if err := s.newSession(t, str(p.Agent), eng, str(model)); err != nil {
			t.meta = old
			return nil, err
		}
		return map[string]any{"thread": t.meta.Thread}, nil
	}
	if eng != "" && eng != t.meta.Engine {
		return nil, errorf(CodeInvalidParams, fmt.Sprintf("invalid params: this thread runs on %s; start a new thread for %s", t.meta.Engine, eng))
	}
	sess, err := s.h.UpdateSession(t.meta.SessionID, harness.SessionUpdate{Persona: p.Agent, Model: model,
		PermissionMode: p.PermissionMode, Effort: p.Effort, Title: p.Title})
	if err != nil {
		return nil, coreError(err)
	}
	t.meta.Agent, t.meta.Model, t.meta.PermissionMode, t.meta.Effort = sess.Persona, sess.Model, sess.PermissionMode, sess.Effort
	if p.Title != nil {
		t.meta.Title = *p.Title
	}
	t.meta.Time.Updated = nowMS()
	if err := t.saveMeta(); err != nil {
		s.log.Error().Err(err).Msg("meta.json not saved")
	}
	return map[string]any{"thread": t.meta.Thread}, nil
}

// TurnInfo is a turn as thread.turns lists it.
type TurnInfo struct {
	TurnID string `json:"turnId"`
	// Seq is its turn.started notification's.
	Seq  int64  `json:"seq"`
	Text string `json:"text"`
	// Checkpoint: its conversation can be cut after it; Files: a
	// snapshot of the project's files from before it exists; Rewound: a
	// thread.rollback undid it.
	Checkpoint bool `json:"checkpoint"`
	Files      bool `json:"files"`
	Rewound    bool `json:"rewound"`
}

// threadTurns is thread.turns {threadId} → {turns}: the thread's turns,
// oldest first.
func (s *Server) threadTurns(raw json.RawMessage) (any, *Error) {
	t, terr := s.thread(raw)
	if terr != nil {
		return nil, terr
	}
	t.mu.Lock()
	sid, refs := t.meta.SessionID, append([]turnRef(nil), t.meta.Turns...)
	t.mu.Unlock()
	out := []TurnInfo{}
	if sid == "" {
		return map[string]any{"turns": out}, nil
	}
	core, err := s.h.Turns(sid)
	if err != nil {
		return nil, coreError(err)
	}
	bySeq := map[int64]harness.TurnInfo{}
	for _, c := range core {
		bySeq[c.Seq] = c
	}
	for _, r := range refs {
		if c, ok := bySeq[r.Core]; ok {
			out = append(out, TurnInfo{TurnID: r.TurnID, Seq: r.Seq, Text: c.Text, Checkpoint: c.Checkpoint, Files: c.Files, Rewound: c.Rewound})
		}
	}
	return map[string]any{"turns": out}, nil
}

// idle returns the thread's session, or an error while a turn runs or
// before the first.
func (t *thread) idle(what string) (string, *Error) {
	if t.turn != nil {
		return "", errorf(CodeTurnBusy, "turn busy: thread "+t.meta.ThreadID+" has a turn running ("+t.turn.turn.TurnID+"); "+what+" waits for its end")
	}
	if t.meta.SessionID == "" || len(t.meta.Turns) == 0 {
		return "", errorf(CodeTurnNotFound, "turn not found: thread "+t.meta.ThreadID+" has no turn to "+what)
	}
	return t.meta.SessionID, nil
}

// threadFork is thread.fork {threadId, atSeq?} → {thread}: a new thread
// continuing a copy of the conversation up to the end of the turn that
// holds notification atSeq (all of it when absent or 0). Its history
// (thread.get) is the source's up to there, then thread.forked.
func (s *Server) threadFork(ctx context.Context, raw json.RawMessage) (any, *Error) {
	var p struct {
		AtSeq int64 `json:"atSeq"`
	}
	if err := params(raw, &p); err != nil {
		return nil, err
	}
	src, terr := s.thread(raw)
	if terr != nil {
		return nil, terr
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	sid, err := src.idle("fork")
	if err != nil {
		return nil, err
	}
	refs := src.meta.Turns
	cut := len(refs) - 1 // the last turn kept
	if p.AtSeq != 0 {
		cut = -1
		for i, r := range refs {
			if r.Seq <= p.AtSeq {
				cut = i
			}
		}
		last := src.next - 1
		if src.meta.Store != storeSession {
			l, lerr := src.events()
			if lerr != nil {
				return nil, errorf(CodeInternalError, "internal error: "+lerr.Error())
			}
			last = l.LastSeq()
		}
		if cut < 0 || p.AtSeq > last {
			return nil, errorf(CodeTurnNotFound, fmt.Sprintf("turn not found: no turn of thread %s holds seq %d", src.meta.ThreadID, p.AtSeq))
		}
	}
	atCore := int64(0)
	if cut < len(refs)-1 {
		atCore = refs[cut].Core
	}
	fo := harness.ForkOptions{AtSeq: atCore}
	if src.meta.Store == storeSession {
		fo.Log = session.LogThread // the fork is a thread too: its log its events.jsonl
	}
	sess, ferr := s.h.Fork(ctx, sid, fo)
	if ferr != nil {
		return nil, coreError(ferr)
	}
	now := nowMS()
	m := src.meta
	tid := uuid.NewString()
	if src.meta.Store == storeSession {
		tid = sess.ID
	}
	m.Thread = Thread{ThreadID: tid, Title: src.meta.Title, Directory: src.meta.Directory, Time: threadTime{Created: now, Updated: now},
		ForkedFrom: src.meta.ThreadID}
	m.SessionID, m.Engine = sess.ID, sess.Engine
	m.Turns = append([]turnRef(nil), refs[:cut+1]...)
	m.Notes = nil
	t := &thread{dir: filepath.Join(s.root, m.ThreadID), meta: m}
	// The history: thread.created, the source's notifications of the
	// turns kept (their threadId made this thread's; same seqs), then
	// thread.forked.
	if src.meta.Store == storeSession {
		// The turns kept render from the fork's copy of the log (the
		// same seqs); the source's notes up to there are copied.
		end := src.next - 1
		if cut+1 < len(refs) {
			end = refs[cut+1].Seq - 1
		}
		t.meta.Notes = append(t.meta.Notes, noteLine(1, "thread.created", map[string]any{"threadId": tid, "thread": m.Thread}))
		for _, n := range src.meta.Notes {
			var v struct {
				Seq    int64          `json:"seq"`
				Method string         `json:"method"`
				Params map[string]any `json:"params"`
			}
			if json.Unmarshal(n, &v) != nil || v.Seq <= 1 || v.Seq > end || v.Params == nil {
				continue
			}
			v.Params["threadId"] = tid
			t.meta.Notes = append(t.meta.Notes, noteLine(v.Seq, v.Method, v.Params))
		}
		t.next = end + 1
		if err := t.saveMeta(); err != nil {
			return nil, errorf(CodeInternalError, "internal error: "+err.Error())
		}
	} else {
		end := int64(0) // the last seq copied
		if l, lerr := src.events(); lerr == nil {
			end = l.LastSeq()
			if cut+1 < len(refs) {
				end = refs[cut+1].Seq - 1
			}
		}
		if err := t.saveMeta(); err != nil {
			return nil, errorf(CodeInternalError, "internal error: "+err.Error())
		}
		if cerr := s.copyHistory(src, t, end); cerr != nil {
			s.log.Error().Err(cerr).Msg("thread.fork: the history was not copied whole")
		}
	}
	s.mu.Lock()
	s.threads[m.ThreadID] = t
	s.mu.Unlock()
	return deferred{result: map[string]any{"thread": m.Thread}, then: func() {
		s.notify(t, "thread.forked", map[string]any{"threadId": m.ThreadID, "from": src.meta.ThreadID, "atSeq": p.AtSeq})
	}}, nil
}

// copyHistory writes dst's events.jsonl: thread.created, then src's
// notifications 2…end with dst's threadId. The caller holds src.mu; dst
// is not yet known to others.
func (s *Server) copyHistory(src, dst *thread, end int64) error {
	l, err := dst.events()
	if err != nil {
		return err
	}
	first, _ := json.Marshal(map[string]any{"method": "thread.created", "params": map[string]any{"seq": 1, "threadId": dst.meta.ThreadID, "thread": dst.meta.Thread}})
	if _, err := l.Append(first); err != nil {
		return err
	}
	from, err := src.events()
	if err != nil {
		return err
	}
	for rec, err := range from.Records(1) {
		if err != nil {
			return err
		}
		if rec.Seq > end {
			break
		}
		var n struct {
			Method string         `json:"method"`
			Params map[string]any `json:"params"`
		}
		if err := json.Unmarshal(rec.Event, &n); err != nil || n.Params == nil {
			return fmt.Errorf("seq %d: %v", rec.Seq, err)
		}
		n.Params["threadId"] = dst.meta.ThreadID
		if item, ok := n.Params["item"].(map[string]any); ok {
			item["threadId"] = dst.meta.ThreadID
		}
		if turn, ok := n.Params["turn"].(map[string]any); ok {
			turn["threadId"] = dst.meta.ThreadID
		}
		b, _ := json.Marshal(map[string]any{"method": n.Method, "params": n.Params})
		if _, err := l.Append(b); err != nil {
			return err
		}
	}
	return nil
}

// threadRollback is thread.rollback {threadId, toTurn, files?,
// conversation?} → {files, conversation}: undo turn toTurn (a turnId) and
// every turn after it. conversation (default true) cuts the conversation
// before it: the next turn continues from there; files (default false)
// restores the project's files as they were before it. The thread's
// history keeps everything and gets a thread.rolledBack notification.
func (s *Server) threadRollback(ctx context.Context, raw json.RawMessage) (any, *Error) {
	var p struct {
		ToTurn       string `json:"toTurn"`
		Files        *bool  `json:"files"`
		Conversation *bool  `json:"conversation"`
	}
	if err := params(raw, &p); err != nil {
		return nil, err
	}
	if err := tooLong("toTurn", p.ToTurn, MaxNameBytes); err != nil {
		return nil, err
	}
	if p.ToTurn == "" {
		return nil, errorf(CodeInvalidParams, "invalid params: toTurn (a turnId, as thread.turns lists them) is required")
	}
	o := harness.RewindOptions{Conversation: p.Conversation == nil || *p.Conversation, Files: p.Files != nil && *p.Files}
	if !o.Conversation && !o.Files {
		return nil, errorf(CodeInvalidParams, "invalid params: nothing to roll back: files and conversation are both false")
	}
	t, terr := s.thread(raw)
	if terr != nil {
		return nil, terr
	}
	t.mu.Lock()
	sid, err := t.idle("roll back")
	if err != nil {
		t.mu.Unlock()
		return nil, err
	}
	for _, r := range t.meta.Turns {
		if r.TurnID == p.ToTurn {
			o.ToTurn = r.Core
		}
	}
	if o.ToTurn == 0 {
		t.mu.Unlock()
		return nil, errorf(CodeTurnNotFound, "turn not found: thread "+t.meta.ThreadID+" has no turn "+clip(p.ToTurn))
	}
	res, rerr := s.h.Rewind(ctx, sid, o)
	t.mu.Unlock()
	if rerr != nil {
		return nil, coreError(rerr)
	}
	files := make([]map[string]string, 0, len(res.Files))
	paths := make([]string, 0, len(res.Files))
	for _, f := range res.Files {
		files = append(files, map[string]string{"path": f.Path, "op": f.Op})
		paths = append(paths, f.Path)
	}
	return deferred{result: map[string]any{"files": files, "conversation": res.Conversation}, then: func() {
		s.notify(t, "thread.rolledBack", map[string]any{"threadId": t.meta.ThreadID, "turnId": p.ToTurn, "files": paths,
			"conversation": res.Conversation})
	}}, nil
}
