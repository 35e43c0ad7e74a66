package codex

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/chirality/harness/claudecode"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/internal/procgroup"
)

// Turn is one Codex turn: its child, its stream of events. Next, Event
// and Err are for one consumer goroutine; Interrupt, Kill and Close may be
// called from any goroutine at any time.
type Turn struct {
	eng *Engine
	req engine.Request
	log zerolog.Logger

	cmd    *exec.Cmd
	peer   *peer
	stdin  io.Closer
	pid    int
	exited chan struct{} // closed once the child was reaped
	ps     atomic.Pointer[exitState]

	out  chan item
	cur  event.Event
	err  error
	done chan struct{} // closed when run returned

	stderrMu   sync.Mutex
	stderrTail []string
	secrets    []string // values scrubbed from stderr lines

	mu          sync.Mutex
	turnID      string
	threadID    string
	interrupted bool
	killed      bool
	ctx         context.Context
	cancel      context.CancelFunc
	approvals   sync.WaitGroup
}

type exitState struct {
	code   int
	signal string
}

// item is one entry of the stream: an event, or a function Next runs once
// every earlier event was returned (an approval's start).
type item struct {
	ev    event.Event
	after func()
}

func newTurn(e *Engine, req engine.Request) *Turn {
	ctx, cancel := context.WithCancel(context.Background())
	return &Turn{eng: e, req: req, exited: make(chan struct{}), out: make(chan item, 64), done: make(chan struct{}), ctx: ctx, cancel: cancel}
}

// Pid is the child's process id.
func (t *Turn) Pid() int { return t.pid }

func (t *Turn) spawn(ctx context.Context, bin string, env []string, log *zerolog.Logger) error {
	if log != nil {
		t.log = log.With().Str("engine", Name).Str("session", t.req.SessionKey).Logger()
	} else {
		t.log = zerolog.Nop()
	}
	cmd := exec.Command(bin, "app-server")
	cmd.Env = env
	t.secrets = secretValues(env)
	cmd.Dir = t.req.Cwd
	procgroup.Set(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	t.cmd, t.stdin, t.pid = cmd, stdin, cmd.Process.Pid
	t.peer = newPeer(stdout, stdin, func(err error) { t.log.Warn().Err(err).Msg("codex: undecodable line") }, t.eng.onMsg)
	stderrDone := make(chan struct{})
	go t.readStderr(stderr, stderrDone)
	go func() {
		<-stderrDone
		_ = cmd.Wait()
		code, sig := procgroup.ExitStatus(cmd.ProcessState)
		t.ps.Store(&exitState{code, sig})
		close(t.exited)
	}()
	go func() {
		select {
		case <-ctx.Done():
			_ = t.Kill()
		case <-t.done:
		}
	}()
	go t.run()
	return nil
}

// scrub replaces the values of the child's credentials and of withheld
// variables in a line of its stderr.
func (t *Turn) scrub(line string) string {
	for _, v := range t.secrets {
		if len(v) >= 4 {
			line = strings.ReplaceAll(line, v, "[REDACTED]")
		}
	}
	return line
}

func (t *Turn) readStderr(r io.Reader, done chan struct{}) {
	defer close(done)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := t.scrub(sc.Text())
		t.log.Debug().Str("stderr", line).Msg("codex stderr")
		t.stderrMu.Lock()
		t.stderrTail = append(t.stderrTail, line)
		if len(t.stderrTail) > 20 {
			t.stderrTail = t.stderrTail[1:]
		}
		t.stderrMu.Unlock()
	}
	_, _ = io.Copy(io.Discard, r)
}

// Next advances to the next event; false after process:exit.
func (t *Turn) Next() bool {
	for {
		it, ok := <-t.out
		if !ok {
			return false
		}
		if it.after != nil {
			it.after()
			continue
		}
		t.cur = it.ev
		return true
	}
}

// Event returns the event Next advanced to.
func (t *Turn) Event() event.Event { return t.cur }

// Err returns, after Next returned false, nil when the turn completed and
// an *engine.TurnError otherwise.
func (t *Turn) Err() error {
	select {
	case <-t.done:
		return t.err
	default:
		return nil
	}
}

