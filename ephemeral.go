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
	"unsafe"

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
	e := &ephemeral{turn: st, done: make(chan struct{}), wake: make(chan struct{})}
	go func() {
		defer h.wg.Done()
		e.run()
	}()
	return &Turn{eph: e, h: h}, nil
}

// ephemeral is an ephemeral turn: its engine turn, read to the end on a
// goroutine of the Harness (so a reader that stops never stalls the
// agent), and its records, held for the Turn's readers.
//
// What is held is bounded (maxHeldBytes): a turn's records are all kept
// for reading again while they fit; beyond that the oldest ones that
// every current reader has passed are let go, and while a reader is
// behind by more than that the engine turn is not read ahead of it (the
// pipe's back-pressure, as a reader of the engine's Turn had it). With no
// reader, the oldest records beyond the bound are let go: a reader that
// comes late starts at the oldest one still held.
type ephemeral struct {
	turn *scrubbedTurn
	done chan struct{} // closed once the turn is read to the end and closed
	err  error         // the turn's Err, set before done is closed

	mu      sync.Mutex
	recs    []session.Record // held records are recs[head:]; recs[head] has seq base+1
	head    int
	base    int64
	bytes   int             // what the held records cost (recordCost)
	readers map[*int64]bool // each reader's next seq - 1 (what it has read)
	wake    chan struct{}   // closed (and replaced) when a record comes, a reader moves or leaves, or the turn ends
	ended   bool            // no record comes any more; the engine turn is being closed
	stopped bool            // Interrupt or Kill asked: never wait for readers
}

// maxHeldBytes bounds what an ephemeral turn holds of its records
// (recordCost).
var maxHeldBytes = 4 << 20

// recordCost is about what a held record keeps alive: its wire bytes,
// its typed event (a large struct) and the text in it.
func recordCost(rec session.Record) int {
	return 2*len(rec.Event) + eventSize
}

var eventSize = int(unsafe.Sizeof(event.Event{}))

// run reads the engine turn to its end.
func (e *ephemeral) run() {
	for e.turn.Next() {
		ev := e.turn.Event()
		e.mu.Lock()
		seq := e.base + int64(len(e.recs)-e.head) + 1
		rec := session.Record{Seq: seq, Event: wire(seq, ev.AppendJSON(nil)), Typed: &ev}
		e.recs = append(e.recs, rec)
		e.bytes += recordCost(rec)
		e.trimLocked()
		e.signalLocked()
		// Not ahead of the slowest reader by more than the bound.
		for e.bytes > maxHeldBytes && len(e.readers) > 0 && !e.stopped {
			wake := e.wake
			e.mu.Unlock()
			<-wake
			e.mu.Lock()
			e.trimLocked()
		}
		e.mu.Unlock()
	}
	e.mu.Lock()
	e.ended = true
	e.signalLocked()
	e.mu.Unlock()
	e.err = e.turn.Err()
	_ = e.turn.Close()
	close(e.done)
}

// trimLocked lets the oldest records go while more than maxHeldBytes are
// held and every reader has read them.
func (e *ephemeral) trimLocked() {
	passed := e.base + int64(len(e.recs)-e.head) // with no reader: all of them
	for p := range e.readers {
		passed = min(passed, *p)
	}
	for e.head < len(e.recs) && e.bytes > maxHeldBytes && e.recs[e.head].Seq <= passed {
		e.bytes -= recordCost(e.recs[e.head])
		e.recs[e.head] = session.Record{}
		e.head++
		e.base++
	}
	if e.head >= 1024 && e.head >= len(e.recs)/2 { // amortised: each record moves at most once per halving
		n := copy(e.recs, e.recs[e.head:])
		clear(e.recs[n:])
		e.recs, e.head = e.recs[:n], 0
	}
}

func (e *ephemeral) signalLocked() {
	close(e.wake)
	e.wake = make(chan struct{})
}

// stop interrupts (1) or kills (2) the engine turn while it runs.
func (e *ephemeral) stop(level int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ended {
		return ErrNotRunning
	}
	e.stopped = true
	e.signalLocked()
	if level == 2 {
		return scrubbedError{e.turn.Kill()}.orNil()
	}
	return scrubbedError{e.turn.Interrupt()}.orNil()
}

// records is Turn.Events of an ephemeral turn: every record held, from
// the oldest, then each as it comes, until the turn ends or ctx is
// cancelled.
func (e *ephemeral) records(ctx context.Context) iter.Seq2[session.Record, error] {
	return func(yield func(session.Record, error) bool) {
		e.mu.Lock()
		at := new(int64)
		*at = e.base
		if e.readers == nil {
			e.readers = map[*int64]bool{}
		}
		e.readers[at] = true
		e.mu.Unlock()
		defer func() {
			e.mu.Lock()
			delete(e.readers, at)
			e.signalLocked()
			e.mu.Unlock()
		}()
		for {
			e.mu.Lock()
			for *at >= e.base+int64(len(e.recs)-e.head) && !e.ended {
				wake := e.wake
				e.mu.Unlock()
				select {
				case <-ctx.Done():
					return
				case <-wake:
				}
				e.mu.Lock()
			}
			i := int(*at - e.base)
			if i < 0 { // let go while no reader held it: go on from the oldest held
				i, *at = 0, e.base
			}
			held := e.recs[e.head:]
			if i >= len(held) {
				e.mu.Unlock()
				return
			}
			rec := held[i]
			rec.More = i+1 < len(held)
			e.mu.Unlock()
			if ctx.Err() != nil || !yield(rec, nil) {
				return
			}
			e.mu.Lock()
			*at = rec.Seq
			if e.bytes > maxHeldBytes {
				e.signalLocked() // the engine turn may wait for this reader
			}
			e.mu.Unlock()
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
}

func (t *scrubbedTurn) Next() bool {
	if t.next < len(t.queue) {
		t.next++
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
		if t.clean {
			t.queue = append(t.queue[:0], t.Turn.Event())
			continue
		}
		t.queue = t.scrub.Add(t.queue[:0], t.Turn.Event())
	}
	return true
}

// Event returns the event Next advanced to.
func (t *scrubbedTurn) Event() event.Event { return t.queue[t.next] }

// Err is the engine turn's error with its text scrubbed.
func (t *scrubbedTurn) Err() error {
	if err := t.Turn.Err(); err != nil {
		return scrubbedError{err}
	}
	return nil
}
