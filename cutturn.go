package harness

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/internal/flock"
	"github.com/chirality/harness/internal/keylock"
	"github.com/chirality/harness/session"
)

// A turn is owned by the process that runs it, across processes too: a
// server, a CLI `harness turn` and a cluster node restarting over the
// same project all see one lock per session, turnLockFile in the
// session's state directory, which a running turn holds (flock: the
// kernel lets it go with the process, so a SIGKILL leaves no stale lock).
//
// So a process can tell a turn another process runs (the lock is held:
// the session is busy, ErrBusy) from a turn a dead process left open in
// the log (the log's last turn has no process:exit and nobody holds the
// lock). The first time a process touches a session (settle), such a cut
// turn is ended in the log, as a person reading it expects: each approval
// it left waiting is denied (approval:resolved by "shutdown": nobody will
// ever act on it), then a session:error of kind process says the turn was
// cut, then its process:exit.
const turnLockFile = "turn.lock"

func turnLockPath(s *session.Session) string {
	return filepath.Join(session.StateDir(s.ProjectRoot, s.ID), turnLockFile)
}

// turnLocks are the turn locks this process holds, by session ID. A
// turn's lock is let go after its process:exit is stored, and the next
// turn of the session in this process may start a moment before (the
// running set forgets a turn just before its process:exit is published):
// the next turn shares the lock (refs) instead of finding it held.
type turnLocks struct {
	// keys serialises the taking of one session's lock (its directory
	// and lock file: a file created, up to a ms of a busy file system's
	// time); mu guards m only, so the 50 turns of a burst of starts
	// never wait for each other's files.
	keys keylock.Map
	mu   sync.Mutex
	m    map[string]*heldLock
}

type heldLock struct {
	unlock func()
	refs   int
}

// lockTurn takes session s's turn lock for a turn of this process; it
// fails with ErrBusy while another process runs a turn of s. The
// function it returns lets it go; call it once.
func (h *Harness) lockTurn(s *session.Session) (unlock func(), err error) {
	tl := &h.turnLocks
	unlockKey := tl.keys.Lock(s.ID)
	defer unlockKey()
	tl.mu.Lock()
	hl := tl.m[s.ID]
	if hl != nil {
		hl.refs++
	}
	tl.mu.Unlock()
	if hl == nil {
		// Only this goroutine takes s's lock now (keys); a holder that
		// lets it go meanwhile has dropped its entry already.
		p := turnLockPath(s)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return nil, fmt.Errorf("harness: the session's turn lock: %w", err)
		}
		u, err := flock.TryLock(p)
		if errors.Is(err, flock.ErrHeld) {
			return nil, fmt.Errorf("%w (in another process)", ErrBusy)
		}
		if err != nil {
			return nil, fmt.Errorf("harness: the session's turn lock: %w", err)
		}
		hl = &heldLock{unlock: u, refs: 1}
		tl.mu.Lock()
		if tl.m == nil {
			tl.m = map[string]*heldLock{}
		}
		tl.m[s.ID] = hl
		tl.mu.Unlock()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			tl.mu.Lock()
			defer tl.mu.Unlock()
			if hl.refs--; hl.refs == 0 {
				hl.unlock()
				delete(tl.m, s.ID)
			}
		})
	}, nil
}

// settled holds, per session this process touched (until it is
// deleted), whether a cut turn of it is settled.
type settled struct{ m sync.Map } // id → *settleState

type settleState struct {
	mu   sync.Mutex
	done bool
}

// settle ends the turn a dead process left open in session s's log. It
// does so once per process and session, unless another process holds the
// session's turn lock (it runs the turn): then the next call looks again.
func (h *Harness) settle(s *session.Session) {
	v, ok := h.settledOnce.m.Load(s.ID)
	if !ok { // the first touch: Session is called often, a state is made once
		v, _ = h.settledOnce.m.LoadOrStore(s.ID, &settleState{})
	}
	st := v.(*settleState)
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.done {
		st.done = h.endCutTurn(s)
	}
}

