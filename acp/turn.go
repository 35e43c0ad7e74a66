package acp

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/rs/zerolog"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/internal/protect"
	"github.com/chirality/harness/permrule"
)

// Turn is one ACP turn: one session/prompt on the session's agent. Next,
// Event and Err are for one consumer goroutine; Interrupt, Kill and Close
// may be called from any goroutine at any time.
type Turn struct {
	e     *Engine
	req   engine.Request
	log   zerolog.Logger
	p     *proc
	start time.Time

	s *engine.Stream // ended when run returned

	mapMu sync.Mutex
	m     *Mapper

	ctx    context.Context // cancelled by Interrupt, Kill and the turn's end: denies approvals
	cancel context.CancelFunc

	mu          sync.Mutex
	sessionID   string
	prompting   bool
	interrupted bool
	killed      bool
	ending      bool // no more approvals start
	intrTimer   *time.Timer

	approvals sync.WaitGroup
	prompted  chan struct{} // closed once session/prompt is sent (Steer waits for it)
	// forkOnly: the turn sets the session up (session/fork) and ends
	// without a prompt (Engine.ForkNow).
	forkOnly bool
}

func newTurn(e *Engine, req engine.Request, log *zerolog.Logger) *Turn {
	ctx, cancel := context.WithCancel(context.Background())
	t := &Turn{e: e, req: req, s: engine.NewStream(256), m: NewMapper(), ctx: ctx, cancel: cancel, start: time.Now(), prompted: make(chan struct{})}
	if req.MCP != nil {
		names := make([]string, len(req.MCP.Servers))
		for i, srv := range req.MCP.Servers {
			names[i] = srv.Name
		}
		t.m.SetMCPServers(names)
	}
	if log != nil {
		t.log = log.With().Str("engine", e.cfg.Name).Str("session", req.SessionKey).Logger()
	} else {
		t.log = zerolog.Nop()
	}
	return t
}

func (t *Turn) begin(p *proc) {
	t.p = p
	go t.run()
}

// Pid is the process id of the agent running the turn.
func (t *Turn) Pid() int { return t.p.pid }

// Next advances to the next event; false after process:exit.
func (t *Turn) Next() bool { return t.s.Next() }

// Event returns the event Next advanced to.
func (t *Turn) Event() event.Event { return t.s.Event() }

// Err returns, after Next returned false, nil when the turn completed and
// an *engine.TurnError otherwise.
func (t *Turn) Err() error { return t.s.Err() }

// Interrupt sends session/cancel (at once, or as soon as the prompt is
// sent) and answers pending permission requests "cancelled"; the turn
// then ends with session:error kind interrupted. An agent that has not
// answered the prompt InterruptGrace later is stopped.
func (t *Turn) Interrupt() error {
	select {
	case <-t.s.Done():
		return nil
	default:
	}
	t.mu.Lock()
	already := t.interrupted
	t.interrupted = true
	sid, prompting := t.sessionID, t.prompting
	if !already {
		t.intrTimer = time.AfterFunc(t.e.cfg.InterruptGrace, func() {
			select {
			case <-t.s.Done():
			default:
				t.log.Warn().Msg("acp: the agent did not end the turn after session/cancel; stopping it")
				t.p.kill()
			}
		})
	}
	t.mu.Unlock()
	t.cancel()
	if prompting && !already {
		t.sendCancel(sid)
	}
	return nil
}

func (t *Turn) sendCancel(sid string) {
	if err := t.p.conn.SendNotification(context.Background(), sdk.AgentMethodSessionCancel, cancelParams{SessionID: sid}); err != nil {
		t.log.Debug().Err(err).Msg("acp: session/cancel not sent")
	}
}

// Kill kills the agent's process group now (the session's agent goes
// with its turn; the next turn starts another). It returns at once.
func (t *Turn) Kill() error {
	select {
	case <-t.s.Done():
		return nil
	default:
	}
	t.mu.Lock()
	t.killed = true
	t.mu.Unlock()
	t.cancel()
	t.p.kill()
	return nil
}

// Done is closed once the turn's stream ended (after process:exit was
// queued; the agent, when it went with the turn, reaped).
func (t *Turn) Done() <-chan struct{} { return t.s.Done() }

