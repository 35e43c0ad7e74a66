package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/chirality/harness/checkpoint"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/internal/atomicfile"
	"github.com/chirality/harness/internal/secrets"
	"github.com/chirality/harness/persona"
	"github.com/chirality/harness/session"
)

// Conversation control: switch what a session runs with, fork it, rewind
// it. Each works between turns of any engine that can; an engine that
// cannot is refused with ErrUnsupported (engine.Status.Controls says
// which can what).

// SessionUpdate changes what a session's next turns run with; nil fields
// are kept, a pointer to "" clears the session's choice (back to the
// persona's and the server's).
type SessionUpdate struct {
	Title, Persona, Model, PermissionMode, Effort *string
}

// ForkOptions say where a fork cuts its source's conversation.
type ForkOptions struct {
	// AtSeq is 0 for the whole conversation, else the seq of any event
	// of the turn to keep last: whole turns up to that one are kept.
	AtSeq int64
	// Log is where the fork's event log is (session.Session.Log: "" or
	// session.LogThread; the source's is not inherited).
	Log string
}

// RewindOptions say what a rewind undoes.
type RewindOptions struct {
	// ToTurn is the seq of the user:message event that opened the turn to
	// go back to: that turn and all after it are undone.
	ToTurn int64
	// Files restores the project's files as they were before that turn.
	Files bool
	// Conversation cuts the conversation there: the next turn resumes it
	// as it was before that turn.
	Conversation bool
}

// FileChange is one file a rewind restored, or a preview would: its path
// relative to the project root, Op (added, modified or deleted, as from
// the snapshot to the files now) and, in a preview, its unified diff.
type FileChange = checkpoint.Change

// RewindResult says what a rewind changed.
type RewindResult struct {
	// Files are the files restored (none when Files was not asked).
	Files []FileChange `json:"files"`
	// Conversation is true when the conversation was cut.
	Conversation bool `json:"conversation"`
}

// TurnInfo is one turn of a session, as Turns lists it.
type TurnInfo struct {
	// Seq is the seq of the turn's user:message event (the turn's id for
	// Rewind's ToTurn and Fork's AtSeq).
	Seq int64 `json:"seq"`
	// Text is the user's message.
	Text string `json:"text"`
	// Checkpoint is true when the conversation can be cut after this
	// turn (its engine reported a checkpoint).
	Checkpoint bool `json:"checkpoint"`
	// Files is true when a snapshot of the project's files from before
	// this turn exists.
	Files bool `json:"files"`
	// Rewound is true when a later rewind undid this turn.
	Rewound bool `json:"rewound"`
}

// UpdateSession changes what session id's next turns run with (persona,
// model, permission mode, effort) and its title. A running turn is not
// changed: the update applies from the next turn, which is planned with
// it as a session created with it would be. The session's warm agent, if
// one waits, is dropped. A persona switched on a conversation that
// already started reaches the model as the engine can (see
// engine.Request.PromptChanged).
//
// It fails with ErrInvalidID, ErrNotFound, ErrPersonaNotFound,
// ErrInvalidPersona, ErrInvalidPermissionMode, ErrBypassRefused or
// ErrInvalidEffort, and then changes nothing.
func (h *Harness) UpdateSession(id string, u SessionUpdate) (*session.Session, error) {
	if !session.ValidID(id) {
		return nil, fmt.Errorf("%w %q", ErrInvalidID, id)
	}
	unlock := h.lockSession(id)
	defer unlock()
	s, err := h.Session(id)
	if err != nil {
		return nil, err
	}
	if testHookUpdateRead != nil {
		testHookUpdateRead()
	}
	h.trustSession(s) // what a person chose, not what the file says
	var chosen *persona.Persona
	if u.Persona != nil && *u.Persona != "" {
		if chosen, err = persona.Load(s.ProjectRoot, *u.Persona); err != nil {
			return nil, mapPersonaErrIn(s.ProjectRoot, err)
		}
	}
	if u.Model != nil && (strings.ContainsRune(*u.Model, 0) || len(*u.Model) > 200) {
		return nil, fmt.Errorf("%w: model name", ErrInvalidID)
	}
	if u.PermissionMode != nil && *u.PermissionMode != "" {
		if _, err := h.cfg.permissionModeFor(nil, *u.PermissionMode); err != nil {
			return nil, err
		}
	}
	if u.Effort != nil {
		if err := engine.CheckEffort(*u.Effort); err != nil {
			return nil, err
		}
	}
	apply := func(s *session.Session) {
		if u.Title != nil {
			s.Title = titleOf(*u.Title)
		}
		if u.Persona != nil {
			s.Persona = *u.Persona
		}
		if u.Model != nil {
			s.Model = *u.Model
		}
		if u.PermissionMode != nil {
			s.PermissionMode = *u.PermissionMode
		}
		if u.Effort != nil {
			s.Effort = *u.Effort
		}
	}
	h.mu.Lock()
	lt := h.live[id]
	h.mu.Unlock()
	if r := liveRunner(lt); r != nil {
		// The running turn owns the session's copy: change it there.
		r.smu.Lock()
		apply(r.s)
		if u.Persona != nil || u.PermissionMode != nil {
			h.choose(r.s, chosen) // a person chose them
		}
		r.saveLocked("update")
		c := *r.s
		r.smu.Unlock()
		return &c, nil
	}
	// No turn runs, and none starts (lockSession): the session as the
	// last turn's last save left it, which may have come after the read
	// above (a turn saves, then is forgotten).
	if s, err = h.Session(id); err != nil {
		return nil, err
	}
	h.trustSession(s)
	apply(s)
	if u.Persona != nil || u.PermissionMode != nil {
		// a person chose them: recorded before the file, so a turn
		// starting in between finds the record agreeing with the file
		h.choose(s, chosen)
	}
	if err := h.store.Save(s); err != nil {
		return nil, mapStoreErr(err)
	}
	if u.Persona != nil || u.Model != nil || u.PermissionMode != nil || u.Effort != nil {
		h.dropWarm(id, nil, "the session was switched")
	}
	h.projectLog(s.ProjectRoot).Info().Str("sessionId", id).Str("persona", s.Persona).Str("model", s.Model).
		Str("permissionMode", s.PermissionMode).Str("effort", s.Effort).Msg("session updated")
	return s, nil
}

