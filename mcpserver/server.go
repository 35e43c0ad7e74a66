package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chirality/harness"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/event/fold"
	"github.com/chirality/harness/session"
)

// Limits on what a client sends and on what a tool returns. A string
// over its bound is a tool error naming the field and the limit; nothing
// a client sends is echoed back whole.
const (
	// MaxMessageBytes bounds run_turn's message.
	MaxMessageBytes = 1 << 20
	// MaxPathBytes bounds create_session's and list_sessions'
	// projectRoot.
	MaxPathBytes = 4 << 10
	// MaxNameBytes bounds every other string: sessionId, persona,
	// engine, model.
	MaxNameBytes = 256
	// MaxTranscriptEntries bounds get_transcript's answer: the last
	// entries are kept (Transcript.Truncated says so).
	MaxTranscriptEntries = 1000
	// MaxEntryBytes bounds each transcript entry's text and a tool call's
	// input or result in an answer.
	MaxEntryBytes = 16 << 10
)

// Defaults of Options.
const (
	DefaultTurnTimeout   = 30 * time.Minute
	DefaultElicitTimeout = 5 * time.Minute
	// DefaultGrace is how long an interrupted turn (client gone, deadline
	// passed) gets to stop before it is killed.
	DefaultGrace = 5 * time.Second
)

// Options configure New.
type Options struct {
	// Name and Version are what initialize reports ("" = "harness", "dev").
	Name, Version string
	// Mode is the mode of sessions create_session makes ("" = workbench).
	Mode string
	// TurnTimeout bounds one run_turn (0 = DefaultTurnTimeout): past it
	// the turn is interrupted, and killed DefaultGrace later.
	TurnTimeout time.Duration
	// ElicitTimeout bounds one approval question put to the client (0 =
	// DefaultElicitTimeout); an unanswered question is denied. The
	// harness's own Config.ApprovalTimeout bounds it too.
	ElicitTimeout time.Duration
}

// Server is the harness as an MCP server: the six tools on one Harness.
// It is safe for concurrent use by any number of MCP sessions (stdio,
// in-memory or streamable HTTP); each tool call runs on its caller's
// goroutine.
type Server struct {
	h   *harness.Harness
	o   Options
	mcp *mcp.Server
}

// New returns the MCP server of h. h's lifetime is the caller's: Shutdown
// it after the server's sessions have ended.
func New(h *harness.Harness, o Options) *Server {
	if o.Name == "" {
		o.Name = "harness"
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	if o.Mode == "" {
		o.Mode = "workbench"
	}
	if o.TurnTimeout <= 0 {
		o.TurnTimeout = DefaultTurnTimeout
	}
	if o.ElicitTimeout <= 0 {
		o.ElicitTimeout = DefaultElicitTimeout
	}
	s := &Server{h: h, o: o}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: o.Name, Version: o.Version}, &mcp.ServerOptions{
		Instructions: "Coding agents run by the harness: create_session on an engine (list_engines), then run_turn with a message; get_transcript reads a session, interrupt stops its turn.",
	})
	s.addTools()
	return s
}

// MCP returns the go-sdk server (for a transport of the caller's choice).
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Run serves one client on t until the client goes or ctx is done. A turn
// still running when its client goes is interrupted.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error { return s.mcp.Run(ctx, t) }

// Handler serves the tools over MCP's streamable HTTP transport (POST,
// GET and DELETE on one path). It does no authentication and no Host or
// Origin check: mount it behind the caller's guard (the gateway's). An
// MCP session idle for SessionIdle is closed; a request body is bounded
// by MaxMessageBytes and its JSON; a request whose HTTP connection goes
// cancels its tool call (a run_turn's turn is interrupted).
func (s *Server) Handler() http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		SessionTimeout: SessionIdle, MaxRequestBodyBytes: 2 * MaxMessageBytes,
		// The caller's guard checks Host and Origin (one guard per door).
		DisableLocalhostProtection: true, PropagateRequestCancellation: true,
	})
}