// endCutTurn ends in the log a turn of session s that a process now
// gone left open: one opened (user:message, or prompt:dequeued of a
// started prompt) and never ended by its process:exit, whose turn lock
// nobody holds. It reports false when another process holds the lock.
func (h *Harness) endCutTurn(s *session.Session) bool {
	h.mu.Lock()
	live := h.live[s.ID] != nil
	h.mu.Unlock()
	if live {
		return true // this process runs a turn of s: it took the lock after settling
	}
	elog, err := h.store.EventLog(s.ID)
	if err != nil {
		return true
	}
	if last := elog.LastSeq(); last == 0 || lastType(elog, last) == event.TypeProcessExit {
		return true // the common case, read from the log's end
	}
	// Not lockTurn: a turn of this process holding the lock is not cut.
	unlock, err := flock.TryLock(turnLockPath(s))
	if errors.Is(err, flock.ErrHeld) {
		return false // another process runs a turn of s
	}
	if err != nil {
		return true // the lock cannot be had: leave the log as it is
	}
	defer unlock()
	pending, open := openTurn(elog)
	if !open {
		return true
	}
	h.log.Warn().Str("sessionId", s.ID).Int("approvalsDenied", len(pending)).
		Msg("a turn cut by the end of the process that ran it is ended in the log")
	for _, rid := range pending {
		_ = h.appendEvent(s.ID, event.Event{Type: event.TypeApprovalResolved, Resolved: &event.ApprovalResolved{
			RequestID: rid, Decision: event.DecisionDeny, By: "shutdown",
			Message: "the process that ran the turn stopped (crash or kill) before anyone answered"}})
	}
	_ = h.appendEvent(s.ID, event.Event{Type: event.TypeSessionError, Error: &event.SessionError{
		Error: "the turn was cut: the server stopped (crash or kill) before it ended", Kind: event.ErrorProcess}})
	_ = h.appendEvent(s.ID, event.Event{Type: event.TypeProcessExit, Exit: engine.TurnExit(false, 0, "")})
	return true
}

// lastType is the type of the log's record seq.
func lastType(elog *session.EventLog, seq int64) event.Type {
	for rec, err := range elog.Records(seq - 1) {
		if err != nil {
			return ""
		}
		var ev struct {
			Type event.Type `json:"type"`
		}
		_ = json.Unmarshal(rec.Event, &ev)
		return ev.Type
	}
	return ""
}

// openTurn reads a session's log and reports whether its last turn is
// open (no process:exit), and the approvals of that turn still waiting.
func openTurn(elog *session.EventLog) (pending []string, open bool) {
	for rec, err := range elog.Records(0) {
		if err != nil {
			return nil, false
		}
		var ev struct {
			Type      event.Type `json:"type"`
			RequestID string     `json:"requestId"`
			Reason    string     `json:"reason"`
		}
		if json.Unmarshal(rec.Event, &ev) != nil {
			continue
		}
		switch ev.Type {
		case event.TypeUserMessage:
			if !open {
				pending = nil
			}
			open = true
		case event.TypePromptDequeued:
			if ev.Reason == event.DequeuedStarted {
				open, pending = true, nil
			}
		case event.TypeProcessExit:
			open, pending = false, nil
		case event.TypeApprovalRequested:
			pending = append(pending, ev.RequestID)
		case event.TypeApprovalResolved:
			if i := slices.Index(pending, ev.RequestID); i >= 0 {
				pending = slices.Delete(pending, i, i+1)
			}
		}
	}
	return pending, open
}

// turnLocksIdle reports whether this process holds no turn lock.
func (h *Harness) turnLocksIdle() bool {
	h.turnLocks.mu.Lock()
	defer h.turnLocks.mu.Unlock()
	return len(h.turnLocks.m) == 0
}
