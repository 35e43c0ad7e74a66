package codex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/internal/child"
	"github.com/chirality/harness/internal/protect"
	"github.com/chirality/harness/internal/secrets"
	"github.com/chirality/harness/sandbox"
)

// Turn is one Codex turn: its child, its stream of events. Next, Event
// and Err are for one consumer goroutine; Interrupt, Kill and Close may be
// called from any goroutine at any time.
type Turn struct {
	eng *Engine
	req engine.Request
	log zerolog.Logger

	proc   *child.Process
	peer   *peer
	pid    int
	exited chan struct{} // closed once the child was reaped

	s *engine.Stream // ended when run returned

	scrub func(string) string // the child's secret values out (nil: none known)

	codexHome string // the child's $CODEX_HOME (~/.codex without it)

	mu          sync.Mutex
	turnID      string
	threadID    string
	interrupted bool
	killed      bool
	ctx         context.Context
	cancel      context.CancelFunc
	approvals   sync.WaitGroup
	started     chan struct{} // closed once turn/start answered with the turn's id
	startedOnce sync.Once     // the first Codex turn's (a plan review starts more)
}

func newTurn(e *Engine, req engine.Request) *Turn {
	ctx, cancel := context.WithCancel(context.Background())
	return &Turn{eng: e, req: req, exited: make(chan struct{}), s: engine.NewStream(64), ctx: ctx, cancel: cancel, started: make(chan struct{})}
}

// Pid is the child's process id.
func (t *Turn) Pid() int { return t.pid }

func (t *Turn) spawn(bin string, env []string, log *zerolog.Logger) error {
	if log != nil {
		t.log = log.With().Str("engine", Name).Str("session", t.req.SessionKey).Logger()
	} else {
		t.log = zerolog.Nop()
	}
	cfg := child.Config{Path: bin, Args: []string{"app-server"}, Env: env, Dir: t.req.Cwd,
		Secrets: secrets.SecretValues(env), Log: t.log, StderrSource: "codex stderr"}
	home := sandbox.Getenv(env, "CODEX_HOME")
	if home == "" {
		home = filepath.Join(sandbox.Home(env), ".codex")
	}
	t.codexHome = home
	if t.req.Sandbox {
		// Codex writes its threads, logs and caches under $CODEX_HOME
		// (~/.codex); its own sandbox, if any, runs inside this one.
		cfg.Sandbox = &sandbox.Spec{Protected: t.req.Protected,
			Writable: append(append(sandbox.InHome(sandbox.Home(env), ".cache/"), home+string(filepath.Separator)), t.req.SandboxWritable...),
			Net:      sandbox.NetOf(t.req, env, nil, modelURLs(env, home)...)}
	}
	p, err := child.Start(cfg)
	if err != nil {
		return err
	}
	t.proc, t.pid, t.scrub = p, p.Pid(), p.Scrub
	t.peer = newPeer(p.Stdout(), p.Stdin(), func(err error) { t.log.Warn().Err(err).Msg("codex: undecodable line") }, t.eng.onMsg)
	go func() {
		<-p.Exited()
		close(t.exited)
	}()
	go t.run()
	return nil
}

// Next advances to the next event; false after process:exit.
func (t *Turn) Next() bool { return t.s.Next() }

// Event returns the event Next advanced to.
func (t *Turn) Event() event.Event { return t.s.Event() }

// Err returns, after Next returned false, nil when the turn completed and
// an *engine.TurnError otherwise.
func (t *Turn) Err() error { return t.s.Err() }

// Interrupt asks Codex to stop the turn (turn/interrupt); the stream then
// ends with session:error kind interrupted.
func (t *Turn) Interrupt() error {
	t.mu.Lock()
	t.interrupted = true
	tid, th := t.turnID, t.threadID
	t.mu.Unlock()
	t.cancel() // pending approvals are denied
	select {
	case <-t.s.Done():
		return nil // the turn already ended
	default:
	}
	if tid != "" {
		if _, err := t.peer.call("turn/interrupt", map[string]any{"threadId": th, "turnId": tid}); err != nil {
			return t.Kill() // the connection is gone: stop the child instead
		}
	}
	return nil // else sent once turn/start answers
}