// SessionIdle is how long an idle streamable HTTP session is kept.
const SessionIdle = 30 * time.Minute

// Inputs and outputs of the tools.
type (
	ListEnginesIn  struct{}
	ListEnginesOut struct {
		Engines []engine.Status `json:"engines"`
	}
	ListSessionsIn struct {
		ProjectRoot string `json:"projectRoot,omitempty" jsonschema:"only the sessions of this project (default: every allowed root)"`
	}
	ListSessionsOut struct {
		Sessions []harness.SessionSummary `json:"sessions"`
	}
	CreateSessionIn struct {
		ProjectRoot string `json:"projectRoot" jsonschema:"absolute path of the project, inside one of the server's --root directories"`
		Persona     string `json:"persona,omitempty" jsonschema:"persona ID (agents/AGENT_<ID>.md)"`
		Engine      string `json:"engine,omitempty" jsonschema:"engine name from list_engines (default: the persona's, else the server's)"`
		Model       string `json:"model,omitempty" jsonschema:"model (default: the persona's, else the engine's)"`
		Isolation   string `json:"isolation,omitempty" jsonschema:"worktree: run the session in a git worktree of its own, on a new branch (default: in the project)"`
		Base        string `json:"base,omitempty" jsonschema:"with isolation worktree: the ref its branch starts at (default: the project's HEAD)"`
	}
	SessionOut struct {
		SessionID   string `json:"sessionId"`
		ProjectRoot string `json:"projectRoot"`
		Engine      string `json:"engine"`
		Persona     string `json:"persona,omitempty"`
		Model       string `json:"model,omitempty"`
		// Workdir and Branch are a worktree session's worktree and branch.
		Workdir string `json:"workdir,omitempty"`
		Branch  string `json:"branch,omitempty"`
	}
	RunTurnIn struct {
		SessionID string `json:"sessionId" jsonschema:"the session from create_session"`
		Message   string `json:"message" jsonschema:"what to ask the agent"`
	}
	// RunTurnOut is how a turn ended.
	RunTurnOut struct {
		SessionID string `json:"sessionId"`
		// Status: completed, interrupted or failed.
		Status string `json:"status"`
		// Final is the agent's final text.
		Final   string  `json:"final"`
		CostUSD float64 `json:"costUsd"`
		// ToolCalls are the turn's tool calls, in order.
		ToolCalls []ToolCall `json:"toolCalls"`
		// Error says why a turn that did not complete ended.
		Error string `json:"error,omitempty"`
	}
	ToolCall struct {
		Name    string `json:"name"`
		Input   string `json:"input,omitempty"`
		IsError bool   `json:"isError"`
	}
	SessionIn struct {
		SessionID string `json:"sessionId" jsonschema:"the session"`
	}
	TranscriptOut struct {
		SessionID string  `json:"sessionId"`
		Entries   []Entry `json:"entries"`
		// Truncated: older entries were left out (MaxTranscriptEntries).
		Truncated bool `json:"truncated"`
	}
	// Entry is one message or tool call of a transcript.
	Entry struct {
		Seq int64 `json:"seq"`
		// Role: user, assistant, tool or error.
		Role    string `json:"role"`
		Text    string `json:"text,omitempty"`
		Tool    string `json:"tool,omitempty"`
		IsError bool   `json:"isError,omitempty"`
	}
	InterruptOut struct {
		SessionID   string `json:"sessionId"`
		Interrupted bool   `json:"interrupted"`
	}
)

