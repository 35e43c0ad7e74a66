package native

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/internal/atomicfile"
	"github.com/chirality/harness/internal/lazyre"
	"github.com/chirality/harness/internal/turns"
	"github.com/chirality/harness/permrule"
	"github.com/chirality/harness/tool"
)

// EngineConfig configures the native engine. The zero value reads the key
// and base URL from ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL.
type EngineConfig struct {
	// APIKey and BaseURL reach the Messages API ("" = the environment's).
	APIKey, BaseURL string
	// Model is the default model of sessions that name none ("" =
	// DefaultModel).
	Model string
	// Options are added to every request.
	Options []option.RequestOption
	// MaxRetries is Config.MaxRetries of every turn (0 = the SDK's 2,
	// negative = none); each retry is a session:retry event.
	MaxRetries int
	// Logger receives the engine's logs (nil = none).
	Logger *zerolog.Logger
}

// Engine is the native loop behind the engine seam (engine.Engine): a
// turn is one Prompt of a Harness whose history is loaded from, and saved
// to, Request.StateDir (one JSON file per conversation, written
// atomically after every turn, however it ended), so a conversation
// survives a restart. Its tools are package tool's (read, list_dir, grep),
// confined to Request.Cwd and selected by Request.Tools and
// DisallowedTools (Claude Code's names Read, Grep, LS and Glob select
// their native counterparts). They only read, so the engine never asks an
// Approver for them, as Claude Code does not for its read-only tools.
//
// MCP servers (Request.MCP): the engine is their client (go-sdk). A turn
// starts them together at its start (each within MCPStartTimeout), offers
// their tools as mcp__SERVER__TOOL beside its own (DisallowedTools can
// remove them) and calls them through the client; session:init reports
// each server connected or failed with why, and the turn runs without a
// failed one. MCP tools may change things, so each call takes the approval
// path first: a rule of AllowedTools (permrule) or bypassPermissions lets
// it run; else in a mode that asks, the Approver decides (asked through
// the turn's engine.Stream, so only once Next returned the call's
// tool:start and every event before it); else it is denied. The servers live as long as the turn: they are ended when it
// ends (stdin closed, killed after 2 s), on a goroutine Shutdown waits
// for, so none outlives the engine.
type Engine struct {
	cfg EngineConfig
	log zerolog.Logger

	turns turns.Registry[*Turn]
	wg    sync.WaitGroup

	// http carries every turn's model calls, so a turn reuses the
	// connection the one before it left idle. With a client per turn (the
	// SDK's default) every turn dialled and made a TLS handshake, and
	// left its connection idle for 90 s with 3 goroutines.
	http *http.Client
	// clientDefaults are the SDK's environment defaults, read once
	// (Config.clientDefaults).
	clientDefaults []option.RequestOption
}

var _ engine.Engine = (*Engine)(nil)

// NewEngine returns an Engine for cfg.
func NewEngine(cfg EngineConfig) *Engine {
	if cfg.APIKey == "" {
		cfg.APIKey = os.Getenv("ANTHROPIC_API_KEY")
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = os.Getenv("ANTHROPIC_BASE_URL")
	}
	e := &Engine{cfg: cfg, log: zerolog.Nop(), http: newHTTPClient(), clientDefaults: anthropic.DefaultClientOptions()}
	if cfg.Logger != nil {
		e.log = *cfg.Logger
	}
	return e
}

// Name is engine.Anthropic.
func (e *Engine) Name() string { return engine.Anthropic }

// Controls implements engine.Controller: a fork copies the history to a
// new conversation (Request.Fork), a cut keeps its first messages
// (Request.ResumeAt is a session:complete Checkpoint: the history's length
// after that turn). A cut without Fork truncates the conversation in
// place; with Fork the copy is cut and the original is left as it was.
func (e *Engine) Controls() engine.Controls { return engine.Controls{Fork: true, Rewind: true} }

var _ engine.Controller = (*Engine)(nil)

// Check: usable when a key or a base URL (a compatible endpoint, the
// demo's fake) is set.
func (e *Engine) Check(context.Context) engine.Status {
	st := engine.Status{Name: engine.Anthropic, Kind: engine.Anthropic, Version: "anthropic-sdk-go"}
	if e.cfg.APIKey == "" && e.cfg.BaseURL == "" {
		st.Reason = "no API key: set ANTHROPIC_API_KEY (or ANTHROPIC_BASE_URL for a compatible endpoint)"
		return st
	}
	st.Available = true
	return st
}

// claudeNames maps Claude Code's tool names onto the native tools, so a
// persona's tools: line selects among them.
var claudeNames = map[string]string{"read": "read", "grep": "grep", "ls": "list_dir", "glob": "list_dir", "list_dir": "list_dir"}

