package harness

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/internal/secrets"
	"github.com/chirality/harness/session"
)

// startEphemeral is StartTurn without a session: req.Request on
// req.Engine, its events scrubbed and held in memory for the Turn's
// readers (see StartTurn).
func (h *Harness) startEphemeral(ctx context.Context, tr TurnRequest) (*Turn, error) {
	req := tr.Request
	req.Message = tr.Message
	if strings.TrimSpace(req.Message) == "" {
		return nil, ErrEmptyMessage
	}
	if o := tr.Options; o.Persona != "" || o.SystemPromptAppend != "" || o.ToolsOverride != "" ||
		o.DisallowedToolsOverride != nil || o.AutoApproveToolsOverride != nil {
		return nil, fmt.Errorf("%w: an ephemeral turn has no persona or per-turn overrides; set its Request", ErrInvalidTurnOptions)
	}
	if tr.Options.Model != "" {
		req.Model = tr.Options.Model
	}
	name := tr.Engine
	if name == "" {
		name = h.cfg.DefaultEngine
	}
	eng, err := h.engineFor(name)
	if err != nil {
		return nil, err
	}
	if req.SessionKey == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		req.SessionKey = "ephemeral-" + hex.EncodeToString(b[:])
	}
	req.Env = append(slices.Clone(h.cfg.ChildEnv), req.Env...)
	req.AllowedTools = append(slices.Clone(req.AllowedTools), h.cfg.AllowedTools...)
	secrets.RegisterEnv(req.Env) // what the agent is handed is scrubbed from what it says
	var notices []event.Event
	if req.MCP == nil && req.Cwd != "" {
		// the servers a session's turn in req.Cwd would get: the project's
		// .mcp.json that a person trusted, and Config.MCP; the rest waits
		// for a person (trust:required, before the engine's events)
		cfg, pending, _, err := h.mcpServers(req.Cwd, nil)
		if err != nil {
			return nil, err
		}
		req.MCP = cfg
		for i := range pending {
			notices = append(notices, event.Event{Type: event.TypeTrustRequired, SessionID: req.SessionKey, Trust: &pending[i]})
		}
	}
	// Shutdown waits for the turn's reader (h.wg), as for a session's.
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, ErrClosed
	}
	h.wg.Add(1)
	h.mu.Unlock()
	if err := ctx.Err(); err != nil {
		h.wg.Done()
		return nil, err
	}
	et, err := eng.StartTurn(context.Background(), req) // ctx bounds the start only
	if err != nil {
		h.wg.Done()
		return nil, scrubbedError{err}
	}
	// An engine that scrubs its own events (engine.ScrubbedTurn) is not
	// scrubbed again: the same scrubber twice costs the driver ~5 % of
	// its CPU on a long turn and changes nothing.
	clean := false
	if sc, ok := et.(engine.ScrubbedTurn); ok {
		clean = sc.EventsScrubbed()
	}
	st := &scrubbedTurn{Turn: et, clean: clean}
	if len(notices) > 0 {
		st.queue, st.next = notices, -1 // the notices come first
	}
	e := &ephemeral{turn: st, done: make(chan struct{}), wake: make(chan struct{}), kick: make(chan struct{}, 1), ring: make([]event.Event, heldRecords)}
	h.mu.Lock()
	if h.ephs == nil {
		h.ephs = map[*ephemeral]bool{}
	}
	h.ephs[e] = true
	e.stopped = h.closed // Shutdown began meanwhile: it waits for this turn too
	h.mu.Unlock()
	go func() {
		defer h.wg.Done()
		e.drain()
		h.mu.Lock()
		delete(h.ephs, e)
		h.mu.Unlock()
	}()
	return &Turn{eph: e, h: h}, nil
}

// shutdownEphemerals lets the Harness read every ephemeral turn to its
// end past its readers (Shutdown): the engines' Shutdown ends the engine
// turns, and Shutdown, waiting for them (h.wg), must not wait for a
// reader stuck in its loop body, any more than it does for a session's.
// What the readers have not read stays held, within the bounds of a
// stopped turn (roomLocked).
func (h *Harness) shutdownEphemerals() {
	h.mu.Lock()
	ephs := make([]*ephemeral, 0, len(h.ephs))
	for e := range h.ephs {
		ephs = append(ephs, e)
	}
	h.mu.Unlock()
	for _, e := range ephs {
		e.mu.Lock()
		e.stopped = true
		e.kickDrain()
		e.signalLocked() // a reader that waits for room reads on
		e.mu.Unlock()
	}
}