func (s *Server) addTools() {
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "list_engines", Description: "The engines sessions can run on, and which are available here.", Annotations: ro},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ ListEnginesIn) (*mcp.CallToolResult, ListEnginesOut, error) {
			return nil, ListEnginesOut{Engines: s.h.Engines(ctx)}, nil
		})
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "list_sessions", Description: "The harness's sessions, newest first.", Annotations: ro},
		func(_ context.Context, _ *mcp.CallToolRequest, in ListSessionsIn) (*mcp.CallToolResult, ListSessionsOut, error) {
			if err := tooLong("projectRoot", in.ProjectRoot, MaxPathBytes); err != nil {
				return nil, ListSessionsOut{}, err
			}
			list, err := s.h.ListSessions(in.ProjectRoot)
			if err != nil {
				return nil, ListSessionsOut{}, toolError(err)
			}
			return nil, ListSessionsOut{Sessions: list}, nil
		})
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "create_session", Description: "Make a session of an agent in a project; run_turn then talks to it."},
		func(_ context.Context, _ *mcp.CallToolRequest, in CreateSessionIn) (*mcp.CallToolResult, SessionOut, error) {
			if err := firstErr(tooLong("projectRoot", in.ProjectRoot, MaxPathBytes), tooLong("persona", in.Persona, MaxNameBytes),
				tooLong("engine", in.Engine, MaxNameBytes), tooLong("model", in.Model, MaxNameBytes),
				tooLong("isolation", in.Isolation, MaxNameBytes), tooLong("base", in.Base, MaxNameBytes)); err != nil {
				return nil, SessionOut{}, err
			}
			if in.ProjectRoot == "" {
				return nil, SessionOut{}, errors.New("projectRoot is required: an absolute path inside one of the server's roots")
			}
			ss, err := s.h.NewSession(harness.SessionSpec{ProjectRoot: in.ProjectRoot, Persona: in.Persona, Mode: s.o.Mode,
				Engine: in.Engine, Model: in.Model, Isolation: in.Isolation, Base: in.Base})
			if err != nil {
				return nil, SessionOut{}, toolError(err)
			}
			return nil, SessionOut{SessionID: ss.ID, ProjectRoot: ss.ProjectRoot, Engine: ss.Engine, Persona: ss.Persona, Model: ss.Model,
				Workdir: ss.Workdir, Branch: ss.Branch}, nil
		})
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "run_turn", Description: "Send a message to a session's agent and wait for the end of its turn: the final text, the cost and the tool calls. Progress notifications while it runs when the call has a progress token."},
		s.runTurn)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "get_transcript", Description: "A session's messages and tool calls, oldest first.", Annotations: ro},
		s.transcript)
	s.addUsageTool(ro) // usage.go
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "interrupt", Description: "Stop a session's running turn."},
		func(_ context.Context, _ *mcp.CallToolRequest, in SessionIn) (*mcp.CallToolResult, InterruptOut, error) {
			if err := checkID(in.SessionID); err != nil {
				return nil, InterruptOut{}, err
			}
			err := s.h.Interrupt(in.SessionID)
			if errors.Is(err, harness.ErrNotRunning) {
				if _, serr := s.h.Session(in.SessionID); serr != nil {
					return nil, InterruptOut{}, toolError(serr)
				}
				return nil, InterruptOut{SessionID: in.SessionID}, nil
			}
			if err != nil {
				return nil, InterruptOut{}, toolError(err)
			}
			return nil, InterruptOut{SessionID: in.SessionID, Interrupted: true}, nil
		})
}