// toolsFor returns the native tools req selects.
func toolsFor(req engine.Request) []Tool {
	all := tool.All(req.Cwd)
	pick := func(names []string) map[string]bool {
		m := map[string]bool{}
		for _, n := range names {
			n = strings.ToLower(strings.TrimSpace(n))
			if n == "default" || n == "*" {
				for _, t := range all {
					m[t.Name()] = true
				}
			}
			if native, ok := claudeNames[n]; ok {
				m[native] = true
			}
		}
		return m
	}
	var allow map[string]bool
	if req.Tools != nil {
		allow = pick(req.Tools)
	}
	deny := pick(req.DisallowedTools)
	var out []Tool
	for _, t := range all {
		if (allow == nil || allow[t.Name()]) && !deny[t.Name()] {
			out = append(out, t)
		}
	}
	return out
}

var convPattern = lazyre.New(`^[A-Za-z0-9_-]{1,64}$`)

// StartTurn runs one Prompt for req on a goroutine of the engine. It fails
// with engine.ErrBusy, engine.ErrClosed, or engine.ErrUnavailable when no
// key is set. ctx bounds the start only (engine.Engine's rule): the turn
// runs on its own context, which Interrupt, Kill and Shutdown end.
func (e *Engine) StartTurn(ctx context.Context, req engine.Request) (engine.Turn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if e.cfg.APIKey == "" && e.cfg.BaseURL == "" {
		return nil, fmt.Errorf("%w: %s", engine.ErrUnavailable, e.Check(ctx).Reason)
	}
	if req.Resume != "" && !convPattern.MatchString(req.Resume) {
		return nil, fmt.Errorf("native: conversation id %q is not valid", req.Resume)
	}
	if (req.Fork || req.ResumeAt != "") && req.Resume == "" {
		return nil, fmt.Errorf("%w: native: fork or resume-at without a conversation to resume", engine.ErrUnsupported)
	}
	if req.ResumeAt != "" {
		if n, err := strconv.Atoi(req.ResumeAt); err != nil || n < 1 || strconv.Itoa(n) != req.ResumeAt {
			return nil, fmt.Errorf("%w: native: checkpoint %q is not a history length", engine.ErrUnsupported, req.ResumeAt)
		}
	}
	t := &Turn{e: e, req: req, s: engine.NewStream(streamBuffer)}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	if err := e.turns.Add(req.SessionKey, t); err != nil {
		t.cancel()
		return nil, err
	}
	e.wg.Add(1)
	go t.run()
	return t, nil
}

// streamBuffer is how many events a turn's stream holds for a reader
// that lags: past it the loop waits, and the model's stream waits in the
// socket's buffers. Each slot is an event.Event (216 bytes), allocated
// at every turn's start: 256 slots were 57 KB of a short turn's 200 KB,
// and a 10,000-delta answer costs the same CPU per delta with 64
// (BenchmarkDeltas10k), as Codex's turns have.
const streamBuffer = 64

// Shutdown refuses new turns, interrupts the running ones and waits; when
// ctx ends first the turns are killed (they end at once either way: a
// cancelled request returns). The engines' one turn registry
// (internal/turns) does it; the turns' goroutines are joined after.
func (e *Engine) Shutdown(ctx context.Context) error {
	err := e.turns.Shutdown(ctx)
	e.wg.Wait()
	e.http.CloseIdleConnections()
	return err
}

// modelResponseHeaderTimeout bounds the wait for a model call's response
// headers (not its streamed body), as the SDK's own client does.
const modelResponseHeaderTimeout = 10 * time.Minute

// newHTTPClient is the engine's client for the Messages API: what the
// SDK gives each client it makes (http.DefaultTransport's settings, its
// proxy from the environment included, and a response-header timeout),
// made once.
func newHTTPClient() *http.Client {
	t, ok := http.DefaultTransport.(*http.Transport)
	if !ok { // replaced by a wrapper: use it as it is
		return &http.Client{Transport: http.DefaultTransport}
	}
	t = t.Clone()
	t.ResponseHeaderTimeout = modelResponseHeaderTimeout
	return &http.Client{Transport: t}
}

