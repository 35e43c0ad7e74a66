package claudecode

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"syscall"

	"github.com/chirality/harness/engine"
)

// Warm is a CLI started ahead of its turn: spawned with the turn's flags
// and environment, in its own process group, it does its start-up work
// (0.4–1 s, loading a --resume transcript included) and then waits for
// its message on stdin. The CLI prints nothing before it has a message,
// and whatever it might print is kept in the turn's queue, so the turn's
// events are exactly a cold turn's.
//
// Lifecycle: Prestart → (Start → an ordinary *Turn) or Stop. A Warm is
// not a running turn of its key (IsRunning is false, StartTurn is not
// refused), and Manager.Shutdown stops every Warm it has.
type Warm struct {
	m      *Manager
	t      *Turn
	print  [32]byte // what it was started with: argv, env, system prompt content
	mu     sync.Mutex
	ended  bool // started or stopped
	sealed bool // Start won
}

var _ engine.Warm = (*Warm)(nil)

// ErrWarmDied: the warm CLI ended while it waited for its message.
var ErrWarmDied = errors.New("claudecode: the warm CLI process died before its message")

// Prestart spawns the CLI for a turn of sessionKey with opts whose
// message comes later (Warm.Start). ctx bounds the spawn only.
func (m *Manager) Prestart(ctx context.Context, sessionKey string, opts TurnOpts) (*Warm, error) {
	bin, err := m.prepare(opts)
	if err != nil {
		return nil, err
	}
	w := &Warm{m: m, print: fingerprint(bin, opts)}
	m.mu.Lock()
	if m.turns.Closed() {
		m.mu.Unlock()
		return nil, registryError(engine.ErrClosed)
	}
	w.t = newTurn(m, sessionKey, bin, opts)
	m.warm[w] = struct{}{}
	m.starting.Add(1)
	m.mu.Unlock()
	defer m.starting.Done()
	m.checkVersionOnce(bin)
	if err := w.t.spawn(); err != nil {
		w.t.approvalsCancel()
		m.mu.Lock()
		delete(m.warm, w)
		m.mu.Unlock()
		return nil, err
	}
	for _, req := range prestartRequests {
		if err := w.t.stdin.writeLine(req); err != nil {
			w.Stop()
			return nil, fmt.Errorf("claudecode: prestart: %w", err)
		}
	}
	return w, nil
}

// prestartRequests are the control requests a warm CLI gets at once, so
// that work it would otherwise do after its message is done while it
// waits. Each one's only output is a control_response, which makes no
// event, so the turn's events stay exactly a cold turn's.
//
//   - initialize makes the CLI finish setting up the session (its
//     startup work gate opens now rather than on the first message):
//     the first token ~100 ms sooner.
//   - get_context_usage with detail "summary" makes it assemble what the
//     first request is built from (system prompt sections, tool schemas,
//     memory files, skills) and answer from local estimates: no API call
//     (detail "full" would make ~26 count_tokens calls, so it is not
//     used). Measured on 2.1.329: message → first text delta 250–650 ms
//     → 150–280 ms on a loaded 2-core machine. It reads only what the
//     CLI read at its start-up anyway.
var prestartRequests = []map[string]any{
	{"type": "control_request", "request_id": "harness_init", "request": map[string]any{"subtype": "initialize"}},
	{"type": "control_request", "request_id": "harness_warm_context", "request": map[string]any{"subtype": "get_context_usage", "detail": "summary"}},
}

// fingerprint hashes what a CLI is started with: the binary, argv, the
// turn's extra environment, the MCP servers and the content of the system prompt file
// (the file's path stays the same when a persona changes).
func fingerprint(bin string, opts TurnOpts) [32]byte {
	h := sha256.New()
	fmt.Fprintf(h, "%q\x00", bin)
	for _, a := range opts.Args() {
		fmt.Fprintf(h, "%q\x00", a)
	}
	fmt.Fprintf(h, "cwd=%q\x00", opts.Cwd)
	fmt.Fprintf(h, "sandbox=%v %q open=%v rw=%q\x00", opts.Sandbox, opts.Protected, opts.OpenNetwork, opts.SandboxWritable)
	for _, e := range opts.Env {
		fmt.Fprintf(h, "env=%q\x00", e)
	}
	if opts.AppendSystemPromptFile != "" {
		b, err := os.ReadFile(opts.AppendSystemPromptFile)
		if err != nil {
			fmt.Fprintf(h, "prompt-error=%v\x00", err)
		}
		h.Write(b)
	}
	if opts.MCP != nil {
		// The servers (their secrets too: hashed, never kept) are part
		// of what the CLI was started with.
		b, err := opts.MCP.JSON()
		fmt.Fprintf(h, "mcp=%v\x00", err)
		h.Write(b)
	}
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}