// runTurn is run_turn: a turn (Harness.StartTurn) read to its end (Wait), bounded by
// TurnTimeout; the client going (its request cancelled or its connection
// closed) interrupts the turn, and kills it DefaultGrace later.
func (s *Server) runTurn(ctx context.Context, req *mcp.CallToolRequest, in RunTurnIn) (*mcp.CallToolResult, RunTurnOut, error) {
	if err := checkID(in.SessionID); err != nil {
		return nil, RunTurnOut{}, err
	}
	if err := tooLong("message", in.Message, MaxMessageBytes); err != nil {
		return nil, RunTurnOut{}, err
	}
	if strings.TrimSpace(in.Message) == "" {
		return nil, RunTurnOut{}, toolError(harness.ErrEmptyMessage)
	}
	t, err := s.h.StartTurn(ctx, harness.TurnRequest{SessionID: in.SessionID, Message: in.Message})
	if err != nil {
		// The turn never started: the caller's mistake or a busy session.
		return nil, RunTurnOut{}, toolError(err)
	}
	// The turn runs on its own context (a reader's ctx never stops a
	// turn): the caller's ending or the time limit interrupts it (stop),
	// and only a turn that does not stop is killed.
	runCtx, cancelRun := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRun()
	kill := func() { _ = t.Kill(); cancelRun() }
	limit, cancelLimit := context.WithTimeout(ctx, s.o.TurnTimeout)
	defer cancelLimit()
	stop := context.AfterFunc(limit, func() {
		_ = t.Interrupt()
		time.AfterFunc(DefaultGrace, kill)
	})
	defer stop()

	p := &progress{ss: req.Session, token: req.Params.GetProgressToken(), ctx: ctx}
	out := RunTurnOut{SessionID: in.SessionID, ToolCalls: []ToolCall{}}
	var f fold.Fold
	byItem := map[int]int{} // a tool item of the fold → its ToolCall
	// Read to the turn's end, however it is stopped.
	res, err := t.Wait(context.Background(), func(rec session.Record) error {
		u := f.Add(rec.Typed)
		for _, it := range u.Items() {
			switch {
			case it.Kind == fold.KindTool && it.New && it.Tool.Start != nil:
				if len(out.ToolCalls) < MaxTranscriptEntries {
					byItem[it.ID] = len(out.ToolCalls)
					out.ToolCalls = append(out.ToolCalls, ToolCall{Name: it.Tool.Name, Input: clip(string(it.Tool.Input), MaxEntryBytes)})
					p.send("tool: " + it.Tool.Name)
				}
			case it.Kind == fold.KindTool && it.Done:
				if i, ok := byItem[it.ID]; ok {
					out.ToolCalls[i].IsError = it.Tool.Result.IsError
					delete(byItem, it.ID)
				}
			case it.Kind == fold.KindText && !it.Done:
				p.sendSometimes("writing")
			case it.Kind == fold.KindApproval && it.New && it.Approval.Request != nil:
				go s.ask(runCtx, req.Session, in.SessionID, *it.Approval.Request)
				p.send("approval asked: " + it.Approval.Request.ToolName)
			}
		}
		return nil
	})
	out.Status, out.Final = string(res.Status), res.Final
	if res.Complete != nil {
		out.CostUSD = res.Complete.CostUSD
	}
	var te *harness.TurnError
	switch {
	case err == nil:
	case errors.As(err, &te):
		out.Error = te.Error()
	case res.Exit == nil && res.LastSeq == 0:
		// The turn never started: the caller's mistake or a busy session.
		return nil, RunTurnOut{}, toolError(err)
	default:
		out.Error = err.Error()
	}
	if out.Status == "" {
		out.Status = string(harness.TurnFailed)
	}
	return nil, out, nil
}

// ask puts an approval question to the client: through elicitation when
// it can answer one (bounded by ElicitTimeout), else it is denied, as the
// policy dontAsk would. Any answer but an explicit allow or always denies.
func (s *Server) ask(ctx context.Context, ss *mcp.ServerSession, id string, q event.ApprovalRequested) {
	deny := func(why string) {
		_ = s.h.Approve(id, q.RequestID, harness.ApprovalAnswer{Decision: "deny", Message: why})
	}
	if ss == nil || !canElicit(ss) {
		deny("denied: the MCP client cannot be asked during a tool call (no elicitation, or protocol 2026-07-28), so the policy dontAsk applies")
		return
	}
	ectx, cancel := context.WithTimeout(ctx, s.o.ElicitTimeout)
	defer cancel()
	r, err := ss.Elicit(ectx, &mcp.ElicitParams{
		Message: question(q),
		RequestedSchema: json.RawMessage(`{"type":"object","properties":{"decision":{"type":"string","enum":["allow","deny","always"],` +
			`"description":"allow once, deny, or always allow this use in this session"}},"required":["decision"]}`),
	})
	if err != nil {
		deny("denied: the MCP client did not answer the approval question")
		return
	}
	d, _ := r.Content["decision"].(string)
	if r.Action != "accept" || (d != "allow" && d != "always") {
		deny("denied by the MCP client's user")
		return
	}
	_ = s.h.Approve(id, q.RequestID, harness.ApprovalAnswer{Decision: d})
}