// Close kills the turn if it runs and discards the rest of its stream.
func (t *Turn) Close() error {
	select {
	case <-t.s.Done():
	default:
		_ = t.Kill()
	}
	t.s.Discard()
	return nil
}

// emit queues an event; after the stream closed it drops it.
func (t *Turn) emit(ev event.Event) {
	ev.SessionID = t.req.SessionKey
	t.s.Emit(ev)
}

func (t *Turn) onUpdate(u Update) {
	t.mapMu.Lock()
	defer t.mapMu.Unlock()
	for _, ev := range t.m.Handle(u) {
		t.emit(ev)
	}
	if !isMapped(u.Kind) {
		t.log.Debug().Str("kind", u.Kind).Msg("acp: session/update kind not shown")
	}
}

func isMapped(kind string) bool {
	switch kind {
	case KindAgentMessageChunk, KindAgentThoughtChunk, KindToolCall, KindToolCallUpdate, KindPlan, KindUsageUpdate:
		return true
	}
	return false
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

func (t *Turn) fail(kind event.ErrorKind, msg string) *engine.TurnError {
	return &engine.TurnError{Kind: t.endKind(kind), Message: msg}
}

func (t *Turn) isInterrupted() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.interrupted || t.killed
}

// run drives the turn and produces the stream.
func (t *Turn) run() {
	complete, te, subtype := t.converse()
	p := t.p
	p.setTurn(nil)
	t.cancel()
	t.mu.Lock()
	if t.intrTimer != nil {
		t.intrTimer.Stop()
	}
	t.ending = true
	t.mu.Unlock()

	// A turn that was killed, failed to set up, or whose agent died
	// takes the agent with it.
	connGone := false
	select {
	case <-p.conn.Done():
		connGone = true
	default:
	}
	// So does a prompt the agent cancelled by itself: Copilot 1.0.102
	// does when its ACP event stream falls behind its model stream
	// ("ACP event stream lagged and lost N event(s)" in its log), and
	// that session's stream is then over: it never answers another
	// prompt. The next turn starts a new agent (and loads the session).
	selfCancelled := te != nil && subtype == string(sdk.StopReasonCancelled) && !t.isInterrupted()
	if selfCancelled {
		t.log.Warn().Int("pid", p.pid).Msg("acp: the agent cancelled the turn by itself; stopping it, the next turn starts a new one")
	}
	procEnded := connGone || !p.alive() || selfCancelled || t.endKind("") == event.ErrorKilled || (te != nil && te.Kind == event.ErrorStart)
	if procEnded {
		t.e.dropProc(p)
		if p.alive() {
			p.stop()
		}
		<-p.gone
	}
	t.approvals.Wait()

	t.mapMu.Lock()
	for _, ev := range t.m.Flush() {
		t.emit(ev)
	}
	cost, _ := t.m.CostUSD()
	t.mapMu.Unlock()

	code, signal := 0, ""
	if procEnded {
		code, signal = p.child.ExitStatus()
	}
	end := engine.TurnEnd{Complete: complete, Code: code, Signal: signal, Release: func() {
		t.e.removeTurn(t) // the key is free once process:exit is read
		if !procEnded {
			t.e.idle(p)
		}
	}}
	if te != nil { // (te is a typed pointer)
		end.Complete, end.Err = nil, te
		end.Error = te.SessionError(code, p.child.StderrTail)
		end.Error.Subtype, end.Error.CostUSD = subtype, cost
	}
	t.s.End(end.Report(t.emit))
}

// sessionMeta is the _meta of the turn's session/new or session/load
// (Config.SessionMeta), nil when the engine sets none.
func (t *Turn) sessionMeta() map[string]any {
	if t.e.cfg.SessionMeta == nil {
		return nil
	}
	return t.e.cfg.SessionMeta(t.req)
}

