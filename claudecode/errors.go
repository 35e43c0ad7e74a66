package claudecode

import (
	"errors"
	"fmt"
	"strings"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
)

// Errors callers branch on with errors.Is.
var (
	// ErrInvalidOptions: TurnOpts failed validation. It is
	// engine.ErrInvalid. (A running turn of the key, none, or a shut down
	// Manager are engine.ErrBusy, engine.ErrNotRunning, engine.ErrClosed.)
	ErrInvalidOptions = engine.NewError(engine.ErrInvalid, "claudecode: invalid turn options")

	// Turn endings, matched by a *TurnError from Turn.Err.
	ErrInterrupted    = errors.New("claudecode: turn interrupted")
	ErrKilled         = errors.New("claudecode: turn killed")
	ErrMaxTurns       = errors.New("claudecode: max turns reached")
	ErrAPI            = errors.New("claudecode: API error")
	ErrNotLoggedIn    = errors.New("claudecode: not logged in")
	ErrResumeNotFound = errors.New("claudecode: conversation to resume not found")
	ErrProcessDied    = errors.New("claudecode: CLI process ended without a result")
)

// TurnError is how a turn that did not complete ended. It matches the
// sentinels above with errors.Is (ErrInterrupted, ErrMaxTurns, …).
type TurnError struct {
	Kind    event.ErrorKind
	Message string
	// Subtype is the CLI result's subtype when a result arrived.
	Subtype string
	// ExitCode is the process's status (-1 when a signal ended it).
	ExitCode   int
	Signal     string
	StderrTail string
}

func (e *TurnError) Error() string {
	msg := fmt.Sprintf("claudecode: turn failed (%s): %s", e.Kind, e.Message)
	if e.StderrTail != "" && e.Kind == event.ErrorProcess {
		msg += "; stderr: " + lastLine(e.StderrTail)
	}
	return msg
}

func (e *TurnError) Is(target error) bool {
	switch e.Kind {
	case event.ErrorInterrupted:
		return target == ErrInterrupted
	case event.ErrorKilled:
		return target == ErrKilled
	case event.ErrorMaxTurns:
		return target == ErrMaxTurns
	case event.ErrorAPI:
		return target == ErrAPI
	case event.ErrorNotLoggedIn:
		return target == ErrNotLoggedIn
	case event.ErrorResumeNotFound:
		return target == ErrResumeNotFound
	case event.ErrorProcess:
		return target == ErrProcessDied
	}
	return false
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