// question is the elicitation's message for q: the tool, where it would
// run when it leaves the agent's sandbox (always is then allowed once,
// remembering nothing), and its input.
func question(q event.ApprovalRequested) string {
	where := ""
	if q.Unsandboxed {
		where = " outside its sandbox (an always answer allows it once)"
	}
	return fmt.Sprintf("The agent asks to run %s%s with %s", q.ToolName, where, clip(string(q.Input), 2000))
}

// canElicit reports whether the client said it answers elicitation, on a
// protocol version that lets a server ask while it serves a request
// (before 2026-07-28, which allows it only as a multi round-trip result:
// see the package doc).
func canElicit(ss *mcp.ServerSession) bool {
	p := ss.InitializeParams()
	return p != nil && p.Capabilities != nil && p.Capabilities.Elicitation != nil && p.ProtocolVersion < multiRoundTripVersion
}

// multiRoundTripVersion is the first protocol version in which a server
// may not send elicitation/create while it serves a tool call (SEP-2322).
const multiRoundTripVersion = "2026-07-28"

// transcript is get_transcript: the session's stored events as messages
// and tool calls (a running turn's so far).
func (s *Server) transcript(_ context.Context, _ *mcp.CallToolRequest, in SessionIn) (*mcp.CallToolResult, TranscriptOut, error) {
	if err := checkID(in.SessionID); err != nil {
		return nil, TranscriptOut{}, err
	}
	elog, err := s.h.EventLog(in.SessionID)
	if err != nil {
		return nil, TranscriptOut{}, toolError(err)
	}
	out := TranscriptOut{SessionID: in.SessionID, Entries: []Entry{}}
	var f fold.Fold
	for rec, err := range elog.Records(0) {
		if err != nil {
			return nil, TranscriptOut{}, toolError(err)
		}
		ev, derr := rec.Decode()
		if derr != nil {
			continue
		}
		u := f.AddSeq(rec.Seq, &ev)
		for _, it := range u.Items() {
			out.item(&it)
		}
	}
	u := f.Flush()
	for _, it := range u.Items() {
		out.item(&it)
	}
	return nil, out, nil
}

// item adds the entries of one update of an item of the fold: the user's
// messages, the assistant's text blocks (not a repeat of the last), tool
// calls and their results, errors. Reasoning is left out.
func (t *TranscriptOut) item(it *fold.Item) {
	switch it.Kind {
	case fold.KindUser:
		t.add(Entry{Seq: it.Seq, Role: "user", Text: clip(it.Text, MaxEntryBytes)})
	case fold.KindText:
		if it.Done && it.Text != "" && !it.Repeat {
			t.add(Entry{Seq: it.OpenSeq, Role: "assistant", Text: clip(it.Text, MaxEntryBytes)})
		}
	case fold.KindTool:
		if it.New && it.Tool.Start != nil {
			t.add(Entry{Seq: it.Seq, Role: "tool", Tool: it.Tool.Name, Text: clip(string(it.Tool.Input), MaxEntryBytes)})
		}
		if r := it.Tool.Result; it.Done {
			t.add(Entry{Seq: it.Seq, Role: "tool", Text: clip(r.Content, MaxEntryBytes), IsError: r.IsError})
		}
	case fold.KindStatus, fold.KindEnd:
		if e := it.Event.Error; it.Event.Type == event.TypeSessionError && e != nil {
			t.add(Entry{Seq: it.Seq, Role: "error", Text: clip(string(e.Kind)+": "+e.Error, MaxEntryBytes), IsError: true})
		}
	}
}

