package engine

import "github.com/chirality/harness/event"

// TurnEnd is how a turn ended: the one end-of-turn state every engine
// reports through, so that each ends its stream the same way:
//
//	session:complete | session:error   (unless the stream already carried it)
//	                                   Release (the session's key is free)
//	process:exit                       (TurnExit: 0 exactly when Err is nil)
type TurnEnd struct {
	// Complete or Error is emitted first, when set (at most one of
	// them): an engine whose stream already carried the turn's end (the
	// CLI's result frame) sets neither.
	Complete *event.SessionComplete
	Error    *event.SessionError
	// Err is what the turn's Err returns: nil when the turn completed.
	Err error
	// Code and Signal are the exit status of the agent's process when
	// one ended with the turn ((0, "") when none did).
	Code   int
	Signal string
	// Release, if set, runs before process:exit is emitted: the session
	// is free for its next turn once process:exit is read.
	Release func()
}

// Report emits the end through emit (the engine's own, which sets the
// session id and scrubs) and returns Err, for the stream's End.
func (e TurnEnd) Report(emit func(event.Event)) error {
	switch {
	case e.Error != nil:
		emit(event.Event{Type: event.TypeSessionError, Error: e.Error})
	case e.Complete != nil:
		emit(event.Event{Type: event.TypeSessionComplete, Complete: e.Complete})
	}
	if e.Release != nil {
		e.Release()
	}
	emit(event.Event{Type: event.TypeProcessExit, Exit: TurnExit(e.Err == nil, e.Code, e.Signal)})
	return e.Err
}

// SessionError is te as session:error. The kinds the agent's process is
// to blame for (process, start) carry its exit code and the end of its
// stderr.
func (te *TurnError) SessionError(code int, stderrTail func() string) *event.SessionError {
	se := &event.SessionError{Error: te.Message, Kind: te.Kind}
	if te.Kind == event.ErrorProcess || te.Kind == event.ErrorStart {
		se.ExitCode = &code
		se.StderrTail = stderrTail()
	}
	return se
}
