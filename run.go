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
	// killed (Interrupt, Kill or a shutdown stopped it).
	TurnInterrupted TurnStatus = "interrupted"
	// TurnFailed: it is a session:error of another kind, or the turn had
	// neither (it ended without a result, or its events could not be
	// read to the end).
	TurnFailed TurnStatus = "failed"
)

// Result is how a turn read by Turn.Wait ended.
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

// TurnError is the error Turn.Wait returns for a turn that did not
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

// Wait reads the turn (Events) from its first event to its
// process:exit, calls fn (when not nil) with each event in order, waits
// until the turn is over (Done) and returns how it ended. Each record
// passed to fn has Typed set: in-process readers use it and never decode
// the JSON, which stays there for writers of the wire form.
//
// Cancelling ctx stops the waiting, never the turn (the rule of Events):
// Wait returns ctx's error at once and the turn goes on until it ends or
// Interrupt stops it. An error from fn does the same: Wait calls fn no
// more and returns that error at once (Result then holds what was read,
// with Status failed). Otherwise the error is nil when
// the turn completed, an error reading the events (Result.Exit is nil),
// or a *TurnError saying how the turn ended.
//
// Wait may be called from any goroutine, more than once (each call reads
// the turn from its start); fn is called on Wait's goroutine.
func (t *Turn) Wait(ctx context.Context, fn func(session.Record) error) (Result, error) {
	res := Result{SessionID: t.SessionID}
	var readErr error
	var deltas strings.Builder
	lastIsComplete, hasFinal := false, false
	finish := func() {
		if !hasFinal {
			res.Final = deltas.String()
		}
	}
	for rec, err := range t.Events(ctx) {
		if err != nil {
			readErr = err
			break
		}
		ev := rec.Typed
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
				finish()
				res.Status = TurnFailed
				return res, err
			}
		}
	}
	if ctx.Err() == nil {
		select {
		case <-t.Done():
		case <-ctx.Done():
		}
	}
	if err := ctx.Err(); err != nil {
		finish()
		res.Status = TurnFailed
		return res, err
	}
	finish()
	switch {
	case res.Exit != nil && lastIsComplete:
		res.Status = TurnCompleted
	case res.Exit != nil && res.Error != nil && (res.Error.Kind == event.ErrorInterrupted || res.Error.Kind == event.ErrorKilled):
		res.Status = TurnInterrupted
	default:
		res.Status = TurnFailed
	}
	switch {
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