func (t *TranscriptOut) add(e Entry) {
	if len(t.Entries) == MaxTranscriptEntries {
		t.Entries = append(t.Entries[:0], t.Entries[1:]...)
		t.Truncated = true
	}
	t.Entries = append(t.Entries, e)
}

// progress sends notifications/progress for one run_turn when its caller
// gave a progress token.
type progress struct {
	ss    *mcp.ServerSession
	token any
	ctx   context.Context
	n     float64
	last  time.Time
}

func (p *progress) send(msg string) {
	if p.token == nil || p.ss == nil {
		return
	}
	p.n++
	p.last = time.Now()
	ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
	defer cancel()
	_ = p.ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: p.token, Progress: p.n, Message: msg})
}

// sendSometimes sends at most one notification a half second.
func (p *progress) sendSometimes(msg string) {
	if time.Since(p.last) >= 500*time.Millisecond {
		p.send(msg)
	}
}

// toolError is the one place a harness error becomes the text a client
// reads (the door's mapping, as internal/httpapi.Status is the HTTP
// doors'): a few sentinels get advice, then engine's error set says what
// kind of failure it is.
func toolError(err error) error {
	switch {
	case errors.Is(err, harness.ErrInvalidID):
		return fmt.Errorf("invalid sessionId: %w", err)
	case errors.Is(err, harness.ErrNotFound):
		return fmt.Errorf("unknown session: %w", err)
	case errors.Is(err, harness.ErrRootNotAllowed):
		return fmt.Errorf("projectRoot is outside the server's roots: %w", err)
	case errors.Is(err, harness.ErrInvalidRoot):
		return fmt.Errorf("projectRoot must be an absolute path to an existing directory: %w", err)
	case errors.Is(err, engine.ErrBusy):
		return fmt.Errorf("busy: %w; wait for it or call interrupt", err)
	case errors.Is(err, harness.ErrUnknownEngine):
		return fmt.Errorf("%w (list_engines names them)", err)
	case errors.Is(err, harness.ErrEmptyMessage):
		return fmt.Errorf("message is required: %w", err)
	case errors.Is(err, engine.ErrClosed):
		return fmt.Errorf("the server is shutting down: %w", err)
	case errors.Is(err, engine.ErrInvalid):
		return fmt.Errorf("invalid arguments: %w", err)
	case errors.Is(err, engine.ErrRefused):
		return fmt.Errorf("not allowed by the server's configuration: %w", err)
	case errors.Is(err, engine.ErrNotFound), errors.Is(err, engine.ErrNotRunning):
		return fmt.Errorf("not found: %w", err)
	case errors.Is(err, engine.ErrConflict), errors.Is(err, engine.ErrFull):
		return fmt.Errorf("not now: %w; try again later", err)
	case errors.Is(err, engine.ErrCannot):
		return fmt.Errorf("this session cannot do that: %w", err)
	case errors.Is(err, engine.ErrUnavailable):
		return fmt.Errorf("unavailable on this server: %w", err)
	}
	return err
}

// checkID refuses a malformed session id before anything is looked up.
func checkID(id string) error {
	if id == "" {
		return errors.New("sessionId is required")
	}
	if err := tooLong("sessionId", id, MaxNameBytes); err != nil {
		return err
	}
	if !session.ValidID(id) {
		return fmt.Errorf("invalid sessionId %q: %w", clip(id, 64), harness.ErrInvalidID)
	}
	return nil
}

// tooLong is an error when v is over max bytes.
func tooLong(field, v string, max int) error {
	if len(v) <= max {
		return nil
	}
	return fmt.Errorf("%s is %d bytes, over the limit of %d", field, len(v), max)
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// clip cuts v to at most max bytes of valid UTF-8, marking a cut with "…".
func clip(v string, max int) string {
	if len(v) <= max {
		return v
	}
	// A rune cut in two (and any invalid byte) goes: linear, whatever v is.
	return strings.ToValidUTF8(v[:max], "") + "…"
}
