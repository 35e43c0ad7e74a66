// Package ops is what the harness's HTTP doors do on one session once a
// route has read its request and before it writes its answer: the
// gateway's handlers (package gateway, any session named in the path or
// body) and `harness agent serve`'s (package agentserver, the one session
// it serves) call the same operation. A door keeps only its routes and
// the shapes of its bodies and answers, which its specification fixes
// (gateway/openapi.json; the agent serve specification).
//
// An operation checks what its arguments must be that the core does not
// (an empty request id, a negative seq, a rewind of nothing), bounds what
// may take long (ConversationTimeout) and calls the core. Its errors are
// the core's, or Err* here (400 through httpapi.Status); a door adds
// nothing to map them.
//
// Ops holds no state: two doors over one Harness see the same sessions,
// turns, queues and pending decisions.
package ops

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/chirality/harness"
	"github.com/chirality/harness/checkpoint"
	"github.com/chirality/harness/internal/httpapi"
	"github.com/chirality/harness/internal/httpguard"
	"github.com/chirality/harness/session"
	"github.com/chirality/harness/trust"
)

// ConversationTimeout bounds a fork, a rewind or a rewind's preview
// (copying a log, diffing or restoring a project's files) at every door.
const ConversationTimeout = 2 * time.Minute

// MaxRewindTurns bounds how many turns back a rewind counts.
const MaxRewindTurns = 1000

// The operations' own errors: the request is wrong (400).
var (
	// ErrNoRequestID: an approval answer names no request.
	ErrNoRequestID = httpapi.BadRequest("requestId is required")
	// ErrBadSeq: a seq (atSeq, toTurn) or a count of turns out of range.
	ErrBadSeq = httpapi.BadRequest("bad seq")
	// ErrNothingToRewind: a rewind asked for neither files nor
	// conversation.
	ErrNothingToRewind = httpapi.BadRequest("a rewind needs files, conversation or both set to true")
	// ErrBadTrust: a trust answer without kind, hash, or name and path.
	ErrBadTrust = httpapi.BadRequest("kind, hash and name or path are required")
)

// Ops are the operations over H. The zero value is not usable.
type Ops struct{ H *harness.Harness }

// StartTurn starts a turn of session req.SessionID
// (harness.Harness.StartTurn), or with req.Queue queues it when the
// session cannot start it now (the error is then a *harness.Queued:
// errors.Is(err, harness.ErrQueued)). It is the doors' one call of the
// core's turn starter. A door runs a session's turns only: a request
// without a session is harness.ErrInvalidID, never an ephemeral turn.
func (o Ops) StartTurn(ctx context.Context, req harness.TurnRequest) (*harness.Turn, error) {
	if req.SessionID == "" {
		return nil, fmt.Errorf("%w: no session named", harness.ErrInvalidID)
	}
	return o.H.StartTurn(ctx, req)
}

// Interrupt interrupts session id's running turn (harness.ErrNotRunning
// when none runs).
func (o Ops) Interrupt(id string) error { return o.H.Interrupt(id) }

// Approve answers approval request requestID of session id.
func (o Ops) Approve(id, requestID string, a harness.ApprovalAnswer) error {
	if requestID == "" {
		return ErrNoRequestID
	}
	return o.H.Approve(id, requestID, a)
}

// DecidePlan approves or revises the plan session id's turn waits with.
func (o Ops) DecidePlan(id string, d harness.PlanDecision) error { return o.H.DecidePlan(id, d) }

// Steer puts message into session id's running turn.
func (o Ops) Steer(ctx context.Context, id, message string) error {
	return o.H.Steer(ctx, id, message)
}

// Queue is session id's queued prompts, in the order they run (never
// nil).
func (o Ops) Queue(id string) ([]harness.QueuedPrompt, error) {
	list, err := o.H.Queue(id)
	return orEmpty(list), err
}

// EditQueued edits or moves queued prompt promptID and returns the queue
// as it now is (never nil).
func (o Ops) EditQueued(id, promptID string, e harness.QueueEdit) ([]harness.QueuedPrompt, error) {
	list, err := o.H.EditQueued(id, promptID, e)
	return orEmpty(list), err
}

// DeleteQueued drops queued prompt promptID: it never runs.
func (o Ops) DeleteQueued(id, promptID string) error { return o.H.DeleteQueued(id, promptID) }

// UpdateSession changes what session id's next turns run with.
func (o Ops) UpdateSession(id string, u harness.SessionUpdate) (*session.Session, error) {
	return o.H.UpdateSession(id, u)
}

// Turns are session id's turns, oldest first (never nil).
func (o Ops) Turns(id string) ([]harness.TurnInfo, error) {
	turns, err := o.H.Turns(id)
	if turns == nil {
		turns = []harness.TurnInfo{}
	}
	return turns, err
}