// testHookUpdateRead, when set by a test, runs in UpdateSession right
// after its first read of the session.
var testHookUpdateRead func()

// lockSession serialises what changes a session's record outside a
// turn's runner (UpdateSession, Fork, Rewind) with a turn's start. It
// returns the unlock.
func (h *Harness) lockSession(id string) func() { return h.locks.Lock(id) }

// idleSession returns session id, locked and reserved, when no turn runs
// on it: the start of Fork and Rewind. The returned func ends both. It fails with ErrInvalidID, ErrNotFound,
// ErrBusy (a turn runs or the session is being deleted) or ErrClosed.
func (h *Harness) idleSession(id string) (*session.Session, func(), error) {
	if !session.ValidID(id) {
		return nil, nil, fmt.Errorf("%w %q", ErrInvalidID, id)
	}
	unlock := h.lockSession(id)
	if _, err := h.Session(id); err != nil { // its errors before ErrBusy
		unlock()
		return nil, nil, err
	}
	// Reserved as a turn would be: no turn starts and no delete goes on
	// meanwhile.
	release, err := h.reserve(id)
	if errors.Is(err, ErrBusy) {
		err = fmt.Errorf("%w: wait for the turn to end (or interrupt it) first", ErrBusy)
	}
	if err != nil {
		unlock()
		return nil, nil, err
	}
	// Read once reserved: a turn that was ending (reserve waits for it)
	// saves the session as it ends.
	s, err := h.Session(id)
	if err != nil {
		release()
		unlock()
		return nil, nil, err
	}
	h.trustSession(s) // what a person chose, not what the file says
	return s, func() { release(); unlock() }, nil
}

// turnRec is one turn as the event log tells it.
type turnRec struct {
	seq, end   int64  // its user:message's seq, its last event's
	text       string // the message
	conv       string // the conversation its session:init reported ("" = none)
	checkpoint string // its session:complete's
	prev       int    // the turn before it in its conversation (index; -1 = none)
	rewound    bool   // a later rewind of the conversation undid it
}

