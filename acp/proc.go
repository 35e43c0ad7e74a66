package acp

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/rs/zerolog"

	"github.com/chirality/harness/internal/child"
	"github.com/chirality/harness/internal/secrets"
	"github.com/chirality/harness/sandbox"
)

// ProtocolVersion is the ACP version the client speaks.
const ProtocolVersion = 1

// MaxLineBytes is the bound on one line of an agent's output: the SDK's
// reader (10 MiB); a longer line closes the connection, which ends the
// turn with session:error kind process. Stderr lines are bounded at
// 1 MiB (longer ones are cut).
const MaxLineBytes = 10 << 20

// proc is one session's agent process and its ACP connection. The fields
// under "session state" are used by one turn at a time (the engine runs
// at most one turn per session key).
type proc struct {
	e   *Engine
	key string
	log zerolog.Logger

	child *child.Process // its stderr tail scrubbed of the agent's secret values
	pid   int
	conn  *sdk.Connection

	exited <-chan struct{} // closed once the process was reaped
	gone   chan struct{}   // closed once its pipes and readers are done

	// sandboxed: the agent runs in the kernel sandbox (its private TMPDIR
	// removed once it is reaped); a turn that asks otherwise does not
	// reuse it.
	sandboxed bool

	// session state
	initialized bool
	info        agentInfo
	sessionID   string
	prompted    bool // the ACP session got its first prompt (the preamble)
	setup       sessionSetup

	mu       sync.Mutex
	turn     *Turn
	idleT    *time.Timer
	stopOnce sync.Once

	// inbound is the context the SDK hands every handler call: it ends
	// once the notifications the agent sent before it went away have all
	// been handled (the SDK drains its queue after Done, then cancels
	// it). Kept from the first call.
	inbound atomic.Pointer[context.Context]
}

// drainGrace bounds how long a turn whose agent went away waits for the
// agent's last notifications to be handled.
const drainGrace = 2 * time.Second

// drained waits (at most drainGrace) until every notification the agent
// sent before its connection closed has been handled, so an update
// written just before a crash reaches the turn before its session:error.
// The SDK's Done comes first and the queue drains after it; its handler
// context ends when the drain is over. If no notification was handled
// yet, a first one may still be queued: it is given a moment to arrive.
func (p *proc) drained() {
	deadline := time.NewTimer(drainGrace)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		if c := p.inbound.Load(); c != nil {
			select {
			case <-(*c).Done():
			case <-deadline.C:
			}
			return
		}
		if i >= 40 { // 200 ms with no handler call: nothing was queued
			return
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			return
		}
	}
}

// agentInfo is what initialize told us.
type agentInfo struct {
	Name        string
	Version     string
	LoadSession bool
	Fork        bool // session/fork advertised
	Steer       bool // _session/steering advertised
	MCP         sdk.McpCapabilities
}

// spawn starts the agent in its own process group with its three pipes
// and the ACP connection on stdio.
func spawn(e *Engine, key, bin string, args, env []string, cwd string, box *sandbox.Spec, log zerolog.Logger) (*proc, error) {
	c, err := child.Start(child.Config{Path: bin, Args: args, Env: env, Dir: cwd, Sandbox: box,
		Secrets: secrets.SecretValues(env), Log: log, StderrSource: "acp agent stderr", DrainGrace: e.cfg.StopGrace})
	if err != nil {
		return nil, err
	}
	p := &proc{
		e: e, key: key, log: log, child: c, pid: c.Pid(), sandboxed: box != nil,
		exited: c.Exited(), gone: make(chan struct{}),
	}
	var w io.Writer = c.Stdin()
	var r io.Reader = c.Stdout()
	if tap := e.tap; tap != nil { // tests: the raw ACP stream, both ways
		w = io.MultiWriter(w, tapWriter{"out", tap})
		r = io.TeeReader(r, tapWriter{"in", tap})
	}
	p.conn = sdk.NewConnection(p.handle, w, r)
	p.conn.SetLogger(slog.New(slog.NewTextHandler(logWriter{p}, &slog.HandlerOptions{Level: slog.LevelInfo})))
	go p.reap(e.cfg.StopGrace)
	p.log.Debug().Int("pid", p.pid).Strs("command", e.cfg.Command).Msg("acp: agent started")
	return p, nil
}

