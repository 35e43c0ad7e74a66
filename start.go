package harness

import (
	"context"
	"fmt"
	"iter"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/session"
)

// TurnRequest is what StartTurn runs: a message, in a session or in an
// ephemeral one. It is a struct, as SessionSpec and Config are, because
// a turn has many optional parts and most callers set two fields; the
// zero value of each field is documented and means "the session's".
type TurnRequest struct {
	// SessionID names the session the turn runs in. "" runs an ephemeral
	// turn: no session, nothing kept (Engine and Request below).
	SessionID string
	// Message is what the user says (ErrEmptyMessage when blank).
	Message string
	// Options change what a session's turn runs with (the session's
	// persona and model from this turn on, and 004's per-turn options);
	// the zero value keeps the session's. An ephemeral turn takes none of
	// them (ErrInvalidTurnOptions) but Model.
	Options TurnOptions
	// Queue asks, when the session cannot start the turn now (a turn
	// runs, prompts are queued before it, or its queue is held), that the
	// message be queued in the session's prompt queue (queue.go) instead
	// of refused with ErrBusy: StartTurn then returns no Turn and a
	// *Queued error saying where (errors.Is(err, ErrQueued)). A queued
	// prompt runs with the session's settings when it starts: Options
	// apply only to a turn started now. An ephemeral turn cannot queue
	// (ErrInvalidTurnOptions).
	Queue bool

	// Engine names the engine of an ephemeral turn (an engine's name or an
	// alias; "" = Config.DefaultEngine). A session's turn runs on its
	// session's engine and Engine must be "".
	Engine string
	// Request is an ephemeral turn's request, run as given: no persona,
	// mode or saved prompt is added (the caller chooses its flags), with
	// the Harness's ChildEnv and AllowedTools added as for every turn.
	// Its Message is Message; Request.SessionKey "" gets a fresh key. A
	// Request without MCP servers gets those a session's turn in its Cwd
	// would: the project's .mcp.json servers a person trusted (package
	// trust) and Config.MCP; each project server left out is reported by
	// a trust:required event before the engine's first.
	Request engine.Request
}

// StartTurn starts one turn and returns as soon as its agent runs; the
// turn runs on a goroutine of the Harness. ctx bounds only the start:
// cancelling it later changes nothing, and the turn runs until it ends,
// Turn.Interrupt (or Harness.Interrupt) or Kill stops it, or the Harness
// shuts down. Read it with Turn.Events, Turn.Wait or Follow.
//
// With req.SessionID, the turn is the session's: StartTurn loads the
// session and its persona, applies req.Options (a new persona or model is
// saved as the session's; an unknown persona is ErrPersonaNotFound,
// ErrInvalidPersona for a malformed one, a malformed per-turn option
// ErrInvalidTurnOptions, an override that would widen what the session
// may do ErrWidens; each changes nothing), builds and saves the system
// prompt and starts the session's engine with the persona's tool flags,
// the mode's defaults and the server's permission policy, resuming the
// session's conversation. The events are stored in the session's event
// log and published to live readers; the session is saved when
// session:init reports the engine's conversation and after the turn,
// however it ends.
//
// When the stored conversation cannot be resumed (the engine no longer
// has it), the turn emits a session:error of kind resume_not_found saying
// so, starts a fresh conversation with the same message, emits its
// session:init and stores the new ID: the message is never lost, and the
// turn still ends with exactly one process:exit.
//
// Without req.SessionID, the turn is ephemeral: req.Request runs on
// req.Engine and nothing of it is kept. No session file, event log, saved
// prompt, checkpoint or project log is written; its events are held in
// memory for the Turn's readers until the Turn is dropped. What the core
// does to every turn's events it does to these: they are scrubbed of
// every secret the process knows of and every credential in a known
// format, deltas included. This is `harness turn` without --session or
// --persona.
//
// With req.Queue, a session that cannot start the turn now queues the
// message instead (see TurnRequest.Queue): the error is then a *Queued,
// which is not a failure, and the Turn nil. A caller that asks to queue
// tells the two apart so:
//
//	t, err := h.StartTurn(ctx, harness.TurnRequest{SessionID: id, Message: m, Queue: true})
//	var q *harness.Queued
//	switch {
//	case errors.As(err, &q): // queued: q.PromptID, q.Position; the core starts it in its turn
//	case err != nil:         // refused, as without Queue (or ErrQueueFull, ErrMessageTooLarge)
//	default:                 // t runs
//	}
//
// It fails with ErrEmptyMessage, ErrInvalidID, ErrNotFound,
// ErrRootNotAllowed, ErrBusy, ErrBypassRefused, ErrClosed,
// ErrUnknownEngine (ephemeral), the errors of req.Options above, the
// queue's (ErrQueueFull, ErrMessageTooLarge) with req.Queue, or the
// engine's start errors (engine.ErrBinaryNotFound, …).
func (h *Harness) StartTurn(ctx context.Context, req TurnRequest) (*Turn, error) {
	if req.SessionID == "" {
		if req.Queue {
			return nil, fmt.Errorf("%w: queue: an ephemeral turn has no queue", ErrInvalidTurnOptions)
		}
		return h.startEphemeral(ctx, req)
	}
	if req.Engine != "" {
		return nil, fmt.Errorf("%w: engine: a session's turn runs on its session's engine", ErrInvalidTurnOptions)
	}
	if req.Queue {
		t, q, err := h.startOrQueue(ctx, req.SessionID, req.Message, req.Options, true, false)
		if q != nil {
			return nil, q
		}
		return t, err
	}
	return h.startTurn(ctx, req.SessionID, req.Message, req.Options)
}