// Steer implements engine.Steerer with turn/steer: Codex adds message to
// the running turn (expectedTurnId pins it to this one), and the model's
// next request carries it. It waits for turn/start's answer first, and
// for Codex's answer to the steer; a turn that ended, or that Codex no
// longer runs, is engine.ErrNotRunning.
func (t *Turn) Steer(ctx context.Context, message string) error {
	select {
	case <-t.started:
	case <-t.s.Done():
		return engine.ErrNotRunning
	case <-ctx.Done():
		return ctx.Err()
	}
	t.mu.Lock()
	tid, th := t.turnID, t.threadID
	t.mu.Unlock()
	ch, err := t.peer.call("turn/steer", map[string]any{"threadId": th, "expectedTurnId": tid,
		"input": []any{map[string]any{"type": "text", "text": message}}})
	if err != nil {
		return fmt.Errorf("%w: %w", engine.ErrNotRunning, err)
	}
	select {
	case r, ok := <-ch:
		switch {
		case !ok:
			return engine.ErrNotRunning
		case r.Error != nil:
			// No active turn, or another one than expected: this turn is
			// over as far as Codex is concerned.
			return fmt.Errorf("%w: codex: %s", engine.ErrNotRunning, r.Error.Message)
		}
		return nil
	case <-t.s.Done():
		return engine.ErrNotRunning
	case <-ctx.Done():
		return ctx.Err()
	}
}

var _ engine.Steerer = (*Turn)(nil)

// Kill kills the child's process group now.
func (t *Turn) Kill() error {
	t.mu.Lock()
	t.killed = true
	t.mu.Unlock()
	t.cancel()
	if t.proc != nil {
		return t.proc.Kill() // nothing once reaped: the pid may belong to another process now
	}
	return nil
}

// Close kills the turn if it runs and discards the rest of its stream.
func (t *Turn) Close() error {
	select {
	case <-t.s.Done():
	default:
		_ = t.Kill()
	}
	t.s.Discard() // the turn is killed: an approval is declined at once
	return nil
}

func (t *Turn) emit(ev event.Event) {
	ev.SessionID = t.req.SessionKey
	t.s.Emit(ev)
}

// run drives the protocol and produces the stream.
func (t *Turn) run() {
	endErr := t.converse()
	// Stop the child: close stdin, grace, then kill the group (the
	// runner kills what is left of it once the child is reaped).
	_ = t.proc.Stop(child.Ladder{Ask: func() { _ = t.proc.Stdin().Close() }, AskGrace: t.eng.cfg.StopGrace,
		InterruptGrace: -1, TerminateGrace: -1})
	code, signal := t.proc.Wait() // closes stdout, should a stray process hold it
	for range t.peer.in {
	}
	t.cancel()
	t.approvals.Wait()
	end := engine.TurnEnd{Err: endErr, Code: code, Signal: signal, Release: func() { t.eng.remove(t) }}
	var te *engine.TurnError
	if errors.As(endErr, &te) {
		end.Error = te.SessionError(code, t.proc.StderrTail)
	}
	t.s.End(end.Report(t.emit))
}

func (t *Turn) endKind(def event.ErrorKind) event.ErrorKind {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.killed:
		return event.ErrorKilled
	case t.interrupted:
		return event.ErrorInterrupted
	}
	return def
}

// await waits for a call's response; a closed connection is an error.
func (t *Turn) await(ch <-chan Message, pending *[]Message) (Message, error) {
	for {
		select {
		case m, ok := <-ch:
			if !ok {
				return Message{}, io.ErrUnexpectedEOF
			}
			if m.Error != nil {
				return m, m.Error
			}
			return m, nil
		case m, ok := <-t.peer.in:
			if !ok {
				// the response may still be in ch
				select {
				case r, ok := <-ch:
					if ok {
						if r.Error != nil {
							return r, r.Error
						}
						return r, nil
					}
				default:
				}
				return Message{}, io.ErrUnexpectedEOF
			}
			*pending = append(*pending, m)
		}
	}
}

func (t *Turn) fail(kind event.ErrorKind, msg string) error {
	return &engine.TurnError{Kind: t.endKind(kind), Message: msg}
}

