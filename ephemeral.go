package harness

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/internal/secrets"
)

// StartEphemeral runs one turn of req on the engine called name (an
// engine's name or an alias; "" = the default engine) in an ephemeral
// session: nothing of it is kept. No session file, event log, saved
// prompt, checkpoint or project log is written, and req is run as given
// (no persona, mode or saved prompt is added; the caller chooses its
// flags), with the Harness's ChildEnv and AllowedTools added as for every
// turn. A req without MCP servers gets those a session's turn in req.Cwd
// would: the project's .mcp.json servers a person trusted (package
// trust) and Config.MCP; each project server left out is reported by a
// trust:required event before the engine's first. What the core does to every turn's events it does to these: they
// are scrubbed of every secret the process knows of and every credential
// in a known format, deltas included (secrets.Events). This is `harness
// turn` without --session or --persona.
//
// The returned Turn is the engine's, behind that scrubbing: read it to
// its end or Close it. req.SessionKey "" gets a fresh key; the Harness's
// Shutdown stops the turn with its engine. It fails with ErrEmptyMessage,
// ErrUnknownEngine, ErrClosed, or the engine's start errors.
func (h *Harness) StartEphemeral(ctx context.Context, name string, req engine.Request) (engine.Turn, error) {
	if strings.TrimSpace(req.Message) == "" {
		return nil, ErrEmptyMessage
	}
	if name == "" {
		name = h.cfg.DefaultEngine
	}
	eng, err := h.engineFor(name)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	closed := h.closed
	h.mu.Unlock()
	if closed {
		return nil, ErrClosed
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
	t, err := eng.StartTurn(ctx, req)
	if err != nil {
		return nil, scrubbedError{err}
	}
	// An engine that scrubs its own events (engine.ScrubbedTurn) is not
	// scrubbed again: the same scrubber twice costs the driver ~5 % of
	// its CPU on a long turn and changes nothing.
	st, _ := t.(engine.ScrubbedTurn)
	clean := st != nil && st.EventsScrubbed()
	if len(notices) > 0 {
		return &scrubbedTurn{Turn: t, clean: clean, queue: notices, next: -1}, nil
	}
	return &scrubbedTurn{Turn: t, clean: clean}, nil
}

// scrubbedError is an engine's error as it may be printed: its text
// scrubbed (secrets.Scrub); errors.Is and errors.As see the engine's.
type scrubbedError struct{ err error }

func (e scrubbedError) Error() string { return secrets.Scrub(e.err.Error()) }
func (e scrubbedError) Unwrap() error { return e.err }

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

// Buffered reports how many events are ready without waiting (0 when the
// engine does not say): a printer flushes at 0.
func (t *scrubbedTurn) Buffered() int {
	n := max(0, len(t.queue)-t.next-1)
	if b, ok := t.Turn.(interface{ Buffered() int }); ok {
		n += b.Buffered()
	}
	return n
}