// Pid is the warm child's process id (its process group's too).
func (w *Warm) Pid() int { return w.t.pid }

// Turn is the turn the warm child becomes; read it only after Send.
func (w *Warm) Turn() *Turn { return w.t }

// Alive reports whether the child is still waiting. A child already
// reaped whose exit the turn's goroutine has not recorded yet (its
// process group is gone) is not.
func (w *Warm) Alive() bool {
	select {
	case <-w.t.exited:
		return false
	default:
	}
	return !errors.Is(syscall.Kill(-w.t.pid, 0), syscall.ESRCH)
}

// MatchesOpts reports whether a turn with opts would be started exactly
// as this one was.
func (w *Warm) MatchesOpts(opts TurnOpts) bool {
	bin, err := w.m.prepare(opts)
	return err == nil && bin == w.t.bin && fingerprint(bin, opts) == w.print
}

// Matches implements engine.Warm (see OptsFor for the mapping).
func (w *Warm) Matches(req engine.Request) bool {
	opts, err := OptsFor(req)
	return err == nil && w.MatchesOpts(opts)
}

// Start implements engine.Warm.
func (w *Warm) Start(req engine.Request) (engine.Turn, error) {
	t, err := w.Send(MessageFor(req), req.Approver)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// Send gives the warm child its message (and the approver its can_use_tool
// requests go to, which must be non-nil exactly when Prestart's opts had
// one) and returns the turn, now the running turn of its key. It fails
// with engine.ErrBusy while the key has a running turn, engine.ErrClosed after
// Shutdown, and ErrWarmDied; on failure the Warm is stopped.
func (w *Warm) Send(message string, approver engine.Approver) (*Turn, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		return nil, errors.New("claudecode: warm turn already started or stopped")
	}
	if (approver == nil) != (w.t.approver.Load() == nil) {
		w.stopLocked()
		return nil, fmt.Errorf("%w: the approver does not match the flags the CLI was started with", ErrInvalidOptions)
	}
	m := w.m
	m.mu.Lock()
	err := m.turns.Add(w.t.key, running{w.t})
	if err == nil && !w.Alive() {
		m.turns.Remove(w.t.key, running{w.t})
		err = ErrWarmDied
	}
	if err != nil {
		m.mu.Unlock()
		w.stopLocked()
		return nil, registryError(err)
	}
	delete(m.warm, w)
	m.mu.Unlock()
	w.ended, w.sealed = true, true
	if approver != nil {
		w.t.approver.Store(&approver)
	}
	w.t.send(message)
	return w.t, nil
}

// Stop kills the warm child (its whole process group) and waits for it
// and its goroutines. Safe to call more than once; after a successful
// Send it does nothing.
func (w *Warm) Stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopLocked()
}

func (w *Warm) stopLocked() {
	if w.ended {
		return
	}
	w.ended = true
	w.m.mu.Lock()
	delete(w.m.warm, w)
	w.m.mu.Unlock()
	_ = w.t.Close()
}

// stopWarm stops every warm child (Shutdown).
func (m *Manager) stopWarm() {
	m.mu.Lock()
	ws := make([]*Warm, 0, len(m.warm))
	for w := range m.warm {
		ws = append(ws, w)
	}
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, w := range slices.Clip(ws) {
		wg.Add(1)
		go func() { defer wg.Done(); w.Stop() }()
	}
	wg.Wait()
}

// Prestart implements engine.Prestarter: the CLI a turn of req would run
// (a non-nil req.Approver adds --permission-prompt-tool stdio, as a turn
// that asks would have), waiting for its message.
func (e *Engine) Prestart(ctx context.Context, req engine.Request) (engine.Warm, error) {
	opts, err := OptsFor(req)
	if err != nil {
		return nil, err
	}
	return e.m.Prestart(ctx, req.SessionKey, opts)
}

var _ engine.Prestarter = (*Engine)(nil)