// Turn is one native turn: its events come from the loop's handler
// through an engine.Stream (Next, Event, Err), which also orders an
// approval's question after the events before it (ask).
type Turn struct {
	e      *Engine
	req    engine.Request
	ctx    context.Context // cancelled by Interrupt, Kill and the turn's end: denies approvals
	cancel context.CancelFunc
	s      *engine.Stream // ended when run returned
	err    error          // how the turn ended, for End (set by finish)

	asks sync.WaitGroup // the Approver's questions started; run's end waits for them

	stopMu   sync.Mutex
	stopKind event.ErrorKind

	// Steering: early holds what was steered before the loop started
	// (its MCP servers starting); over is set when the loop returned.
	steerMu sync.Mutex
	loop    *Harness
	early   []string
	over    bool
}

var _ engine.Steerer = (*Turn)(nil)

// Steers implements engine.SteerCapable: the loop takes a steered
// message before its next model call.
func (e *Engine) Steers() bool { return true }

// Steer implements engine.Steerer: message joins the turn as the user's
// words, sent with the loop's next model call (Harness.Steer). It fails
// with engine.ErrNotRunning once the loop is ending.
func (t *Turn) Steer(_ context.Context, message string) error {
	t.steerMu.Lock()
	defer t.steerMu.Unlock()
	switch {
	case t.over || t.ctx.Err() != nil:
		return engine.ErrNotRunning
	case t.loop == nil:
		t.early = append(t.early, message)
		return nil
	}
	return t.loop.Steer(message) // engine.ErrNotRunning once it returns
}

// startLoop hands h what was steered before it existed.
func (t *Turn) startLoop(h *Harness) {
	t.steerMu.Lock()
	defer t.steerMu.Unlock()
	t.loop, h.steers, t.early = h, t.early, nil
}

// endLoop refuses steers from now on.
func (t *Turn) endLoop() {
	t.steerMu.Lock()
	defer t.steerMu.Unlock()
	t.over = true
}

// Next implements engine.Turn; it also starts an approval's question
// once the events before it were read.
func (t *Turn) Next() bool { return t.s.Next() }

// Event implements engine.Turn.
func (t *Turn) Event() event.Event { return t.s.Event() }

// Err implements engine.Turn: nil when the turn completed, an
// *engine.TurnError otherwise; final once Next returned false.
func (t *Turn) Err() error { return t.s.Err() }

// Done is closed once the turn's loop has ended.
func (t *Turn) Done() <-chan struct{} { return t.s.Done() }

// Interrupt cancels the turn's Prompt: it ends with session:error kind
// interrupted.
func (t *Turn) Interrupt() error { t.stop(event.ErrorInterrupted); return nil }

// Kill is Interrupt with kind killed (there is no process to kill).
func (t *Turn) Kill() error { t.stop(event.ErrorKilled); return nil }

// Close kills the turn if it runs and discards its events.
func (t *Turn) Close() error {
	t.Kill()
	t.s.Discard()
	return nil
}

func (t *Turn) stop(kind event.ErrorKind) {
	t.stopMu.Lock()
	if t.stopKind == "" || kind == event.ErrorKilled {
		t.stopKind = kind
	}
	t.stopMu.Unlock()
	t.cancel()
}

func (t *Turn) emit(ev event.Event) {
	ev.SessionID = t.req.SessionKey
	t.s.Emit(ev)
}

// ask puts an MCP tool's question to the Approver, as engine.Approver's
// contract wants: only once Next has returned every event before it (the
// call's tool:start above all), from a goroutine started by Next, so a
// slow consumer delays the question rather than being overtaken by it.
// ok is false when the turn ended or ctx was cancelled first (the call
// is then denied).
func (t *Turn) ask(ctx context.Context, q engine.ApprovalRequest) (engine.ApprovalDecision, bool) {
	ch := make(chan engine.ApprovalDecision, 1)
	t.asks.Add(1)
	queued := t.s.Defer(func() {
		if ctx.Err() != nil { // the call was given up while the question waited
			t.asks.Done()
			return
		}
		go func() {
			defer t.asks.Done()
			ch <- t.req.Approver.Ask(ctx, q)
		}()
	})
	if !queued {
		t.asks.Done()
		return engine.ApprovalDecision{}, false
	}
	select {
	case d := <-ch:
		return d, true
	case <-ctx.Done():
		return engine.ApprovalDecision{}, false
	}
}

// historyPath is where conversation conv of the request is kept.
func (t *Turn) historyPath(conv string) string {
	return filepath.Join(t.req.StateDir, "native-"+conv+".json")
}