// ephemeral is an ephemeral turn: its engine turn and its records, held
// for the Turn's readers.
//
// Who reads the engine turn: a reader whose ctx can never be cancelled
// (context.Background, as `harness turn` reads) reads it itself when it
// has read every held record, so an event goes from the engine to the
// reader on one goroutine, with no hand-off; otherwise the Harness's
// goroutine (drain) reads it, so a turn nobody reads, or whose readers
// may stop, still runs to its end and never stalls the agent. One
// goroutine at a time reads it (pulling).
//
// What is held is bounded: the newest records, in a ring of events
// (heldRecords slots) that is allocated once, so a record costs no
// allocation of its own, and at most maxHeldBytes of their text
// (heldCost). The oldest records that every current reader has passed
// are let go to make room; while a reader is behind by more than that,
// the engine turn is not read ahead of it (the pipe's back-pressure, as
// a reader of the engine's Turn had it), unless the turn was stopped.
// With no reader, the oldest records are let go: a reader that comes
// late starts at the oldest one still held.
type ephemeral struct {
	turn *scrubbedTurn
	done chan struct{} // closed once the turn is read to the end and closed
	err  error         // the turn's Err, set before done is closed

	mu sync.Mutex
	// ring holds the records base+1 … newest, record seq in slot
	// seq % len(ring). A slot is written again only once every reader
	// has passed its record: a record's Typed points into it.
	ring    []event.Event
	base    int64
	newest  int64
	bytes   int  // what the held records cost (heldCost)
	ahead   bool // the engine had more events at hand after the newest record
	readers map[*int64]bool
	pullers int  // readers that read the engine turn themselves (ctx never cancelled)
	pulling bool // a goroutine is reading the engine turn's next event
	ended   bool // no record comes any more; the engine turn is being closed
	stopped bool // Interrupt or Kill asked: drain reads on, whoever reads
	killed  bool // killed by roomLocked: the held records reached stoppedGrowth times their bound
	// wake is closed (and replaced) when a record comes, a reader moves
	// or leaves or the turn ends, but only while someone waits on it
	// (waiters): a reader that keeps up costs no channel per record.
	wake    chan struct{}
	waiters int
	// kick tells drain to look again: a reader that read the engine turn
	// itself left, a pull drain waited for ended (drainWaits), a reader
	// moved while drain waited for room, or the turn was stopped.
	kick       chan struct{}
	drainWaits bool
}

// heldRecords is how many records an ephemeral turn holds at most;
// maxHeldBytes bounds what their text costs (heldCost).
var (
	heldRecords  = 2048
	maxHeldBytes = 1 << 20
)

// stoppedGrowth bounds how far the held records of a stopped turn grow
// past a stuck reader (times heldRecords, or their text times
// maxHeldBytes) before the turn is killed.
const stoppedGrowth = 16

// heldCost is about what a held record keeps alive besides its slot:
// the text in it.
func heldCost(ev *event.Event) int {
	n := len(ev.Text)
	if ev.ToolStart != nil {
		n += len(ev.ToolStart.Input) + len(ev.ToolStart.Name)
	}
	if ev.ToolResult != nil {
		n += len(ev.ToolResult.Content)
	}
	if ev.Error != nil {
		n += len(ev.Error.Error) + len(ev.Error.StderrTail)
	}
	return n
}

// drain reads the engine turn whenever no reader does, to its end.
func (e *ephemeral) drain() {
	e.mu.Lock()
	for !e.ended {
		mine := e.pullers == 0 || e.stopped // else a reader reads the turn
		if mine && !e.pulling && e.roomLocked() {
			e.pullLocked()
			continue
		}
		e.drainWaits = mine // for a pull to end or a reader to make room
		e.mu.Unlock()
		<-e.kick
		e.mu.Lock()
		e.drainWaits = false
	}
	e.mu.Unlock()
	<-e.done
}

