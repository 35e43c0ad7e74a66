package harness

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/chirality/harness/event"
	"github.com/chirality/harness/session"
)

// TurnStatus is how a turn ended (Result.Status).
type TurnStatus string

const (
	// TurnCompleted: the last of the turn's session:complete and
	// session:error events is a session:complete.
	TurnCompleted TurnStatus = "completed"
	// TurnInterrupted: it is a session:error of kind interrupted or
	// killed (Interrupt, Kill, a cancelled Wait or a shutdown stopped it).
	TurnInterrupted TurnStatus = "interrupted"
	// TurnFailed: it is a session:error of another kind, or the turn had
	// neither (it ended without a result, or its events could not be
	// read to the end).
	TurnFailed TurnStatus = "failed"
)

// Result is how a turn read by Turn.Wait (or Run) ended.
type Result struct {
	SessionID string
	Status    TurnStatus
	// Error is the turn's last session:error, nil when it had none (a
	// resume fallback that then completed still leaves its
	// resume_not_found here; Status says how the turn ended).
	Error *event.SessionError
	// Complete is the turn's last session:complete (cost, usage), nil
	// when it had none.
	Complete *event.SessionComplete
	// Exit is the turn's process:exit; nil when its events could not be
	// read to the end.
	Exit *event.ProcessExit
	// Final is the assistant's final text: the text of the turn's last
	// chat:complete, or, when no chat:complete had text, its chat:delta
	// texts joined.
	Final string
	// LastSeq is the seq of the last event read (0 when none was stored).
	LastSeq int64
}

// TurnError is the error Turn.Wait and Run return for a turn that did not
// complete: the kind and message of its last session:error (ErrorProcess
// when it ended without a result). Err, when set, is the engine's own
// error for the turn (Turn.Err), so errors.Is also matches an engine's
// sentinels through it.
type TurnError struct {
	Kind    event.ErrorKind
	Message string
	Err     error
}

func (e *TurnError) Error() string { return "turn " + string(e.Kind) + ": " + e.Message }

// Unwrap returns the engine's error, or nil.
func (e *TurnError) Unwrap() error { return e.Err }

// Interrupted reports whether the turn was stopped on request (kind
// interrupted or killed).
func (e *TurnError) Interrupted() bool {
	return e.Kind == event.ErrorInterrupted || e.Kind == event.ErrorKilled
}

// Run runs one turn of session id with message (StartTurn) and reads it
// to its end (Turn.Wait): fn, when not nil, is called with each of its
// events in order. It returns how the turn ended; the error is StartTurn's
// when the turn could not start, and otherwise Wait's.
func (h *Harness) Run(ctx context.Context, id, message string, fn func(session.Record) error) (Result, error) {
	t, err := h.StartTurn(ctx, id, message)
	if err != nil {
		return Result{SessionID: id, Status: TurnFailed}, err
	}
	return t.Wait(ctx, fn)
}

// Wait reads the turn from its first event to its process:exit, calls fn
// (when not nil) with each event in order, waits until the turn is over
// (Done) and returns how it ended. Each record passed to fn has Typed set
// (decoded when it came from the log; an event that cannot be decoded is
// skipped): in-process readers use it and never decode the JSON, which
// stays there for writers of the wire form.
//
// The error is nil when the turn completed. Otherwise it is, first of
// these that applies: ctx's error when ctx was cancelled (Wait kills the
// turn then, and still returns only once it has ended); fn's first error
// (Wait kills the turn, calls fn no more, and waits for the end); an
// error reading the events (Result.Exit is nil); or a *TurnError saying
// how the turn ended.
//
// Wait may be called from any goroutine, more than once (each call reads
// the turn from its start); fn is called on Wait's goroutine.
func (t *Turn) Wait(ctx context.Context, fn func(session.Record) error) (Result, error) {
	res := Result{SessionID: t.SessionID}
	stop := context.AfterFunc(ctx, func() { _ = t.h.Kill(t.SessionID) })
	defer stop()
	var readErr, fnErr error
	var deltas strings.Builder
	lastIsComplete, hasFinal := false, false
	records, err := t.h.Follow(context.Background(), t.SessionID, t.StartSeq)
	if err != nil {
		readErr = err
	} else {
		for rec, err := range records {
			if err != nil {
				readErr = err
				break
			}
			ev, derr := rec.Decode()
			if derr != nil {
				continue
			}
			if rec.Typed == nil {
				rec.Typed = &ev
			}
			if rec.Seq != 0 {
				res.LastSeq = rec.Seq
			}
			switch ev.Type {
			case event.TypeChatDelta:
				if !hasFinal {
					deltas.WriteString(ev.Text)
				}
			case event.TypeChatComplete:
				if ev.Text != "" {
					res.Final, hasFinal = ev.Text, true
					deltas.Reset()
				}
			case event.TypeSessionComplete:
				res.Complete, lastIsComplete = ev.Complete, true
			case event.TypeSessionError:
				res.Error, lastIsComplete = ev.Error, false
			case event.TypeProcessExit:
				res.Exit = ev.Exit
			}
			if fn != nil {
				if err := fn(rec); err != nil {
					fnErr = err
					_ = t.h.Kill(t.SessionID)
					break
				}
			}
		}
	}
	<-t.Done()
	if !hasFinal {
		res.Final = deltas.String()
	}
	switch {
	case res.Exit != nil && lastIsComplete:
		res.Status = TurnCompleted
	case res.Exit != nil && res.Error != nil && (res.Error.Kind == event.ErrorInterrupted || res.Error.Kind == event.ErrorKilled):
		res.Status = TurnInterrupted
	default:
		res.Status = TurnFailed
	}
	switch {
	case ctx.Err() != nil:
		return res, ctx.Err()
	case fnErr != nil:
		return res, fnErr
	case readErr != nil:
		return res, fmt.Errorf("reading the turn's events: %w", readErr)
	case res.Exit == nil:
		return res, errors.New("reading the turn's events: they ended before its process:exit")
	case res.Status == TurnCompleted:
		return res, nil
	case res.Error != nil && !lastIsComplete:
		return res, &TurnError{Kind: res.Error.Kind, Message: res.Error.Error, Err: t.Err()}
	}
	return res, &TurnError{Kind: event.ErrorProcess, Message: "the turn ended without a result", Err: t.Err()}
}