// converse sets the session up and runs the prompt. It returns the
// completion, or how the turn failed (and a subtype: the stop reason).
func (t *Turn) converse() (*event.SessionComplete, *engine.TurnError, string) {
	p := t.p
	if !p.initialized {
		var ini initializeResult
		err := call(p.conn, sdk.AgentMethodInitialize, initializeParams{
			ProtocolVersion: ProtocolVersion,
			ClientInfo:      implementation{Name: "harness", Title: "harness", Version: clientVersion},
		}, &ini)
		if err != nil {
			return nil, t.fail(event.ErrorStart, "initialize: "+rpcMessage(err)), ""
		}
		if ini.ProtocolVersion != ProtocolVersion {
			return nil, t.fail(event.ErrorStart, "the agent speaks ACP protocol version "+itoa(ini.ProtocolVersion)+", the client 1"), ""
		}
		p.initialized = true
		p.info.LoadSession = ini.AgentCapabilities.LoadSession
		p.info.Fork = ini.forks()
		p.info.MCP = ini.AgentCapabilities.MCP
		t.e.learnForks(p.info.Fork)
		p.info.Steer = ini.Meta.Steering.Supported
		t.e.learnSteer(p.info.Steer)
		if ini.AgentInfo != nil {
			p.info.Name, p.info.Version = ini.AgentInfo.Name, ini.AgentInfo.Version
		}
	}
	var notice string
	resume := t.req.Resume
	// The servers go with every session the agent sets up for us; a
	// session it keeps between turns keeps the servers it got.
	mcp, mcpStatus := mcpServers(t.req.MCP, p.info.MCP, t.e.cfg.NoStdioMCP)
	if t.req.Fork && resume != "" {
		// A copy of the conversation in a new ACP session; the
		// original is left as it was.
		if !p.info.Fork {
			return nil, t.fail(event.ErrorStart, t.e.cfg.Name+" does not offer session/fork (its initialize answer does not advertise sessionCapabilities.fork), so its conversation cannot be forked"), ""
		}
		var res sessionResult
		if err := call(p.conn, sdk.AgentMethodSessionFork, forkSessionParams{SessionID: resume, Cwd: t.req.Cwd, McpServers: mcp, Meta: t.sessionMeta()}, &res); err != nil {
			if !p.alive() {
				return nil, t.fail(event.ErrorStart, "session/fork: "+rpcMessage(err)), ""
			}
			return nil, t.fail(event.ErrorResumeNotFound, "session/fork: "+rpcMessage(err)), ""
		}
		if res.SessionID == "" {
			return nil, t.fail(event.ErrorStart, "session/fork: no sessionId in the answer"), ""
		}
		t.log.Info().Str("acpSession", res.SessionID).Str("from", resume).Msg("acp: session forked")
		p.sessionID, p.setup, p.prompted = res.SessionID, res.sessionSetup, true // a continuation: no preamble
	} else if p.sessionID == "" || (resume != "" && resume != p.sessionID) {
		loaded := false
		if resume != "" && p.info.LoadSession {
			var res sessionSetup
			err := call(p.conn, sdk.AgentMethodSessionLoad, loadSessionParams{SessionID: resume, Cwd: t.req.Cwd, McpServers: mcp, Meta: t.sessionMeta()}, &res)
			if err == nil {
				p.sessionID, p.setup, p.prompted, loaded = resume, res, true, true
				t.log.Info().Str("acpSession", resume).Msg("acp: session loaded")
			} else {
				if !p.alive() {
					return nil, t.fail(event.ErrorStart, "session/load: "+rpcMessage(err)), ""
				}
				t.log.Warn().Str("acpSession", resume).Str("error", rpcMessage(err)).Msg("acp: session/load failed; a new session starts without the conversation's context")
				notice = "[harness] " + t.e.cfg.Name + " could not load the previous conversation; this turn starts a new one without its context.\n"
			}
		} else if resume != "" {
			t.log.Warn().Str("acpSession", resume).Msg("acp: the agent cannot load sessions; a new session starts without the conversation's context")
			notice = "[harness] " + t.e.cfg.Name + " cannot resume a conversation after its process ended; this turn starts a new one without its context.\n"
		}
		if !loaded {
			var res sessionResult
			if err := call(p.conn, sdk.AgentMethodSessionNew, newSessionParams{Cwd: t.req.Cwd, McpServers: mcp, Meta: t.sessionMeta()}, &res); err != nil {
				return nil, t.fail(event.ErrorStart, "session/new: "+rpcMessage(err)), ""
			}
			if res.SessionID == "" {
				return nil, t.fail(event.ErrorStart, "session/new: no sessionId in the answer"), ""
			}
			p.sessionID, p.setup, p.prompted = res.SessionID, res.sessionSetup, false
		}
	}
	// Every turn: a model or permission mode switched between turns
	// reaches the session the agent keeps (nothing is sent when they
	// are the session's already).
	t.configure()
	t.mu.Lock()
	t.sessionID = p.sessionID
	t.mu.Unlock()

	_, model, _ := p.setup.modelOption("")
	t.emit(event.Event{Type: event.TypeSessionInit, Init: &event.SessionInit{
		Model: model, CLIVersion: p.info.Version, PermissionMode: t.req.PermissionMode, Cwd: t.req.Cwd,
		Engine: t.e.cfg.Name, ConversationID: p.sessionID, MCPServers: mcpStatus,
	}})
	if notice != "" {
		t.emit(event.Event{Type: event.TypeThinkingDelta, Text: notice})
	}
	if t.forkOnly {
		// Engine.ForkNow: the copy is made and kept by this agent for the
		// key's next turn; nothing is prompted.
		return &event.SessionComplete{Usage: json.RawMessage("{}")}, nil, ""
	}
	blocks := []textBlock{{Type: "text", Text: t.req.Message}}
	switch {
	case t.req.SystemPrompt == "":
	case !p.prompted:
		blocks = append([]textBlock{{Type: "text", Text: Preamble(t.req.SystemPrompt)}}, blocks...)
	case t.req.PromptChanged:
		// A persona switched between turns: the session has the old
		// one's preamble in its history; the new one follows it.
		blocks = append([]textBlock{{Type: "text", Text: SwitchPreamble(t.req.SystemPrompt)}}, blocks...)
	}
	// Deciding to prompt and saying so is one step under t.mu: an
	// Interrupt either comes before it (no prompt is sent, the agent
	// stays idle for the session's next turn) or after it (Interrupt
	// sees prompting and sends session/cancel, and InterruptGrace
	// later stops an agent that still has not answered). Checked apart,
	// an Interrupt between the check and the flag was left to a second
	// check that could miss it.
	t.mu.Lock()
	if t.interrupted || t.killed {
		t.mu.Unlock()
		return nil, t.fail(event.ErrorInterrupted, "interrupted before the prompt was sent"), ""
	}
	t.prompting = true
	t.mu.Unlock()
	close(t.prompted)
	p.prompted = true // sent once, never retried
	p.setTurn(t)
	resCh := make(chan struct {
		res promptResult
		err error
	}, 1)
	go func() {
		var r promptResult
		err := call(p.conn, sdk.AgentMethodSessionPrompt, promptParams{SessionID: p.sessionID, Prompt: blocks}, &r)
		resCh <- struct {
			res promptResult
			err error
		}{r, err}
	}()
	r := <-resCh
	if r.err != nil {
		gone := !p.alive()
		select {
		case <-p.conn.Done():
			gone = true
		default:
		}
		if gone {
			p.drained() // what it said before it went is the turn's, before the error
			return nil, t.fail(event.ErrorProcess, t.e.cfg.Name+" exited before the turn completed"), ""
		}
		return nil, t.fail(event.ErrorAPI, "session/prompt: "+rpcMessage(r.err)), ""
	}
	reason := r.res.StopReason
	switch reason {
	case string(sdk.StopReasonEndTurn):
		if t.isInterrupted() {
			// Interrupted, and the agent stopped, but says end_turn
			// (OpenCode 1.18 does): the turn the user cancelled ends
			// interrupted, as the spec's cancelled would.
			return nil, t.fail(event.ErrorInterrupted, "the turn was cancelled"), reason
		}
		c := &event.SessionComplete{Usage: r.res.Usage, NumTurns: 1, DurationMS: time.Since(t.start).Milliseconds()}
		t.mapMu.Lock()
		c.CostUSD, _ = t.m.CostUSD()
		t.mapMu.Unlock()
		if c.Usage == nil {
			c.Usage = json.RawMessage("{}")
		}
		if u, ok := turnUsage(c.Usage); ok {
			t.emit(event.Event{Type: event.TypeUsageUpdate, Usage: u})
		}
		return c, nil, ""
	case string(sdk.StopReasonCancelled):
		if !t.isInterrupted() {
			// Not asked to: Copilot 1.0.102 now and then cancels a long
			// answer by itself.
			return nil, t.fail(event.ErrorExecution, "the agent cancelled the turn by itself"), reason
		}
		return nil, &engine.TurnError{Kind: t.endKind(event.ErrorInterrupted), Message: "the turn was cancelled"}, reason
	case string(sdk.StopReasonMaxTurnRequests):
		return nil, t.fail(event.ErrorMaxTurns, "the agent reached its maximum of model requests"), reason
	case string(sdk.StopReasonMaxTokens):
		return nil, t.fail(event.ErrorExecution, "the agent reached its maximum of tokens"), reason
	case string(sdk.StopReasonRefusal):
		return nil, t.fail(event.ErrorExecution, "the agent refused to go on"), reason
	}
	return nil, t.fail(event.ErrorExecution, "the turn stopped: "+reason), reason
}

