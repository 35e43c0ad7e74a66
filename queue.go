package harness

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/session"
)

// A session's prompt queue (issue 32): prompts a person sent while a
// turn ran, run in order, each as its own turn, started by the core when
// the previous turn of the session ends, whichever door started it. The
// queue is stored with the session (session.Queue), so it survives a
// restart and a crash: a prompt is taken out of the queue and marked
// started in one atomic write before its turn starts, so none runs twice.
//
// Queueing is opt-in (TurnRequest.Queue): StartTurn on a busy session
// stays ErrBusy, as the specification says.

// Bounds of a session's queue.
const (
	// MaxQueued is how many prompts one session's queue holds.
	MaxQueued = 100
	// MaxQueuedMessage is the largest queued message, in bytes.
	MaxQueuedMessage = 256 << 10
)

// Errors of the queue.
var (
	// ErrQueueFull: the session already has MaxQueued prompts queued.
	ErrQueueFull = engine.NewError(engine.ErrFull, "the session's prompt queue is full")
	// ErrMessageTooLarge: a queued message is over MaxQueuedMessage.
	ErrMessageTooLarge = engine.NewError(engine.ErrCannot, "message too large to queue")
	// ErrPromptNotFound: no such prompt in the session's queue (it may
	// have started already).
	ErrPromptNotFound = engine.NewError(engine.ErrNotFound, "no such prompt in the session's queue")
)

// QueuedPrompt is one prompt in a session's queue.
type QueuedPrompt = session.QueuedPrompt

// ErrQueued is what StartTurn's error matches when, asked to
// (TurnRequest.Queue), it queued the message instead of starting a turn.
// It is not a failure: the error is a *Queued saying where.
var ErrQueued = errors.New("queued behind the session's turn")

// Queued says where a prompt was queued (Enqueue, EnqueueFirst). It is
// also the error StartTurn returns when it queued the message
// (TurnRequest.Queue; errors.Is(err, ErrQueued)).
type Queued struct {
	PromptID string `json:"promptId"`
	// Position is its place in the queue, 0 = next to run.
	Position int `json:"position"`
}

func (q *Queued) Error() string {
	return fmt.Sprintf("queued behind the session's turn: prompt %s at position %d", q.PromptID, q.Position)
}

// Is makes a *Queued match ErrQueued.
func (q *Queued) Is(target error) bool { return target == ErrQueued }

// Enqueue queues message in session id's queue even when nothing runs
// (the core then starts it as it starts every queued prompt). It fails
// as StartTurn with Queue does.
func (h *Harness) Enqueue(id, message string) (*Queued, error) {
	_, q, err := h.startOrQueue(context.Background(), id, message, TurnOptions{}, false, false)
	return q, err
}

// EnqueueFirst is Enqueue at the head of the queue: message runs before
// every prompt queued already (a door's own prompt that must come first,
// as the IRC runner's resume prompt after a crash).
func (h *Harness) EnqueueFirst(id, message string) (*Queued, error) {
	_, q, err := h.startOrQueue(context.Background(), id, message, TurnOptions{}, false, true)
	return q, err
}

// startOrQueue starts a turn of session id with message, as StartTurn
// does, when start is set, the session is idle, its queue is not held
// (HoldQueue) and nothing is queued before it; otherwise it queues the
// message behind what runs and is queued (first: before what is queued),
// and returns where (the *Turn is then nil).
func (h *Harness) startOrQueue(ctx context.Context, id, message string, o TurnOptions, start, first bool) (*Turn, *Queued, error) {
	h.queueing.Store(true)
	if err := checkQueued(message); err != nil {
		return nil, nil, err
	}
	if _, err := h.Session(id); err != nil {
		return nil, nil, err
	}
	unlock := h.qlocks.Lock(id)
	defer unlock()
	q, err := h.store.LoadQueue(id)
	if err != nil {
		return nil, nil, mapStoreErr(err)
	}
	if start && len(q.Prompts) == 0 && q.Started == nil && !q.Held {
		t, err := h.startTurn(ctx, id, message, o)
		if !errors.Is(err, ErrBusy) {
			return t, nil, err
		}
	}
	if len(q.Prompts) >= MaxQueued {
		return nil, nil, fmt.Errorf("%w (%d prompts); delete some or wait for them to run", ErrQueueFull, MaxQueued)
	}
	p := QueuedPrompt{PromptID: uuid.NewString(), Message: message, QueuedAt: time.Now().UTC()}
	pos := len(q.Prompts)
	if first {
		pos = 0
	}
	q.Prompts = slices.Insert(q.Prompts, pos, p)
	if err := h.store.SaveQueue(id, q); err != nil {
		return nil, nil, mapStoreErr(err)
	}
	h.queueEvent(id, event.Event{Type: event.TypePromptQueued, Queued: &event.PromptQueued{PromptID: p.PromptID, Position: pos, Message: message}})
	// The turn may have ended between the busy check and the save:
	// draining now starts this prompt if nothing runs.
	h.kickQueue(id)
	return nil, &Queued{PromptID: p.PromptID, Position: pos}, nil
}