// passedLocked is the newest seq every reader has read (newest with no
// reader).
func (e *ephemeral) passedLocked() int64 {
	passed := e.newest
	for p := range e.readers {
		passed = min(passed, *p)
	}
	return passed
}

// roomLocked lets the oldest records go that may go (every reader passed
// them, and the ring is full or their text is over maxHeldBytes), and
// reports whether the next record has a slot. A stopped turn always has
// one: the ring grows rather than wait for a reader.
func (e *ephemeral) roomLocked() bool {
	full := func() bool { return e.newest-e.base >= int64(len(e.ring)) || e.bytes > maxHeldBytes }
	if !full() {
		return true
	}
	passed := e.passedLocked()
	for e.base < e.newest && full() && e.base+1 <= passed {
		e.base++
		slot := &e.ring[e.base%int64(len(e.ring))]
		e.bytes -= heldCost(slot)
		*slot = event.Event{} // its text goes
	}
	if e.newest-e.base < int64(len(e.ring)) && (e.bytes <= maxHeldBytes || e.base == e.newest) {
		return true
	}
	if !e.stopped {
		return false
	}
	if e.bytes > stoppedGrowth*maxHeldBytes && !e.killed {
		// The same bound on what the held records cost: large records
		// reach it long before their number reaches the ring's.
		e.killed = true
		_ = e.turn.Kill()
	}
	if e.newest-e.base >= int64(len(e.ring)) { // stopped: grow, keeping each record's slot alive for its readers
		if len(e.ring) >= stoppedGrowth*heldRecords && !e.killed {
			// An agent that goes on after Interrupt while a reader is
			// stuck would grow the ring without end: it is killed, and
			// what its stream still holds is all that comes.
			e.killed = true
			_ = e.turn.Kill()
		}
		ring := make([]event.Event, 2*len(e.ring))
		for seq := e.base + 1; seq <= e.newest; seq++ {
			ring[seq%int64(len(ring))] = e.ring[seq%int64(len(e.ring))]
		}
		e.ring = ring
	}
	return true
}

// pullLocked reads the engine turn's next event into the held records,
// or, at its end, ends the turn; e.mu is held, and let go while the
// engine turn is read. roomLocked said there is a slot.
func (e *ephemeral) pullLocked() {
	e.pulling = true
	seq := e.newest + 1
	// The event goes straight into its slot: no reader reads it before
	// newest says it is there.
	slot := &e.ring[seq%int64(len(e.ring))]
	e.mu.Unlock()
	ok := e.turn.Next()
	ahead := false
	if ok {
		*slot = specEvent(e.turn.Event()) // uievent.go
		ahead = e.turn.buffered()
	}
	e.mu.Lock()
	e.pulling = false
	if e.drainWaits {
		e.kickDrain()
	}
	if !ok {
		e.ended = true
		e.signalLocked()
		e.mu.Unlock()
		e.err = e.turn.Err()
		_ = e.turn.Close()
		close(e.done)
		e.mu.Lock()
		return
	}
	e.newest = seq
	e.bytes += heldCost(slot)
	e.ahead = ahead
	e.signalLocked()
}

// signalLocked wakes the readers that wait for a record.
func (e *ephemeral) signalLocked() {
	if e.waiters == 0 {
		return
	}
	close(e.wake)
	e.wake = make(chan struct{})
}