// converse runs the handshake, the thread and the turn; it returns nil
// when the turn completed.
func (t *Turn) converse() error {
	var early []Message
	// experimentalApi: turn/start's collaborationMode (plan mode, plan.go)
	// is an experimental field of 0.169.
	ch, err := t.peer.call("initialize", map[string]any{"clientInfo": map[string]any{"name": "harness", "title": "harness", "version": "1"},
		"capabilities": map[string]any{"experimentalApi": true}})
	if err != nil {
		return t.fail(event.ErrorStart, "initialize: "+err.Error())
	}
	initRes, err := t.await(ch, &early)
	if err != nil {
		return t.fail(event.ErrorStart, "initialize: "+err.Error())
	}
	if err := t.peer.notify("initialized", nil); err != nil {
		return t.fail(event.ErrorStart, "initialized: "+err.Error())
	}
	pol := PolicyFor(t.req.PermissionMode, t.req.Approver != nil)
	params := map[string]any{"cwd": t.req.Cwd, "approvalPolicy": pol.ApprovalPolicy, "sandbox": pol.Sandbox}
	if t.req.Model != "" {
		params["model"] = t.req.Model
	}
	if t.req.SystemPrompt != "" {
		params["baseInstructions"] = t.req.SystemPrompt
	}
	config, mcpStatus := threadConfig(t.eng.cfg.ThreadConfig, t.req.MCP, t.req.PermissionMode, t.req.AllowedTools)
	if !t.eng.cfg.TrustProject {
		config = untrustProject(config, t.req.Cwd) // never the project's own .codex/config.toml (trust.go)
	}
	config = withProtectedProfile(params, config, t.req.Cwd, withCodexHome(protect.Or(t.req.Protected, t.req.Cwd), t.codexHome, t.req.Cwd))
	if config != nil {
		params["config"] = config
	}
	method := "thread/start"
	switch {
	case t.req.Resume != "" && (t.req.Fork || t.req.ResumeAt != ""):
		// A copy of the thread, cut after the turn ResumeAt names (its
		// turn id, the checkpoint session:complete reported; a fork
		// keeps its source's turn ids): the original thread is never
		// changed. Its turns are not wanted back (a long thread's would
		// make one large line).
		method = "thread/fork"
		params["threadId"] = t.req.Resume
		params["excludeTurns"] = true
		if t.req.ResumeAt != "" {
			params["lastTurnId"] = t.req.ResumeAt
		}
	case t.req.Resume != "":
		method = "thread/resume"
		params["threadId"] = t.req.Resume
	}
	ch, err = t.peer.call(method, params)
	if err != nil {
		return t.fail(event.ErrorStart, method+": "+err.Error())
	}
	thRes, err := t.await(ch, &early)
	if err != nil {
		kind := event.ErrorStart
		if t.req.Resume != "" {
			kind = event.ErrorResumeNotFound
		}
		return t.fail(kind, method+": "+err.Error())
	}
	var th struct {
		Thread struct {
			ID    string `json:"id"`
			Model string `json:"model"`
			Cwd   string `json:"cwd"`
		} `json:"thread"`
		Model             string  `json:"model"`
		ReasoningEffort   *string `json:"reasoningEffort"`
		CollaborationMode *struct {
			Mode string `json:"mode"`
		} `json:"collaborationMode"` // thread/resume's only
	}
	_ = json.Unmarshal(thRes.Result, &th)
	var ini struct {
		UserAgent string `json:"userAgent"`
	}
	_ = json.Unmarshal(initRes.Result, &ini)
	version := ""
	if a, _, ok := strings.Cut(ini.UserAgent, " "); ok {
		_, version, _ = strings.Cut(a, "/")
	}
	model := th.Thread.Model
	if model == "" {
		model = th.Model
	}
	t.mu.Lock()
	t.threadID = th.Thread.ID
	t.mu.Unlock()
	mcpStartup(mcpStatus, early)
	early = t.awaitMCPStartup(mcpStatus, early)
	t.emit(event.Event{Type: event.TypeSessionInit, Init: &event.SessionInit{
		Model: model, CLIVersion: version, PermissionMode: t.req.PermissionMode, Cwd: t.req.Cwd,
		Engine: Name, ConversationID: th.Thread.ID, MCPServers: mcpStatus,
	}})

	threadMode := ""
	if th.CollaborationMode != nil {
		threadMode = th.CollaborationMode.Mode
	}
	collab := collabFor(t.req.PermissionMode, threadMode, method == "thread/fork")
	effort := t.req.Effort
	if effort == "" && th.ReasoningEffort != nil {
		effort = *th.ReasoningEffort
	}
	m := newMapper(t)
	message := t.req.Message
	for {
		start := map[string]any{"threadId": th.Thread.ID, "input": []any{map[string]any{"type": "text", "text": message}}}
		if t.req.Effort != "" {
			start["effort"] = t.req.Effort // the model's reasoning effort, for this turn and the thread's next ones
		}
		if collab != "" {
			start["collaborationMode"] = collaboration(collab, model, effort)
		}
		if err := t.codexTurn(m, th.Thread.ID, start, early); err != nil {
			return err
		}
		early = nil
		p := m.plan
		m.plan = nil
		if collab != collabPlan || p == nil {
			break
		}
		dec, ok, err := t.reviewPlan(m, p)
		if err != nil {
			return err
		}
		if t.ctx.Err() != nil {
			return t.fail(event.ErrorInterrupted, "the turn was interrupted while its plan waited for a decision")
		}
		if !ok || dec.NoAnswer || dec.Allow {
			// Approved: the core queues ImplementPrompt (the request's
			// Next) as the session's next turn. Not answered: only a
			// person sends Codex on.
			break
		}
		message = dec.Message // revised: plan again
	}
	m.complete()
	return nil
}

