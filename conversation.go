package harness

import (
	"context"
	"fmt"

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
type FileChange struct {
	Path  string `json:"path"`
	Op    string `json:"op"`
	Patch string `json:"patch,omitempty"`
}

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
// changed: the update applies from the next turn. It fails with
// ErrNotFound, ErrPersonaNotFound, ErrInvalidPersona,
// ErrInvalidPermissionMode, ErrBypassRefused or ErrInvalidEffort, and
// then changes nothing.
func (h *Harness) UpdateSession(id string, u SessionUpdate) (*session.Session, error) {
	return nil, fmt.Errorf("%w: not yet", ErrUnsupported)
}

// Fork makes a new session continuing a copy of session id's conversation
// up to o.AtSeq. It fails with ErrNotFound, ErrSeqNotFound, ErrBusy (a
// turn runs) or ErrUnsupported (the engine cannot fork).
func (h *Harness) Fork(ctx context.Context, id string, o ForkOptions) (*session.Session, error) {
	return nil, fmt.Errorf("%w: not yet", ErrUnsupported)
}

// Rewind undoes session id's turns from o.ToTurn on. It fails with
// ErrNotFound, ErrSeqNotFound, ErrBusy or ErrUnsupported.
func (h *Harness) Rewind(ctx context.Context, id string, o RewindOptions) (RewindResult, error) {
	return RewindResult{}, fmt.Errorf("%w: not yet", ErrUnsupported)
}

// Turns lists session id's turns, oldest first.
func (h *Harness) Turns(id string) ([]TurnInfo, error) {
	return nil, fmt.Errorf("%w: not yet", ErrUnsupported)
}