// kickDrain tells drain to look again (it may not be waiting: kick holds
// one).
func (e *ephemeral) kickDrain() {
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

// stop interrupts (1) or kills (2) the engine turn while it runs.
func (e *ephemeral) stop(level int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ended {
		return ErrNotRunning
	}
	e.stopped = true
	e.kickDrain()
	e.signalLocked() // a reader that waits for room reads on
	if level == 2 {
		return scrubbedError{e.turn.Kill()}.orNil()
	}
	return scrubbedError{e.turn.Interrupt()}.orNil()
}

// records is Turn.Events of an ephemeral turn: every record held, from
// the oldest, then each as it comes, until the turn ends or ctx is
// cancelled. A record's Typed points into the ring: it holds until the
// reader's next record (copy it to keep it).
func (e *ephemeral) records(ctx context.Context) iter.Seq2[session.Record, error] {
	return func(yield func(session.Record, error) bool) {
		pulls := ctx.Done() == nil // nothing can stop this reader while it reads the engine turn
		e.mu.Lock()
		at := new(int64)
		*at = e.base
		if e.readers == nil {
			e.readers = map[*int64]bool{}
		}
		e.readers[at] = true
		if pulls {
			e.pullers++
		}
		defer func() {
			e.mu.Lock()
			delete(e.readers, at)
			if pulls {
				e.pullers--
			}
			e.kickDrain()
			e.signalLocked() // a reader that waits for room may have it now
			e.mu.Unlock()
		}()
		for {
			for *at >= e.newest && !e.ended {
				if pulls && !e.pulling && e.roomLocked() {
					e.pullLocked()
					continue
				}
				wake := e.wake
				e.waiters++
				e.mu.Unlock()
				select {
				case <-ctx.Done():
				case <-wake:
				}
				e.mu.Lock()
				e.waiters--
				if ctx.Err() != nil {
					e.mu.Unlock()
					return
				}
			}
			if *at < e.base { // let go while no reader held it: go on from the oldest held
				*at = e.base
			}
			if *at >= e.newest {
				e.mu.Unlock()
				return
			}
			seq := *at + 1
			rec := session.Record{Seq: seq, Typed: &e.ring[seq%int64(len(e.ring))], More: seq < e.newest || e.ahead}
			e.mu.Unlock()
			if ctx.Err() != nil || !yield(rec, nil) {
				return
			}
			e.mu.Lock()
			*at = seq
			if e.waiters > 0 || e.drainWaits {
				e.signalLocked() // a puller may wait for room
				e.kickDrain()
			}
		}
	}
}

// scrubbedError is an engine's error as it may be printed: its text
// scrubbed (secrets.Scrub); errors.Is and errors.As see the engine's.
type scrubbedError struct{ err error }

func (e scrubbedError) Error() string { return secrets.Scrub(e.err.Error()) }
func (e scrubbedError) Unwrap() error { return e.err }

// orNil is e, or nil when it wraps none.
func (e scrubbedError) orNil() error {
	if e.err == nil {
		return nil
	}
	return e
}

// scrubbedTurn is an engine's Turn whose events go through
// secrets.Events: a delta may be held back for the next, and what a
// block holds comes out before the event that ends it.
type scrubbedTurn struct {
	engine.Turn
	scrub secrets.Events
	clean bool          // the engine scrubbed the events already (engine.ScrubbedTurn)
	queue []event.Event // scrubbed events; queue[next:] are not read yet
	next  int
	ended bool
	// direct: Next advanced to the engine's own event (clean), which
	// Event returns as it is, with no copy through queue.
	direct bool
}

func (t *scrubbedTurn) Next() bool {
	t.direct = false
	if t.next < len(t.queue) {
		t.next++
	}
	if t.next < len(t.queue) {
		return true
	}
	if t.clean {
		t.queue, t.next = t.queue[:0], 0
		if !t.ended && t.Turn.Next() {
			t.direct = true
			return true
		}
		t.ended = true
		return false
	}
	for t.next == len(t.queue) {
		if t.ended {
			return false
		}
		t.next = 0
		if !t.Turn.Next() {
			t.ended = true
			t.queue = t.scrub.Flush(t.queue[:0]) // an engine that broke its contract (no process:exit) still loses no text
			continue
		}
		t.queue = t.scrub.Add(t.queue[:0], t.Turn.Event())
	}
	return true
}

// buffered reports whether another event is at hand: scrubbed and not
// read yet, or waiting in the engine's stream (an engine with Buffered).
func (t *scrubbedTurn) buffered() bool {
	if t.next+1 < len(t.queue) {
		return true
	}
	b, ok := t.Turn.(interface{ Buffered() int })
	return ok && b.Buffered() > 0
}

// Event returns the event Next advanced to.
func (t *scrubbedTurn) Event() event.Event {
	if t.direct {
		return t.Turn.Event()
	}
	return t.queue[t.next]
}

// Err is the engine turn's error with its text scrubbed.
func (t *scrubbedTurn) Err() error {
	if err := t.Turn.Err(); err != nil {
		return scrubbedError{err}
	}
	return nil
}