// Events returns the turn's events, from its first to its process:exit,
// then the sequence ends: stored ones first, then live ones as they come.
// Each record has its Seq and Typed set (an event that cannot be decoded
// is skipped); Record.More is set when the next one is already at hand (a
// writer flushes once per burst).
//
// A session's records also carry Event, the stored JSON, and their Typed
// is never written again. An ephemeral turn's records are never stored:
// Event is nil (Record.Wire encodes one), and Typed lives in the turn's
// ring of held records, so it holds until the loop's next iteration; copy
// *rec.Typed to keep it. Its records cost no allocation each (`harness
// turn` reads a 200,000-event turn at the pipe's pace).
//
// Cancelling ctx, or breaking out of the loop, stops the reading and
// never the turn: it goes on, stored, until it ends or Interrupt stops
// it. An error reading the events is yielded and ends the sequence.
// Events may be called more than once and from any goroutine; each
// sequence reads the turn from its start (an ephemeral turn's: from the
// oldest record it still holds). A reader of an ephemeral turn whose ctx
// can never be cancelled (context.Background) reads the engine's events
// on its own goroutine while it keeps up; while it has not come back for
// the next record, the agent waits for it (the pipe's back-pressure)
// until Interrupt or Kill. Any other reader is fed by the Harness, which
// reads the turn to its end whether or not anyone reads it.
//
//	for rec, err := range t.Events(ctx) {
//		if err != nil { … }
//		… rec.Typed …
//	}
func (t *Turn) Events(ctx context.Context) iter.Seq2[session.Record, error] {
	if t.eph != nil {
		return t.eph.records(ctx)
	}
	return func(yield func(session.Record, error) bool) {
		elog, err := t.h.store.EventLog(t.SessionID) // the log as it is now (a moved session's is another handle)
		if err != nil {
			yield(session.Record{}, mapStoreErr(err))
			return
		}
		for rec, err := range follow(ctx, elog, t.lt.broker, t.StartSeq) {
			if err != nil {
				yield(rec, err)
				return
			}
			if rec.Typed == nil {
				ev, derr := rec.Decode()
				if derr != nil {
					continue
				}
				rec.Typed = &ev
			}
			exit := rec.Typed.Type == event.TypeProcessExit
			if exit {
				rec.More = false // the turn's last: nothing of it follows
			}
			if !yield(rec, nil) || exit {
				return
			}
		}
	}
}

// Interrupt asks the turn to stop (the engine's interrupt sequence); it
// then ends with a session:error of kind interrupted. It returns
// ErrNotRunning when the turn is over. Safe to call more than once.
func (t *Turn) Interrupt() error { return t.stop(1) }

// Kill stops the turn at once (its whole process group). It returns
// ErrNotRunning when the turn is over. Safe to call more than once.
func (t *Turn) Kill() error { return t.stop(2) }

func (t *Turn) stop(level int) error {
	select {
	case <-t.Done():
		return ErrNotRunning
	default:
	}
	if t.eph != nil {
		return t.eph.stop(level)
	}
	t.lt.request(level)
	return nil
}