// turnsOf reads session id's turns from its event log.
func (h *Harness) turnsOf(id string) ([]turnRec, int64, error) {
	elog, err := h.store.EventLog(id)
	if err != nil {
		return nil, 0, mapStoreErr(err)
	}
	var turns []turnRec
	var active []int // the turns of the current conversation, oldest first
	cur := -1
	var last int64
	for rec, err := range elog.Records(0) {
		if err != nil {
			return nil, 0, err
		}
		last = rec.Seq
		ev, err := rec.Decode()
		if err != nil {
			continue
		}
		switch ev.Type {
		case event.TypeUserMessage:
			prev := -1
			if len(active) > 0 {
				prev = active[len(active)-1]
			}
			turns = append(turns, turnRec{seq: rec.Seq, end: rec.Seq, text: ev.Text, prev: prev})
			cur = len(turns) - 1
			active = append(active, cur)
		case event.TypeSessionRewound:
			cur = -1
			if ev.Rewound == nil || !ev.Rewound.Conversation {
				continue
			}
			for _, i := range slicesBackward(active) {
				if turns[i].seq < ev.Rewound.ToTurn {
					break
				}
				active = active[:len(active)-1]
			}
			for i := range turns {
				if turns[i].seq >= ev.Rewound.ToTurn {
					turns[i].rewound = true
				}
			}
		case event.TypeSessionForked:
			cur = -1
		default:
			if cur < 0 {
				continue
			}
			t := &turns[cur]
			t.end = rec.Seq
			switch {
			case ev.Type == event.TypeSessionInit && ev.Init != nil:
				t.conv = ev.Init.ConversationID
			case ev.Type == event.TypeSessionComplete && ev.Complete != nil:
				t.checkpoint = ev.Complete.Checkpoint
			case ev.Type == event.TypeProcessExit:
				cur = -1
			}
		}
	}
	return turns, last, nil
}