func (t *Turn) run() {
	defer t.e.wg.Done()
	defer func() {
		t.endLoop() // a turn that never looped takes no steer either
		t.cancel()
		t.asks.Wait() // a question still queued is dropped by Next (ctx is cancelled)
		t.e.turns.Remove(t.req.SessionKey, t)
		t.s.End(t.err)
	}()
	start := time.Now()
	model := t.req.Model
	if model == "" {
		model = t.e.cfg.Model
	}
	tools := toolsFor(t.req)
	// The turn's MCP servers: started now, ended with the turn (on a
	// goroutine the engine's Shutdown waits for, so a server slow to exit
	// does not hold the turn's end).
	mcpStart := time.Now()
	mc := startMCP(t.ctx, t.req.MCP, t.req)
	if onMCPStarted != nil {
		onMCPStarted(time.Since(mcpStart))
	}
	defer func() {
		t.e.wg.Add(1)
		go func() {
			defer t.e.wg.Done()
			mc.close()
		}()
	}()
	for _, tl := range mc.tools {
		if mt, ok := tl.(*mcpTool); ok {
			mt.ask = t.ask
		}
		if !permrule.Allowed(t.req.DisallowedTools, tl.Name(), json.RawMessage(`{}`)) {
			tools = append(tools, tl)
		}
	}
	key := t.e.cfg.APIKey
	if key == "" {
		key = "unused" // a base URL without a key: a compatible endpoint that needs none
	}
	// The engine's client first: an Options' own WithHTTPClient wins.
	opts := append([]option.RequestOption{option.WithHTTPClient(t.e.http)}, t.e.cfg.Options...)
	h := NewHarness(Config{APIKey: key, Model: model, MaxTurns: t.req.MaxTurns, SystemPrompt: t.req.SystemPrompt,
		BaseURL: t.e.cfg.BaseURL, Options: opts, MaxRetries: t.e.cfg.MaxRetries, clientDefaults: t.e.clientDefaults}, tools, nil)
	conv := t.req.Resume
	if conv != "" {
		data, err := os.ReadFile(t.historyPath(conv))
		if err == nil && t.req.ResumeAt != "" {
			if data, err = cutHistory(data, t.req.ResumeAt); err != nil {
				// The point to cut at is gone, as a lost conversation is (the
				// core then starts a fresh one, and says so): a session is
				// never stuck on a cut no turn can take.
				t.finish(&event.SessionError{Error: "conversation " + conv + " cannot be cut there: " + err.Error(), Kind: event.ErrorResumeNotFound}, 0, 0)
				return
			}
		}
		if err == nil {
			err = h.LoadHistory(data)
		}
		if err != nil {
			msg := "conversation " + conv + " is not in " + t.req.StateDir
			if !errors.Is(err, os.ErrNotExist) {
				msg = "conversation " + conv + " could not be read: " + err.Error()
			}
			t.finish(&event.SessionError{Error: msg, Kind: event.ErrorResumeNotFound}, 0, 0)
			return
		}
		if t.req.Fork {
			conv = uuid.NewString() // the copy; the original's file is not written
		}
	} else {
		conv = uuid.NewString()
	}
	names := make([]string, len(tools))
	for i, tl := range tools {
		names[i] = tl.Name()
	}
	t.emit(event.Event{Type: event.TypeSessionInit, Init: &event.SessionInit{
		Model: h.Model(), Tools: names, PermissionMode: t.req.PermissionMode, Cwd: t.req.Cwd,
		Engine: engine.Anthropic, ConversationID: conv, MCPServers: mc.status,
	}})
	hd := &handler{t: t}
	h.handler = hd
	t.startLoop(h)
	err := h.Prompt(t.ctx, t.req.Message)
	t.endLoop()
	if serr := t.save(h, conv); serr != nil {
		t.e.log.Error().Str("session", t.req.SessionKey).Err(serr).Msg("native history could not be saved")
	}
	hd.flushText()
	if err == nil {
		t.err = engine.TurnEnd{Complete: &event.SessionComplete{
			CostUSD: hd.cost, Usage: hd.usageJSON(), NumTurns: hd.calls, DurationMS: time.Since(start).Milliseconds(),
			Checkpoint: strconv.Itoa(len(h.History()))}}.Report(t.emit)
		return
	}
	t.finish(t.errorOf(err, hd.cost), hd.cost, hd.calls)
}

// cutHistory keeps the first at messages of a saved history (at is a
// Checkpoint: a decimal length). A length beyond the history is an error:
// the checkpoint is not of this conversation.
func cutHistory(data []byte, at string) ([]byte, error) {
	n, err := strconv.Atoi(at)
	if err != nil {
		return nil, err
	}
	var msgs []json.RawMessage
	if err := json.Unmarshal(data, &msgs); err != nil {
		return nil, fmt.Errorf("native: history: %w", err)
	}
	if n < 1 || n > len(msgs) {
		return nil, fmt.Errorf("checkpoint %d is beyond the conversation's %d messages", n, len(msgs))
	}
	return json.Marshal(msgs[:n])
}