// Queue returns the prompts queued in session id, in the order they run.
func (h *Harness) Queue(id string) ([]QueuedPrompt, error) {
	q, err := h.withQueue(id, nil)
	return q.Prompts, err
}

// HoldQueue holds (on) or releases (!on) session id's queue. While it is
// held no queued prompt starts: the turn that runs finishes, prompts are
// still queued (StartTurn with Queue queues even on an idle session) and can be
// edited, and a turn started directly (StartTurn) is not refused. The
// hold is stored with the queue, so it outlives a restart. Releasing it
// starts the next queued prompt when nothing runs. Holding a held queue,
// or releasing one that is not held, changes nothing.
func (h *Harness) HoldQueue(id string, on bool) error {
	h.queueing.Store(true)
	_, err := h.withQueue(id, func(q *session.Queue) error {
		q.Held = on
		return nil
	})
	if err == nil && !on {
		h.kickQueue(id)
	}
	return err
}

// QueueHeld reports whether session id's queue is held (HoldQueue).
func (h *Harness) QueueHeld(id string) (bool, error) {
	q, err := h.withQueue(id, nil)
	return q.Held, err
}

// QueueEdit changes a queued prompt: Message (when not nil) replaces its
// text, Position (when not nil) moves it there (0 = next; past the end =
// last).
type QueueEdit struct {
	Message  *string
	Position *int
}

// ErrInvalidQueueEdit: a queue edit that means nothing (a negative
// position).
var ErrInvalidQueueEdit = engine.NewError(engine.ErrInvalid, "invalid queue edit")

// EditQueued applies e to prompt promptID of session id and returns the
// queue as it now is. A prompt that is not queued (any more) is
// ErrPromptNotFound.
func (h *Harness) EditQueued(id, promptID string, e QueueEdit) ([]QueuedPrompt, error) {
	if e.Message != nil {
		if err := checkQueued(*e.Message); err != nil {
			return nil, err
		}
	}
	if e.Position != nil && *e.Position < 0 {
		return nil, fmt.Errorf("%w: position must be 0 or more", ErrInvalidQueueEdit)
	}
	q, err := h.withQueue(id, func(q *session.Queue) error {
		i, err := indexOf(q, promptID)
		if err != nil {
			return err
		}
		p := q.Prompts[i]
		if e.Message != nil {
			p.Message = *e.Message
		}
		q.Prompts[i] = p
		if e.Position != nil {
			q.Prompts = slices.Delete(q.Prompts, i, i+1)
			q.Prompts = slices.Insert(q.Prompts, min(*e.Position, len(q.Prompts)), p)
		}
		return nil
	})
	return q.Prompts, err
}

// DeleteQueued removes prompt promptID from session id's queue; it never
// runs. A prompt that is not queued (any more) is ErrPromptNotFound.
func (h *Harness) DeleteQueued(id, promptID string) error {
	_, err := h.withQueue(id, func(q *session.Queue) error {
		i, err := indexOf(q, promptID)
		if err != nil {
			return err
		}
		q.Prompts = slices.Delete(q.Prompts, i, i+1)
		return nil
	})
	if err != nil {
		return err
	}
	h.queueEvent(id, event.Event{Type: event.TypePromptDequeued, Dequeued: &event.PromptDequeued{PromptID: promptID, Reason: event.DequeuedDeleted}})
	return nil
}

// withQueue loads session id's queue under its lock and, with change,
// changes and saves it (nothing is saved when change fails). Prompts is
// never nil.
func (h *Harness) withQueue(id string, change func(*session.Queue) error) (session.Queue, error) {
	if _, err := h.Session(id); err != nil {
		return session.Queue{}, err
	}
	unlock := h.qlocks.Lock(id)
	defer unlock()
	q, err := h.store.LoadQueue(id)
	if err != nil {
		return session.Queue{}, mapStoreErr(err)
	}
	if change != nil {
		if err := change(&q); err != nil {
			return session.Queue{}, err
		}
		if err := h.store.SaveQueue(id, q); err != nil {
			return session.Queue{}, mapStoreErr(err)
		}
	}
	if q.Prompts == nil {
		q.Prompts = []QueuedPrompt{}
	}
	return q, nil
}

func indexOf(q *session.Queue, promptID string) (int, error) {
	i := slices.IndexFunc(q.Prompts, func(p QueuedPrompt) bool { return p.PromptID == promptID })
	if i < 0 {
		return 0, fmt.Errorf("%w: %q", ErrPromptNotFound, promptID)
	}
	return i, nil
}

// checkQueued checks a message for the queue: not blank, not too large.
func checkQueued(message string) error {
	if strings.TrimSpace(message) == "" {
		return ErrEmptyMessage
	}
	if len(message) > MaxQueuedMessage {
		return fmt.Errorf("%w: %d bytes, at most %d", ErrMessageTooLarge, len(message), MaxQueuedMessage)
	}
	return nil
}

