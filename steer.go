package harness

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/logging"
)

// Steering (issue 32): a person's message put into the turn that runs,
// where its engine can take it (engine.Steerer: Claude Code's streamed
// input, Codex's turn/steer, the native loop's next call, an ACP agent
// that advertises steering). It is a user:message of that turn in the
// log. It never starts a turn: with none running it is refused.

// SteerTimeout bounds how long Steer waits for the engine to take a
// message (a turn still starting, an agent slow to answer).
const SteerTimeout = 30 * time.Second

// Errors of Steer.
var (
	// ErrNoTurnToSteer: the session has no running turn to steer (409;
	// send the message as a turn, or queue it).
	ErrNoTurnToSteer = engine.NewError(engine.ErrConflict, "no turn is running for this session to steer")
	// ErrSteerUnsupported: the session's engine cannot take a message
	// while a turn runs (422); the error names the engines that can. It
	// wraps ErrUnsupported.
	ErrSteerUnsupported = fmt.Errorf("%w: this engine cannot steer a running turn", ErrUnsupported)
)

// Steer puts message into the running turn of session id: it returns
// once the engine has it, and the message is then a user:message of the
// turn. It fails with ErrEmptyMessage, ErrMessageTooLarge (over
// MaxQueuedMessage), ErrInvalidID, ErrNoTurnToSteer when no turn runs
// (or it is past taking one), ErrSteerUnsupported naming the engines that
// can when the session's cannot, ErrBusy when the engine is still taking
// a previous steer, and ctx's error.
func (h *Harness) Steer(ctx context.Context, id, message string) error {
	if strings.TrimSpace(message) == "" {
		return ErrEmptyMessage
	}
	if len(message) > MaxQueuedMessage {
		return fmt.Errorf("%w (%d bytes, at most %d)", ErrMessageTooLarge, len(message), MaxQueuedMessage)
	}
	lt, err := h.running(id)
	if errors.Is(err, ErrNotRunning) {
		return ErrNoTurnToSteer
	}
	if err != nil {
		return err
	}
	r := lt.runner()
	lt.mu.Lock()
	cur, stopping := lt.cur, lt.stop > 0
	lt.mu.Unlock()
	if r == nil || cur == nil || stopping {
		return ErrNoTurnToSteer
	}
	st, ok := cur.(engine.Steerer)
	if !ok || !engine.Steers(r.eng) {
		return h.steerUnsupported(r.eng.Name(), nil)
	}
	sctx, cancel := context.WithTimeout(ctx, SteerTimeout)
	defer cancel()
	switch err := st.Steer(sctx, message); {
	case err == nil:
	case ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w: the engine did not take the message within %v; it may not have it", ErrBusy, SteerTimeout)
	case errors.Is(err, engine.ErrUnsupported):
		return h.steerUnsupported(r.eng.Name(), err)
	case errors.Is(err, engine.ErrNotRunning):
		return ErrNoTurnToSteer
	default:
		return err
	}
	r.log.Info().Str("sessionId", id).Str("userMessage", logging.Truncate(message, 200)).Msg("turn steered")
	r.steered(message)
	return nil
}

// steered logs a delivered steer as a user:message of the turn, or,
// when the turn's process:exit is already out, after it in the log.
func (r *runner) steered(message string) {
	ev := event.Event{Type: event.TypeUserMessage, Text: message}
	r.emitMu.Lock()
	if !r.exited {
		r.flushLocked()
		r.emitLocked(ev)
		r.emitMu.Unlock()
		return
	}
	r.emitMu.Unlock()
	_ = r.h.appendEvent(r.s.ID, ev)
}

// steerUnsupported is ErrSteerUnsupported naming the engines that can.
func (h *Harness) steerUnsupported(name string, cause error) error {
	var can []string
	for _, n := range h.order {
		if engine.Steers(h.engines[n]) {
			can = append(can, n)
		}
	}
	msg := "the " + name + " engine cannot take a message while a turn runs"
	if cause != nil {
		msg += " (" + cause.Error() + ")"
	}
	if len(can) > 0 {
		msg += "; engines that can: " + strings.Join(can, ", ")
	} else {
		msg += "; no configured engine can"
	}
	return fmt.Errorf("%w: %s", ErrSteerUnsupported, msg)
}