// Target is the turn of session id a rewind goes back to: the one whose
// user:message is seq toTurn, or (toTurn 0) the n-th last turn not undone
// yet (n 0 = 1). It fails with harness.ErrSeqNotFound.
func (o Ops) Target(id string, toTurn int64, n int) (harness.TurnInfo, error) {
	turns, err := o.H.Turns(id)
	if err != nil {
		return harness.TurnInfo{}, err
	}
	if toTurn != 0 {
		for _, t := range turns {
			if t.Seq == toTurn {
				return t, nil
			}
		}
		return harness.TurnInfo{}, fmt.Errorf("%w: %d is not the seq of a turn of session %s (list its turns)", harness.ErrSeqNotFound, toTurn, httpguard.Clip(id))
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

// Fork forks session id up to the turn holding atSeq (0: all of it),
// within ConversationTimeout.
func (o Ops) Fork(ctx context.Context, id string, atSeq int64) (*session.Session, error) {
	if atSeq < 0 {
		return nil, fmt.Errorf("%w: atSeq must be a seq (1 or more), or 0 for the whole conversation", ErrBadSeq)
	}
	ctx, cancel := context.WithTimeout(ctx, ConversationTimeout)
	defer cancel()
	return o.H.Fork(ctx, id, harness.ForkOptions{AtSeq: atSeq})
}

// Rewind undoes session id's turns from toTurn (a user:message seq) or,
// when toTurn is 0, its last n turns not undone yet (0 = 1), as ro says
// (ro.ToTurn is set from them), within ConversationTimeout.
func (o Ops) Rewind(ctx context.Context, id string, toTurn int64, n int, ro harness.RewindOptions) (harness.RewindResult, error) {
	switch {
	case !ro.Files && !ro.Conversation:
		return harness.RewindResult{}, ErrNothingToRewind
	case toTurn != 0 && n != 0:
		return harness.RewindResult{}, fmt.Errorf("%w: give toTurn or turns, not both", ErrBadSeq)
	case toTurn < 0 || n < 0 || n > MaxRewindTurns:
		return harness.RewindResult{}, fmt.Errorf("%w: toTurn is a turn's seq; turns is 1 to %d", ErrBadSeq, MaxRewindTurns)
	}
	t, err := o.Target(id, toTurn, n)
	if err != nil {
		return harness.RewindResult{}, err
	}
	ro.ToTurn = t.Seq
	ctx, cancel := context.WithTimeout(ctx, ConversationTimeout)
	defer cancel()
	return o.H.Rewind(ctx, id, ro)
}

// Preview is what rewinding to a turn would undo, changing nothing.
type Preview struct {
	Turn harness.TurnInfo
	// Files are the files a rewind would restore; FilesError says why
	// they cannot be (no snapshot before the turn, too large, no git, an
	// unsafe store): its conversation may still be cut.
	Files      []checkpoint.Change
	FilesError string
}

// PreviewRewind is what a rewind of session id to Target(id, toTurn, n)
// would undo (harness.Harness.FilesDiff), within ConversationTimeout.
func (o Ops) PreviewRewind(ctx context.Context, id string, toTurn int64, n int) (Preview, error) {
	t, err := o.Target(id, toTurn, n)
	if err != nil {
		return Preview{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, ConversationTimeout)
	defer cancel()
	p := Preview{Turn: t}
	p.Files, err = o.H.FilesDiff(ctx, id, t.Seq)
	switch {
	case err == nil:
	case errors.Is(err, harness.ErrSeqNotFound), errors.Is(err, checkpoint.ErrTooLarge),
		errors.Is(err, checkpoint.ErrNoGit), errors.Is(err, checkpoint.ErrUnsafeStore):
		p.Files, p.FilesError = nil, httpguard.Clip(err.Error())
	default:
		return Preview{}, err
	}
	return p, nil
}

// AcceptTrust records that a person trusts a persona file or a project
// MCP server of projectRoot as a trust event showed it (hash).
func (o Ops) AcceptTrust(projectRoot, kind, name, path, hash string) (*trust.Item, error) {
	if kind == "" || hash == "" || name == "" && path == "" {
		return nil, ErrBadTrust
	}
	return o.H.AcceptTrust(projectRoot, kind, name, path, hash)
}

// ProjectRoot is session id's project root.
func (o Ops) ProjectRoot(id string) (string, error) {
	s, err := o.H.Session(id)
	if err != nil {
		return "", err
	}
	return s.ProjectRoot, nil
}

func orEmpty(l []harness.QueuedPrompt) []harness.QueuedPrompt {
	if l == nil {
		return []harness.QueuedPrompt{}
	}
	return l
}