// dropQueue forgets session id's queue (the session is being deleted):
// nothing queued starts while its turn is killed.
func (h *Harness) dropQueue(id string) {
	unlock := h.qlocks.Lock(id)
	defer unlock()
	if err := h.store.SaveQueue(id, session.Queue{}); err != nil {
		h.log.Warn().Str("sessionId", id).Err(err).Msg("queue: could not be dropped")
	}
}

// queueEvent stores a queue event in the session's log: inside the
// running turn's stream when a turn runs (its readers see it live),
// else as an event of the core outside any turn.
func (h *Harness) queueEvent(id string, ev event.Event) {
	h.mu.Lock()
	lt := h.live[id]
	h.mu.Unlock()
	if r := liveRunner(lt); r != nil && r.emitBeforeExit(ev) {
		return
	}
	if err := h.appendEvent(id, ev); err != nil {
		h.log.Warn().Str("sessionId", id).Err(err).Str("type", string(ev.Type)).Msg("queue: event could not be stored")
	}
}

// emitBeforeExit emits ev in the turn unless its process:exit is out
// already (the turn's stream ends there); it reports whether it did.
func (r *runner) emitBeforeExit(ev event.Event) bool {
	r.emitMu.Lock()
	defer r.emitMu.Unlock()
	if r.exited {
		return false
	}
	r.flushLocked()
	r.emitLocked(ev)
	return true
}

// kickQueue drains session id's queue on a goroutine of the Harness
// (Shutdown waits for it). Nothing happens after Shutdown, nor in a
// Harness that never queued (a one-shot command's: it does not run a
// server's queued prompts).
func (h *Harness) kickQueue(id string) {
	if !h.queueing.Load() {
		return
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.wg.Add(1)
	h.mu.Unlock()
	go func() {
		defer h.wg.Done()
		h.drainQueue(id)
	}()
}

// drainQueue starts the next queued prompt of session id when no turn
// runs. A prompt whose turn cannot start is dropped (prompt:dequeued,
// reason failed) and the next one tried; ErrBusy leaves it queued for
// the end of the turn that runs.
func (h *Harness) drainQueue(id string) {
	if testHookDrained != nil {
		defer testHookDrained(id)
	}
	unlock := h.qlocks.Lock(id)
	defer unlock()
	for {
		h.mu.Lock()
		closed := h.closed
		h.mu.Unlock()
		if closed || h.IsRunning(id) {
			return
		}
		q, err := h.store.LoadQueue(id)
		if err != nil {
			if !errors.Is(err, session.ErrNotFound) {
				h.log.Warn().Str("sessionId", id).Err(err).Msg("queue: could not be read")
			}
			return
		}
		// Nothing runs: a prompt marked started has had its turn.
		q.Started = nil
		if len(q.Prompts) == 0 || q.Held || !h.gateOpen(id) {
			_ = h.store.SaveQueue(id, q)
			return
		}
		p := q.Prompts[0]
		q.Prompts, q.Started = slices.Clone(q.Prompts[1:]), &p
		// Durable before the turn starts: after a crash this prompt is
		// started, not queued, and does not run again.
		if err := h.store.SaveQueue(id, q); err != nil {
			h.log.Error().Str("sessionId", id).Err(err).Msg("queue: the next prompt could not be marked started")
			return
		}
		_, err = h.startTurn(context.Background(), id, p.Message, TurnOptions{dequeued: p.PromptID})
		if err == nil {
			return // its end drains the next one
		}
		if errors.Is(err, ErrBusy) || errors.Is(err, ErrClosed) {
			// Another door's turn (or Shutdown) came first: the prompt
			// goes back to the head of the queue.
			q.Prompts, q.Started = slices.Insert(q.Prompts, 0, p), nil
			if serr := h.store.SaveQueue(id, q); serr != nil {
				h.log.Error().Str("sessionId", id).Err(serr).Msg("queue: a prompt could not be put back")
			}
			return
		}
		h.log.Warn().Str("sessionId", id).Str("promptId", p.PromptID).Err(err).Msg("queue: a queued prompt's turn could not start")
		h.queueEvent(id, event.Event{Type: event.TypePromptDequeued,
			Dequeued: &event.PromptDequeued{PromptID: p.PromptID, Reason: event.DequeuedFailed, Error: err.Error()}})
		if errors.Is(err, ErrNotFound) {
			return
		}
	}
}

// testHookDrained, when set by a test, runs as each drainQueue returns.
var testHookDrained func(id string)

// resumeQueues, run by New with Config.ResumeQueues, drains the queues a
// previous process left. A turn the previous process started and did
// not end (it was killed mid-turn) is ended in the log first: a
// session:error of kind process saying so, then its process:exit.
func (h *Harness) resumeQueues() {
	h.queueing.Store(true)
	for _, id := range h.store.QueuedSessions(h.roots) {
		if _, err := h.Session(id); err != nil { // settles a turn the previous process cut (cutturn.go)
			continue
		}
		h.kickQueue(id)
	}
}