// slicesBackward yields the elements of s from last to first.
func slicesBackward(s []int) []int {
	out := make([]int, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}

// Turns lists session id's turns, oldest first (a fork's include the
// turns it copied from its source). It fails with ErrInvalidID or
// ErrNotFound.
func (h *Harness) Turns(id string) ([]TurnInfo, error) {
	s, err := h.Session(id)
	if err != nil {
		return nil, err
	}
	recs, _, err := h.turnsOf(id)
	if err != nil {
		return nil, err
	}
	snaps := map[int64]bool{}
	if cps, err := readCheckpoints(s); err == nil {
		for _, c := range cps {
			snaps[c.Seq] = c.Snapshot != ""
		}
	}
	out := make([]TurnInfo, len(recs))
	for i, t := range recs {
		out[i] = TurnInfo{Seq: t.seq, Text: t.text, Checkpoint: t.checkpoint != "" && t.conv != "", Files: snaps[t.seq], Rewound: t.rewound}
	}
	return out, nil
}

// cutAfter is how a conversation continues after turn i of turns: the
// pending state of a next turn that resumes it up to that turn's end.
// A turn that did not complete has no checkpoint: the cut falls after the
// last completed turn before it in its conversation (none: a fresh
// conversation).
func cutAfter(turns []turnRec, i int, ctl engine.Controls) *session.Pending {
	for i >= 0 && (turns[i].checkpoint == "" || turns[i].conv == "") {
		i = turns[i].prev
	}
	if i < 0 {
		return &session.Pending{}
	}
	// With Fork whenever the engine can: the cut is made on a copy, so no
	// conversation a turn of the log names is ever changed (a later
	// rewind or fork may still need it as it was).
	return &session.Pending{Resume: turns[i].conv, ResumeAt: turns[i].checkpoint, Fork: ctl.Fork}
}

// unsupported is ErrUnsupported with the engine's name and what it
// cannot do.
func unsupported(engineName, what string) error {
	return fmt.Errorf("%w: the %s engine cannot %s (GET /engines lists each engine's controls)", ErrUnsupported, engineName, what)
}

// Fork makes a new session that continues a copy of session id's
// conversation: all of it (o.AtSeq 0), or whole turns up to the one that
// holds event o.AtSeq. The new session has the same project, persona,
// engine, model, permission mode, effort and rules; its event log starts
// with a copy of the source's records up to the cut (re-stamped with the
// new session's id), then session:forked. Its engine's state directory is
// copied too. Its first turn continues the copy (engine.Request.Fork,
// cut with ResumeAt); the source is left as it was.
//
// The fork point is pinned when the fork is made, not at the fork's first
// turn: a turn the source runs in between is not in the fork. An engine
// that can cut (Controls.Rewind: Claude Code's --resume-session-at, Codex's
// lastTurnId) continues the copy up to the source's last completed turn's
// checkpoint; the native loop's history is the state directory copied now;
// an engine that cannot cut but can copy at once (engine.Forker: the ACP
// agents' session/fork) copies the conversation before Fork returns.
//
// It fails with ErrInvalidID, ErrNotFound, ErrSeqNotFound (o.AtSeq is not
// in the log), ErrBusy (a turn of the source runs) or ErrUnsupported (the
// engine cannot fork, or cannot cut when o.AtSeq is before the last turn).
func (h *Harness) Fork(ctx context.Context, id string, o ForkOptions) (*session.Session, error) {
	s, unlock, err := h.idleSession(id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if s.Isolation != "" {
		return nil, errForkIsolated // worktrees.go
	}
	name := h.sessionEngine(s)
	eng, err := h.engineFor(name)
	if err != nil {
		return nil, err
	}
	ctl := engine.ControlsOf(eng)
	turns, last, err := h.turnsOf(id)
	if err != nil {
		return nil, err
	}
	if o.AtSeq < 0 || o.AtSeq > last {
		return nil, fmt.Errorf("%w: session %s has no event %d (its last is %d)", ErrSeqNotFound, id, o.AtSeq, last)
	}
	copyTo := last
	var pending *session.Pending
	switch {
	case len(turns) == 0:
		// Nothing said yet: the fork starts fresh.
	case o.AtSeq == 0 || (o.AtSeq >= turns[len(turns)-1].seq && s.Pending == nil):
		if !ctl.Fork {
			return nil, unsupported(name, "fork a conversation")
		}
		switch {
		case s.Pending != nil:
			p := *s.Pending // the source's own cut, not yet taken
			p.Fork = p.Resume != ""
			pending = &p
		case s.ConversationID != "":
			pending = &session.Pending{Resume: s.ConversationID, Fork: true}
			// Pinned where the conversation is now: the fork's first turn
			// may run after more turns of the source, which must not end
			// up in the fork. An engine that can cut continues the copy up
			// to the source's last completed turn (its checkpoint).
			if ctl.Rewind {
				if p := cutAfter(turns, len(turns)-1, ctl); p.Resume == s.ConversationID && p.ResumeAt != "" {
					pending = p
				}
			}
		}
	default:
		k := -1
		for i, t := range turns {
			if t.seq <= o.AtSeq {
				k = i
			}
		}
		if k < 0 {
			copyTo = o.AtSeq // before the first turn: a fresh conversation
			break
		}
		if !ctl.Fork || !ctl.Rewind {
			return nil, unsupported(name, "fork a conversation inside it (at an earlier turn)")
		}
		copyTo = turns[k].end
		pending = cutAfter(turns, k, ctl)
		if pending.Resume == "" {
			pending = nil
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	title := s.Title
	if title != "" {
		title = titleOf("Fork of " + title)
	}
	ns, err := h.store.Add(session.Session{ProjectRoot: s.ProjectRoot, Persona: s.Persona, Mode: s.Mode, Engine: name,
		Model: s.Model, PermissionMode: s.PermissionMode, Effort: s.Effort, Rules: s.Rules, Title: title,
		Pending: pending, PromptHash: s.PromptHash, Log: o.Log})
	if err != nil {
		return nil, mapStoreErr(err)
	}
	// what a person gave the source holds in its fork; the engine is the fork's
	if err := h.trust.CopyRules(s.ProjectRoot, id, ns.ID); err != nil {
		h.log.Warn().Str("sessionId", ns.ID).Err(err).Msg("trust record: the fork did not get its source's rules")
	}
	h.choose(ns, nil)
	fail := func(err error) (*session.Session, error) {
		if derr := h.store.Delete(ns.ID); derr != nil {
			h.log.Warn().Str("sessionId", ns.ID).Err(derr).Msg("a failed fork could not be removed")
		}
		return nil, err
	}
	if err := copyDir(session.StateDir(s.ProjectRoot, id), session.StateDir(ns.ProjectRoot, ns.ID)); err != nil {
		return fail(fmt.Errorf("fork: copying the engine's state: %w", err))
	}
	if f, ok := eng.(engine.Forker); ok && pending != nil && pending.Fork && pending.ResumeAt == "" && !ctl.Rewind {
		// An engine that cannot cut copies the conversation now, so the
		// fork is pinned here (a turn of the source before the fork's
		// first turn is not in it); the fork's turns continue the copy.
		plan, err := h.plan(ns, true)
		if err != nil {
			return fail(err)
		}
		req := plan.Request
		req.Logger = h.projectLog(ns.ProjectRoot)
		conv, err := f.ForkNow(ctx, req)
		if err != nil {
			return fail(fmt.Errorf("fork: %w", err))
		}
		ns.Pending = &session.Pending{Resume: conv}
		if err := h.store.Save(ns); err != nil {
			return fail(mapStoreErr(err))
		}
		pending = ns.Pending
	}
	if err := keepCheckpoints(ns, copyTo); err != nil {
		return fail(fmt.Errorf("fork: the file checkpoints: %w", err))
	}
	if err := h.copyRecords(id, ns.ID, copyTo); err != nil {
		return fail(fmt.Errorf("fork: copying the event log: %w", err))
	}
	if err := h.appendEvent(ns.ID, event.Event{Type: event.TypeSessionForked, Forked: &event.SessionForked{From: id, AtSeq: o.AtSeq}}); err != nil {
		return fail(fmt.Errorf("fork: %w", err))
	}
	h.noteRoot(ns.ProjectRoot)
	lg := h.projectLog(s.ProjectRoot).Info().Str("sessionId", ns.ID).Str("from", id).Int64("atSeq", o.AtSeq)
	if pending != nil {
		lg = lg.Str("conversation", pending.Resume).Str("resumeAt", pending.ResumeAt)
	}
	lg.Msg("session forked")
	return ns, nil
}

// copyRecords appends the records of session from with seq <= upTo to
// session to's (empty) log, each stamped with to's id: each keeps its seq,
// so a turn's seq means the same in both (Fork's AtSeq, file checkpoints).
func (h *Harness) copyRecords(from, to string, upTo int64) error {
	src, err := h.store.EventLog(from)
	if err != nil {
		return mapStoreErr(err)
	}
	dst, err := h.store.EventLog(to)
	if err != nil {
		return mapStoreErr(err)
	}
	var buf []byte
	for rec, err := range src.Records(0) {
		if err != nil {
			return err
		}
		if rec.Seq > upTo {
			break
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(rec.Event, &obj); err != nil {
			return err // never skipped: the copy keeps the source's seqs
		}
		delete(obj, "seq")
		var ev event.Event
		if json.Unmarshal(rec.Event, &ev) == nil && knownType(ev.Type) {
			ev.SessionID = to
			buf = ev.AppendJSON(buf[:0])
		} else {
			obj["sessionId"], _ = json.Marshal(to)
			if buf, err = json.Marshal(obj); err != nil {
				return err
			}
		}
		if _, err := dst.Append(buf); err != nil {
			return err
		}
	}
	return dst.Sync()
}

// keepCheckpoints keeps, of the file checkpoints a fork copied with its
// source's state directory, those of the turns it copied (seq <= upTo:
// the copied records keep their seqs).
func keepCheckpoints(s *session.Session, upTo int64) error {
	recs, err := readCheckpoints(s)
	if err != nil || len(recs) == 0 {
		return err
	}
	if err := os.Remove(filepath.Join(session.StateDir(s.ProjectRoot, s.ID), checkpointsFile)); err != nil {
		return err
	}
	for _, r := range recs {
		if r.Seq <= upTo {
			if err := appendCheckpoint(s, r); err != nil {
				return err
			}
		}
	}
	return nil
}

// knownType reports whether t is an event type this build encodes
// without loss.
func knownType(t event.Type) bool {
	switch t {
	case event.TypeSessionInit, event.TypeChatDelta, event.TypeThinkingDelta, event.TypeChatComplete, event.TypeToolStart,
		event.TypeToolResult, event.TypeSessionComplete, event.TypeSessionError, event.TypeProcessExit, event.TypeSessionRetry,
		event.TypeUserMessage, event.TypeApprovalRequested, event.TypeApprovalResolved, event.TypeSessionForked, event.TypeSessionRewound,
		event.TypeTrustRequired, event.TypePromptQueued, event.TypePromptDequeued:
		return true
	}
	return false
}

// appendEvent stores an event of the core outside any turn in session
// id's log. Follow's readers see it with the stored records.
func (h *Harness) appendEvent(id string, ev event.Event) error {
	elog, err := h.store.EventLog(id)
	if err != nil {
		return mapStoreErr(err)
	}
	ev.SessionID = id
	if ev.Time == 0 {
		ev.Time = time.Now().UnixMilli() // stamped once, stored: every reader and replay sees this time
	}
	// scrubbed as a turn's events are (runner.emitLocked): a queued
	// prompt's text, say, may hold a secret
	line := secrets.ScrubJSON(ev.AppendJSON(nil))
	seq, err := elog.Append(line)
	if err != nil {
		return err
	}
	if h.taps.n.Load() > 0 { // watch.go: the typed event as stored
		var typed event.Event
		if json.Unmarshal(line, &typed) == nil {
			h.taps.publish(session.Record{Seq: seq, Event: session.WithSeq(seq, line), Typed: &typed})
		}
	}
	return elog.Sync()
}

// maxStateCopy bounds what Fork copies of an engine's state directory.
const maxStateCopy = 256 << 20

// copyDir copies the regular files under src (absent: nothing) to dst,
// at most maxStateCopy bytes.
func copyDir(src, dst string) error {
	var total int64
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == src {
				return fs.SkipDir
			}
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o700)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if total += int64(len(data)); total > maxStateCopy {
			return fmt.Errorf("the engine's state is over %d MiB", maxStateCopy>>20)
		}
		return atomicfile.Write(target, data, nil)
	})
	if errors.Is(err, fs.SkipDir) {
		return nil
	}
	return err
}

// Rewind undoes session id's turns from the one opened by user:message
// o.ToTurn on: with o.Conversation the next turn continues the
// conversation as it was before that turn (the engine cuts a copy of it:
// engine.Request.ResumeAt, with Fork where the engine can; to the first
// turn, a fresh conversation); with o.Files the project's files are
// restored as they were before that turn. Nothing is deleted from the
// event log: a session:rewound event is appended. The session's warm
// agent is dropped. A rewind of neither changes nothing.
//
// It fails with ErrInvalidID, ErrNotFound, ErrSeqNotFound (o.ToTurn is
// not a turn's user:message, or with o.Files the turn has no file
// snapshot), ErrBusy (a turn runs), ErrUnsupported (the engine cannot cut
// its conversation), checkpoint.ErrTooLarge, or a git error restoring the
// files (RestoreFiles); nothing is changed then, except by a restore that
// failed half-way (running it again completes it).
func (h *Harness) Rewind(ctx context.Context, id string, o RewindOptions) (RewindResult, error) {
	s, unlock, err := h.idleSession(id)
	if err != nil {
		return RewindResult{}, err
	}
	defer unlock()
	turns, _, err := h.turnsOf(id)
	if err != nil {
		return RewindResult{}, err
	}
	k := -1
	for i, t := range turns {
		if t.seq == o.ToTurn {
			k = i
		}
	}
	if k < 0 {
		return RewindResult{}, fmt.Errorf("%w: %d is not the seq of a user message of session %s (GET its turns)", ErrSeqNotFound, o.ToTurn, id)
	}
	if !o.Files && !o.Conversation {
		return RewindResult{}, nil
	}
	name := h.sessionEngine(s)
	var pending *session.Pending
	if o.Conversation {
		eng, err := h.engineFor(name)
		if err != nil {
			return RewindResult{}, err
		}
		ctl := engine.ControlsOf(eng)
		if turns[k].prev >= 0 && !ctl.Rewind {
			return RewindResult{}, unsupported(name, "cut a conversation (rewind it to a turn after the first)")
		}
		pending = cutAfter(turns, turns[k].prev, ctl)
	}
	if o.Files {
		// Checked before anything changes: a turn without a snapshot
		// leaves the conversation as it was too.
		if _, err := h.fileCheckpoint(s, o.ToTurn); err != nil {
			return RewindResult{}, err
		}
	}
	if err := ctx.Err(); err != nil {
		return RewindResult{}, err
	}
	res := RewindResult{Files: []FileChange{}}
	if o.Files {
		changes, err := h.restoreFiles(ctx, s, o.ToTurn)
		if err != nil {
			return RewindResult{}, err
		}
		res.Files = append(res.Files, changes...)
	}
	if o.Conversation {
		s.Pending = pending
		if err := h.store.Save(s); err != nil {
			return RewindResult{}, mapStoreErr(err)
		}
		res.Conversation = true
		h.dropWarm(id, nil, "the session was rewound")
	}
	paths := make([]string, 0, len(res.Files))
	for _, c := range res.Files {
		paths = append(paths, c.Path)
	}
	if err := h.appendEvent(id, event.Event{Type: event.TypeSessionRewound,
		Rewound: &event.SessionRewound{ToTurn: o.ToTurn, Files: paths, Conversation: res.Conversation}}); err != nil {
		h.log.Error().Str("sessionId", id).Err(err).Msg("session:rewound could not be stored")
	}
	h.projectLog(s.ProjectRoot).Info().Str("sessionId", id).Int64("toTurn", o.ToTurn).Bool("conversation", res.Conversation).
		Int("files", len(paths)).Msg("session rewound")
	return res, nil
}