// reap waits for the process (the runner kills what is left of its
// group), then joins the connection and the runner, closing stdout after
// grace should a stray grandchild hold it.
func (p *proc) reap(grace time.Duration) {
	<-p.exited
	select {
	case <-p.conn.Done():
	case <-time.After(grace):
		_ = p.child.Stdout().Close()
		<-p.conn.Done()
	}
	code, sig := p.child.Wait()
	p.log.Debug().Int("pid", p.pid).Int("code", code).Str("signal", sig).Msg("acp: agent exited")
	close(p.gone)
}

func (p *proc) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// kill kills the process group now.
func (p *proc) kill() { _ = p.child.Kill() }

// stop ends the agent in bounded steps: stdin closed (ACP agents exit at
// its end), then SIGINT, SIGTERM and SIGKILL to its group, each after
// StopGrace; it returns once everything is reaped. Safe to call more than
// once, from any goroutine.
func (p *proc) stop() {
	p.stopOnce.Do(func() {
		p.stopIdle()
		grace := p.e.cfg.StopGrace
		_ = p.child.Stop(child.Ladder{Ask: func() { _ = p.child.Stdin().Close() },
			AskGrace: grace, InterruptGrace: grace, TerminateGrace: grace})
	})
	<-p.exited
	<-p.gone
}

func (p *proc) armIdle(d time.Duration, f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.idleT != nil {
		p.idleT.Stop()
	}
	p.idleT = time.AfterFunc(d, f)
}

func (p *proc) stopIdle() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.idleT != nil {
		p.idleT.Stop()
		p.idleT = nil
	}
}

func (p *proc) setTurn(t *Turn) {
	p.mu.Lock()
	p.turn = t
	p.mu.Unlock()
}

func (p *proc) current() *Turn {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.turn
}

// handle serves the agent's requests and notifications (the SDK calls
// it: notifications in order on one goroutine, each request on its own).
func (p *proc) handle(ctx context.Context, method string, params json.RawMessage) (any, *sdk.RequestError) {
	if p.inbound.Load() == nil {
		p.inbound.CompareAndSwap(nil, &ctx)
	}
	switch method {
	case sdk.ClientMethodSessionUpdate:
		n, err := DecodeUpdate(params)
		if err != nil {
			p.log.Warn().Err(err).Msg("acp: undecodable session/update ignored")
			return nil, nil
		}
		t := p.current()
		if t == nil || (n.SessionID != "" && n.SessionID != p.sessionIDOf(t)) {
			p.log.Debug().Str("kind", n.Update.Kind).Msg("acp: session/update outside a prompt ignored")
			return nil, nil
		}
		t.onUpdate(n.Update)
		return nil, nil
	case sdk.ClientMethodSessionRequestPermission:
		t := p.current()
		if t == nil {
			return permissionCancelled(), nil
		}
		return t.onPermission(ctx, params)
	}
	p.log.Info().Str("method", method).Msg("acp: agent request not served (method not found)")
	return nil, sdk.NewMethodNotFound(method)
}

func (p *proc) sessionIDOf(t *Turn) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sessionID
}

// logWriter takes the SDK's slog lines to the turn's logger, scrubbed.
type logWriter struct{ p *proc }

func (w logWriter) Write(b []byte) (int, error) {
	w.p.log.Debug().Str("sdk", w.p.child.Scrub(strings.TrimSpace(string(b)))).Msg("acp connection")
	return len(b), nil
}

// secretValues are the values of env's secret-looking variables.
type tapWriter struct {
	dir string
	f   func(dir string, b []byte)
}

func (t tapWriter) Write(b []byte) (int, error) {
	t.f(t.dir, append([]byte(nil), b...))
	return len(b), nil
}