// Interrupt asks Codex to stop the turn (turn/interrupt); the stream then
// ends with session:error kind interrupted.
func (t *Turn) Interrupt() error {
	t.mu.Lock()
	t.interrupted = true
	tid, th := t.turnID, t.threadID
	t.mu.Unlock()
	t.cancel() // pending approvals are denied
	select {
	case <-t.done:
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

// Kill kills the child's process group now.
func (t *Turn) Kill() error {
	t.mu.Lock()
	t.killed = true
	t.mu.Unlock()
	t.cancel()
	select {
	case <-t.exited:
		return nil // reaped: the pid may belong to another process now
	default:
	}
	if t.pid > 0 {
		return procgroup.Signal(t.pid, procgroup.Kill)
	}
	return nil
}

// Close kills the turn if it runs and discards the rest of its stream.
func (t *Turn) Close() error {
	select {
	case <-t.done:
	default:
		_ = t.Kill()
	}
	for it := range t.out {
		if it.after != nil {
			it.after() // the turn is killed: an approval is declined at once
		}
	}
	<-t.done
	return nil
}

func (t *Turn) emit(ev event.Event) {
	ev.SessionID = t.req.SessionKey
	t.out <- item{ev: ev}
}

// run drives the protocol and produces the stream.
func (t *Turn) run() {
	defer close(t.out) // after done: Err is final once Next returned false
	defer close(t.done)
	endErr := t.converse()
	// Stop the child: close stdin, grace, then kill the group.
	_ = t.stdin.Close()
	select {
	case <-t.exited:
	case <-time.After(t.eng.cfg.StopGrace):
		_ = procgroup.Signal(t.pid, procgroup.Kill)
		<-t.exited
	}
	_ = procgroup.Signal(t.pid, procgroup.Kill) // the tools it started, if any are left
	for range t.peer.in {
	}
	t.cancel()
	t.approvals.Wait()
	ps := t.ps.Load()
	code := ps.code
	if endErr != nil {
		t.err = endErr
		var te *engine.TurnError
		if errors.As(endErr, &te) {
			se := &event.SessionError{Error: te.Message, Kind: te.Kind}
			if te.Kind == event.ErrorProcess || te.Kind == event.ErrorStart {
				c := code
				se.ExitCode = &c
				se.StderrTail = t.tail()
			}
			t.emit(event.Event{Type: event.TypeSessionError, Error: se})
		}
	}
	t.eng.remove(t) // the key is free once process:exit is read
	t.emit(event.Event{Type: event.TypeProcessExit, Exit: &event.ProcessExit{Code: code, Signal: ps.signal}})
}

func (t *Turn) tail() string {
	t.stderrMu.Lock()
	defer t.stderrMu.Unlock()
	s := strings.Join(t.stderrTail, "\n")
	if len(s) > 2000 {
		s = s[len(s)-2000:]
	}
	return s
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
	ch, err := t.peer.call("initialize", map[string]any{"clientInfo": map[string]any{"name": "harness", "title": "harness", "version": "1"}})
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
	if len(t.eng.cfg.ThreadConfig) > 0 {
		params["config"] = t.eng.cfg.ThreadConfig
	}
	method := "thread/start"
	if t.req.Resume != "" {
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
		Model string `json:"model"`
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
	t.emit(event.Event{Type: event.TypeSessionInit, Init: &event.SessionInit{
		Model: model, CLIVersion: version, PermissionMode: t.req.PermissionMode, Cwd: t.req.Cwd,
		Engine: Name, EngineSessionID: th.Thread.ID,
	}})

	ch, err = t.peer.call("turn/start", map[string]any{"threadId": th.Thread.ID, "input": []any{map[string]any{"type": "text", "text": t.req.Message}}})
	if err != nil {
		return t.fail(event.ErrorProcess, "turn/start: "+err.Error())
	}
	m := newMapper(t)
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
			if intr {
				_, _ = t.peer.call("turn/interrupt", map[string]any{"threadId": th.Thread.ID, "turnId": ts.Turn.ID})
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

// secretValues are the values of env's secret-looking variables (the
// credentials the child gets).
func secretValues(env []string) []string {
	var out []string
	for _, kv := range env {
		name, v, ok := strings.Cut(kv, "=")
		if ok && v != "" && claudecode.IsSecretEnvName(name) {
			out = append(out, v)
		}
	}
	return out
}