// configure sets the new session's mode (from the permission mode) and
// model (Request.Model, when the agent offers it). Failures are logged:
// the turn goes on with the agent's own.
func (t *Turn) configure() {
	p := t.p
	if m := p.setup.modeFor(t.req.PermissionMode); m != "" && m != p.setup.currentMode() {
		if err := call(p.conn, sdk.AgentMethodSessionSetMode, setModeParams{SessionID: p.sessionID, ModeID: m}, nil); err != nil {
			t.log.Warn().Str("mode", m).Str("error", rpcMessage(err)).Msg("acp: session/set_mode failed")
		} else {
			p.setup.Modes.CurrentModeID = m
		}
	} else if id, v := p.setup.modeOption(t.req.PermissionMode); id != "" {
		if err := call(p.conn, sdk.AgentMethodSessionSetConfigOption, setConfigParams{SessionID: p.sessionID, ConfigID: id, Value: v}, nil); err != nil {
			t.log.Warn().Str("mode", v).Str("error", rpcMessage(err)).Msg("acp: setting the mode failed")
		} else {
			p.setup.setCurrent(id, v)
		}
	}
	if t.req.Model == "" {
		return
	}
	id, cur, offered := p.setup.modelOption(t.req.Model)
	switch {
	case !offered:
		t.log.Warn().Str("model", t.req.Model).Msg("acp: the agent does not offer this model; its own is used")
	case cur != t.req.Model:
		if err := call(p.conn, sdk.AgentMethodSessionSetConfigOption, setConfigParams{SessionID: p.sessionID, ConfigID: id, Value: t.req.Model}, nil); err != nil {
			t.log.Warn().Str("model", t.req.Model).Str("error", rpcMessage(err)).Msg("acp: setting the model failed")
			return
		}
		p.setup.setCurrent(id, t.req.Model)
	}
}