// errorOf classifies how Prompt failed.
func (t *Turn) errorOf(err error, cost float64) *event.SessionError {
	se := &event.SessionError{Error: err.Error(), Kind: event.ErrorExecution, CostUSD: cost}
	var apiErr *anthropic.Error
	switch {
	case errors.Is(err, context.Canceled):
		t.stopMu.Lock()
		se.Kind = t.stopKind
		t.stopMu.Unlock()
		if se.Kind == "" {
			se.Kind = event.ErrorInterrupted
		}
		se.Error = "interrupted"
		if se.Kind == event.ErrorKilled {
			se.Error = "killed"
		}
	case errors.Is(err, ErrMaxTurns):
		se.Kind = event.ErrorMaxTurns
	case errors.As(err, &apiErr):
		se.Kind, se.APIErrorStatus = event.ErrorAPI, apiErr.StatusCode
		if apiErr.StatusCode == 401 {
			se.Kind = event.ErrorNotLoggedIn
			se.Error = "the Messages API refused the key (401): set a valid ANTHROPIC_API_KEY"
		}
	}
	return se
}

// finish ends a turn that did not complete.
func (t *Turn) finish(se *event.SessionError, cost float64, calls int) {
	t.err = engine.TurnEnd{Error: se, Err: &engine.TurnError{Kind: se.Kind, Message: se.Error}}.Report(t.emit)
}

// save writes the conversation's history atomically.
func (t *Turn) save(h *Harness, conv string) error {
	if t.req.StateDir == "" {
		return nil
	}
	data, err := h.MarshalHistory()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(t.req.StateDir, 0o700); err != nil {
		return err
	}
	return atomicfile.Write(t.historyPath(conv), data, nil)
}

// handler turns the loop's callbacks into UI events.
type handler struct {
	t     *Turn
	text  strings.Builder // the text block being streamed
	cost  float64
	calls int
	usage Usage
}

func (h *handler) OnTextDelta(s string) {
	h.text.WriteString(s)
	h.t.emit(event.Event{Type: event.TypeChatDelta, Text: s})
}
func (h *handler) OnReasoningDelta(s string) {
	h.t.emit(event.Event{Type: event.TypeThinkingDelta, Text: s})
}
func (h *handler) OnText(text string) {
	h.text.Reset()
	h.t.emit(event.Event{Type: event.TypeChatComplete, Text: text})
}
func (h *handler) OnReasoning(string) {}
func (h *handler) OnToolCall(id, name string, input json.RawMessage) {
	h.t.emit(event.Event{Type: event.TypeToolStart, ToolStart: &event.ToolStart{ToolUseID: id, Name: name, Input: input}})
}
func (h *handler) OnToolResult(id, result string, isError bool) {
	h.t.emit(event.Event{Type: event.TypeToolResult, ToolResult: &event.ToolResult{ToolUseID: id, Content: result, IsError: isError}})
}
func (h *handler) OnRetry(r Retry) {
	h.t.emit(event.Event{Type: event.TypeSessionRetry, Retry: &event.SessionRetry{Attempt: r.Attempt, MaxRetries: r.MaxRetries,
		DelayMS: r.Delay.Milliseconds(), Error: event.RetryErrorText(r.Error, h.t.e.cfg.APIKey), APIErrorStatus: r.Status}})
}
func (h *handler) OnUsage(model string, u Usage) {
	h.calls++
	h.cost += Cost(model, u)
	h.usage.InputTokens += u.InputTokens
	h.usage.OutputTokens += u.OutputTokens
	h.usage.CacheReadTokens += u.CacheReadTokens
	h.usage.CacheWriteTokens += u.CacheWriteTokens
	// Each call's usage as it is known (the core prices it from the one
	// table, as Cost above does).
	h.t.emit(event.Event{Type: event.TypeUsageUpdate, Usage: &event.UsageUpdate{Model: model,
		InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens}})
}

// flushText completes a text block cut off by a cancel: its deltas were
// sent, so a chat:complete closes it.
func (h *handler) flushText() {
	if h.text.Len() > 0 {
		h.t.emit(event.Event{Type: event.TypeChatComplete, Text: h.text.String()})
		h.text.Reset()
	}
}

func (h *handler) usageJSON() json.RawMessage {
	b, _ := json.Marshal(map[string]int64{
		"input_tokens": h.usage.InputTokens, "output_tokens": h.usage.OutputTokens,
		"cache_read_input_tokens": h.usage.CacheReadTokens, "cache_creation_input_tokens": h.usage.CacheWriteTokens,
	})
	return b
}