// codexTurn runs one Codex turn: turn/start with start, then the
// messages (early ones first) until turn/completed; nil when it
// completed.
func (t *Turn) codexTurn(m *mapper, threadID string, start map[string]any, early []Message) error {
	ch, err := t.peer.call("turn/start", start)
	if err != nil {
		return t.fail(event.ErrorProcess, "turn/start: "+err.Error())
	}
	for _, msg := range early {
		if done, err := m.handle(msg); done {
			return err
		}
	}
	for {
		select {
		case r, ok := <-ch:
			ch = nil
			if !ok {
				continue
			}
			if r.Error != nil {
				return t.fail(event.ErrorExecution, "turn/start: "+r.Error.Message)
			}
			var ts struct {
				Turn struct {
					ID string `json:"id"`
				} `json:"turn"`
			}
			_ = json.Unmarshal(r.Result, &ts)
			t.mu.Lock()
			t.turnID = ts.Turn.ID
			intr := t.interrupted
			t.mu.Unlock()
			t.startedOnce.Do(func() { close(t.started) })
			if intr {
				_, _ = t.peer.call("turn/interrupt", map[string]any{"threadId": threadID, "turnId": ts.Turn.ID})
			}
		case msg, ok := <-t.peer.in:
			if !ok {
				return t.fail(event.ErrorProcess, "codex app-server exited before the turn completed")
			}
			if done, err := m.handle(msg); done {
				return err
			}
		}
	}
}

// awaitMCPStartup holds the turn until every MCP server of status that is
// still pending has reported ready or failed (mcpServer/startupStatus/
// updated), for at most Config.MCPStartupWait, and returns early with the
// messages read meanwhile. Codex starts a thread's MCP servers in the
// background and sends the first model request with the tools of the
// servers ready by then: a turn started at once would, on a busy
// machine, be offered none of a server's tools. It stops waiting when
// the turn is interrupted or killed, or the connection ends (the caller
// then finds the end).
func (t *Turn) awaitMCPStartup(status []event.MCPServerStatus, early []Message) []Message {
	if !mcpPending(status) || t.eng.cfg.MCPStartupWait < 0 {
		return early
	}
	timer := time.NewTimer(t.eng.cfg.MCPStartupWait)
	defer timer.Stop()
	for mcpPending(status) {
		select {
		case m, ok := <-t.peer.in:
			if !ok {
				return early // the caller finds the end
			}
			early = append(early, m)
			mcpStartupMsg(status, m)
		case <-timer.C:
			t.log.Warn().Dur("waited", t.eng.cfg.MCPStartupWait).Msg("codex: MCP servers still starting; the turn starts without their tools")
			return early
		case <-t.ctx.Done():
			return early
		}
	}
	return early
}

// secretValues are the values of env's secret-looking variables (the
// credentials the child gets).

// Done is closed once the turn's child was reaped.
func (t *Turn) Done() <-chan struct{} { return t.exited }