// clientVersion is sent as clientInfo.version.
const clientVersion = "1"

func rpcMessage(err error) string {
	var re *sdk.RequestError
	if errors.As(err, &re) {
		msg := re.Message
		if d, ok := re.Data.(map[string]any); ok {
			if s, ok := d["error"].(string); ok && s != "" {
				msg += ": " + s
			}
		}
		return msg
	}
	return err.Error()
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// permissionRequest is session/request_permission's params.
type permissionRequest struct {
	SessionID string          `json:"sessionId"`
	ToolCall  json.RawMessage `json:"toolCall"`
	Options   []struct {
		OptionID string `json:"optionId"`
		Kind     string `json:"kind"`
		Name     string `json:"name"`
	} `json:"options"`
}

func permissionCancelled() any {
	return map[string]any{"outcome": map[string]any{"outcome": "cancelled"}}
}

func permissionSelected(id string) any {
	return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": id}}
}

// onPermission answers session/request_permission (the package doc's
// policy table).
func (t *Turn) onPermission(ctx context.Context, params json.RawMessage) (any, *sdk.RequestError) {
	var pr permissionRequest
	if err := json.Unmarshal(params, &pr); err != nil {
		return nil, sdk.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	u := toolCallUpdate(pr.ToolCall)
	t.mapMu.Lock()
	for _, ev := range t.m.EnsureStarted(u) {
		t.emit(ev)
	}
	name := t.m.ToolName(u.ToolCallID)
	input := t.m.ToolInput(u.ToolCallID)
	t.mapMu.Unlock()
	if u.RawInput != nil && u.RawInput[0] == '{' {
		input = u.RawInput
	}
	if t.ctx.Err() != nil {
		return permissionCancelled(), nil
	}
	mode := t.req.PermissionMode
	var allow bool
	switch {
	case mode == "bypassPermissions":
		allow = true
	case engine.AsksApproval(mode) && t.req.Approver != nil:
		dec, ok := t.ask(ctx, engine.ApprovalRequest{ToolUseID: u.ToolCallID, ToolName: name, Input: input})
		if !ok {
			return permissionCancelled(), nil
		}
		// dec.Always is not passed on: the agent's allow_always would
		// remember a rule of its own making, wider than the use the
		// person saw; the core remembers the exact use and answers the
		// agent's next request by it.
		allow = dec.Allow
	default:
		// nobody is asked: a write to a protected path is denied whatever
		// a rule says (package internal/protect)
		_, protected := protect.Write(protect.Or(t.req.Protected, t.req.Cwd), t.req.Cwd, name, withLocations(input, pr.ToolCall))
		allow = !protected && permrule.Allowed(t.req.AllowedTools, name, input)
	}
	if t.ctx.Err() != nil {
		return permissionCancelled(), nil
	}
	kinds := []string{"reject_once", "reject_always"}
	if allow {
		// never allow_always: the agent would remember a rule of its own
		// making, wider than this use (none offered: cancelled, not run)
		kinds = []string{"allow_once"}
	}
	for _, k := range kinds {
		for _, o := range pr.Options {
			if o.Kind == k {
				t.log.Info().Str("tool", name).Str("option", o.OptionID).Msg("acp: permission answered")
				return permissionSelected(o.OptionID), nil
			}
		}
	}
	t.log.Warn().Str("tool", name).Bool("allow", allow).Msg("acp: no permission option of the wanted kind; answered cancelled")
	return permissionCancelled(), nil
}

// ask puts the question to the core's Approver from a goroutine of its
// own, started by Next once every event before it was read. ok is false
// when the turn was cancelled first.
func (t *Turn) ask(ctx context.Context, q engine.ApprovalRequest) (engine.ApprovalDecision, bool) {
	ch := make(chan engine.ApprovalDecision, 1)
	t.mu.Lock()
	if t.ending {
		t.mu.Unlock()
		return engine.ApprovalDecision{}, false
	}
	t.approvals.Add(1)
	t.mu.Unlock()
	started := t.s.Defer(func() {
		go func() {
			defer t.approvals.Done()
			ch <- t.req.Approver.Ask(t.ctx, q)
		}()
	})
	if !started {
		t.approvals.Done()
		return engine.ApprovalDecision{}, false
	}
	select {
	case d := <-ch:
		return d, true
	case <-t.ctx.Done():
		return engine.ApprovalDecision{}, false
	case <-ctx.Done():
		return engine.ApprovalDecision{}, false
	}
}

// toolCallUpdate reads a permission request's toolCall (a ToolCallUpdate)
// as an Update.
func toolCallUpdate(raw json.RawMessage) Update {
	w := decodeLenient(raw)
	return Update{
		Kind: KindToolCallUpdate, ToolCallID: w.ToolCallID, Title: w.Title, ToolKind: w.Kind, Status: w.Status,
		ToolName: w.Meta.ClaudeCode.ToolName, RawInput: nonNull(w.RawInput),
	}
}

// withLocations is a tool call's input with the call's locations (the
// files it touches, ACP's toolCall.locations) added as "locations", for
// protect.Write: an edit's input may name its file in a key of the
// agent's own.
func withLocations(input, toolCall json.RawMessage) json.RawMessage {
	var tc struct {
		Locations json.RawMessage `json:"locations"`
	}
	if json.Unmarshal(toolCall, &tc) != nil || len(tc.Locations) == 0 || string(tc.Locations) == "null" {
		return input
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(input, &m) != nil || m == nil {
		m = map[string]json.RawMessage{}
	}
	m["locations"] = tc.Locations
	b, err := json.Marshal(m)
	if err != nil {
		return input
	}
	return b
}
