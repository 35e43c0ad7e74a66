package gateway

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/mux"
	"github.com/rs/zerolog"

	"github.com/chirality/harness"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/gateway/ops"
	"github.com/chirality/harness/internal/eventsel"
	"github.com/chirality/harness/internal/httpapi"
	"github.com/chirality/harness/internal/httpguard"
	"github.com/chirality/harness/internal/sse"
	"github.com/chirality/harness/mcpserver"
	"github.com/chirality/harness/session"
)

// Defaults of Config.
const (
	DefaultMaxBody   = httpguard.DefaultMaxBody
	DefaultHeartbeat = sse.DefaultHeartbeat
	// APIPrefix is where the routes live.
	APIPrefix = "/api/harness"
)

//go:embed openapi.json
var openAPI []byte

// OpenAPI returns the OpenAPI document of the routes.
func OpenAPI() []byte { return slices.Clone(openAPI) }

// Config configures New. Harness is required; the zero value of every
// other field is the safe default: no token, no extra hosts, no CORS,
// 1 MiB bodies, 15 s heartbeats. New copies it.
type Config struct {
	Harness *harness.Harness
	// Addr is the address the server is bound to; its host joins the
	// Host allowlist (unless it is a wildcard such as 0.0.0.0).
	Addr string
	// Token, when set, is required as "Authorization: Bearer <Token>" on
	// every /api route.
	Token string
	// AllowHosts are extra Host header values accepted (besides
	// localhost, 127.0.0.1, [::1] and Addr's host), without port.
	AllowHosts []string
	// AllowOrigins are the origins ("https://app.example.com") allowed to
	// call the API cross-origin. None by default.
	AllowOrigins []string
	// MaxBody caps request bodies in bytes (0 = DefaultMaxBody).
	MaxBody int64
	// BodyTimeout bounds the time from a request's start until its body
	// is read (0 = httpguard.DefaultBodyTimeout): a body sent a byte at a
	// time is cut with 408.
	BodyTimeout time.Duration
	// Heartbeat is the interval of SSE heartbeat comments (0 =
	// DefaultHeartbeat).
	Heartbeat time.Duration
	// WriteTimeout is how long one SSE event may take to be written
	// before the stream is dropped (0 = sse.DefaultWriteTimeout, 10 s): a
	// client that stops reading holds nothing longer. It comes back with
	// Last-Event-ID.
	WriteTimeout time.Duration
	// MaxStreams and MaxSessionStreams cap the event streams open at once,
	// in all and per session (0 = sse.DefaultMaxStreams, 256, and
	// sse.DefaultMaxStreamsPerKey, 64; negative = no cap). Beyond them a
	// stream is answered 503 with Retry-After.
	MaxStreams, MaxSessionStreams int
	// MaxMCPSessions caps the MCP sessions open at once on
	// /api/harness/mcp (0 = DefaultMaxMCPSessions; negative = no cap).
	// At the cap a session idle for MCPPressureIdle (0 =
	// DefaultMCPPressureIdle) is closed to make room for a new one; when
	// none is, the new one is answered 503 with Retry-After.
	MaxMCPSessions  int
	MCPPressureIdle time.Duration
	// Console, if set, is served at / (the web console).
	Console http.Handler
	// DemoRoot is the demo project (serve --demo): listed first by GET
	// /roots, for the console to prefill.
	DemoRoot string
	// Logger receives request failures (nil = none).
	Logger *zerolog.Logger
	// Wrap, if set, wraps the API's router (inside the guard: requests
	// reaching it passed the host, origin and token checks). A cluster
	// node serves other nodes' sessions through it (cluster.Node.Attach).
	Wrap func(api http.Handler) (http.Handler, error)
}

// Gateway is the HTTP handler. It is safe for concurrent use.
type Gateway struct {
	cfg     Config
	h       *harness.Harness
	ops     ops.Ops // the operations on a session, shared with agent serve (package gateway/ops)
	log     zerolog.Logger
	guard   *httpguard.Guard
	limits  *sse.Limiter
	mcp     *mcpserver.Server // /api/harness/mcp
	router  *mux.Router
	api     http.Handler // router, or Config.Wrap's
	handler http.Handler

	// mcpHandler serves /api/harness/mcp (serveMCP): mcp's handler, capped.
	mcpHandler http.Handler

	closing   chan struct{}
	closeOnce sync.Once
	streams   sync.WaitGroup
}

// New returns a Gateway for cfg.
func New(cfg Config) (*Gateway, error) {
	if cfg.Harness == nil {
		return nil, errors.New("gateway: Config.Harness is required")
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	g := &Gateway{cfg: cfg, h: cfg.Harness, ops: ops.Ops{H: cfg.Harness}, log: zerolog.Nop(), closing: make(chan struct{}),
		limits: sse.NewLimiter(cfg.MaxStreams, cfg.MaxSessionStreams)}
	if cfg.Logger != nil {
		g.log = *cfg.Logger
	}
	guard, err := httpguard.New(httpguard.Config{
		Addr: cfg.Addr, AllowHosts: cfg.AllowHosts, AllowOrigins: cfg.AllowOrigins,
		Token: cfg.Token, MaxBody: cfg.MaxBody, BodyTimeout: cfg.BodyTimeout,
		// The console's files are public; every /api route, known or
		// not, needs the token.
		NeedsToken: func(r *http.Request) bool { return !g.servesConsole(r) },
		WriteError: g.writeError,
	})
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	g.guard = guard
	g.router = g.routes()
	g.api = g.router
	if cfg.Wrap != nil {
		if g.api, err = cfg.Wrap(g.router); err != nil {
			return nil, fmt.Errorf("gateway: %w", err)
		}
	}
	g.handler = guard.Wrap(g.dispatch())
	return g, nil
}

func (g *Gateway) routes() *mux.Router {
	// Unclean paths not redirected, JSON 404 and 405: httpapi.NewRouter,
	// agent serve's router too.
	r := httpapi.NewRouter()
	// The harness as an MCP server (streamable HTTP), behind the same
	// guard: serveMCP.
	g.mcp = mcpserver.New(g.h, mcpserver.Options{})
	g.mcpHandler = newMCPCap(g.mcp.Handler(), g.mcp.MCP(), g.cfg.MaxMCPSessions, g.cfg.MCPPressureIdle)
	// Every route is an entry of routeTable (routes.go), which the
	// OpenAPI document is made from too.
	for _, rt := range routeTable {
		serve := rt.Serve
		r.HandleFunc(APIPrefix+rt.Path, func(w http.ResponseWriter, r *http.Request) { serve(g, w, r) }).Methods(rt.Method)
	}
	return r
}

// servesConsole reports whether r is for the console's files, not the API.
func (g *Gateway) servesConsole(r *http.Request) bool {
	return g.cfg.Console != nil && !strings.HasPrefix(r.URL.Path, "/api/")
}

// dispatch sends /api/ to the router and the rest to the console.
func (g *Gateway) dispatch() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.servesConsole(r) {
			g.cfg.Console.ServeHTTP(w, r)
			return
		}
		g.api.ServeHTTP(w, r)
	})
}

// ServeHTTP implements http.Handler.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) { g.handler.ServeHTTP(w, r) }

// Close ends the open event streams (the turns go on) and waits for their
// handlers to return; new streams are refused (503). A stream blocked
// writing to a client that does not read is cut at once, so Close returns
// promptly whatever the clients do. Call it when shutting the server down,
// before http.Server.Shutdown: SSE connections never go idle by
// themselves. Safe to call more than once.
func (g *Gateway) Close() {
	g.closeOnce.Do(func() { close(g.closing) })
	g.streams.Wait()
}

// decodeBody reads one JSON object into v; unknown fields are refused (a
// client cannot smuggle tool flags in): httpapi.Decode, as agent serve.
func decodeBody(r *http.Request, v any) error { return httpapi.Decode(r.Body, v, errBadBody) }

// Handlers.

type createRequest struct {
	ProjectRoot string  `json:"projectRoot" oa:"required" doc:"absolute; must resolve inside an allowed root"`
	Persona     *string `json:"persona" oa:"pattern=^[A-Za-z0-9_-]+$,nullable"`
	Mode        string  `json:"mode" oa:"ref=Mode,required"`
	// Engine, Model and Title are optional ("" = the persona's engine or
	// the server's default, the persona's model, the first message).
	Engine string `json:"engine,omitempty" doc:"engine to run the session on (claude-code, anthropic, …; GET /engines). Default: the persona's engine:, else the server's default"`
	Model  string `json:"model,omitempty" doc:"model for this session (default: the persona's, else the engine's)"`
	Title  string `json:"title,omitempty" doc:"the session's name (default: its first message)"`
	// Isolation "worktree" runs the session in a git worktree of its own,
	// on Branch ("" = harness/<short id>) from Base ("" = the project's
	// HEAD). See worktree.go.
	Isolation string `json:"isolation,omitempty" oa:"enum=worktree" doc:"worktree: run the session in a git worktree of its own, on a new branch, outside the project's tree (422 when the project is not in a git repository)"`
	Base      string `json:"base,omitempty" doc:"with isolation worktree: the branch, tag, commit or remote ref (origin/main, not fetched) the session's branch starts at (default: the project's HEAD; 422 when it is no commit)"`
	Branch    string `json:"branch,omitempty" doc:"with isolation worktree: the new branch's name (default: harness/<first 8 of the session id>)"`
	// Sandbox runs every turn's agent in the kernel sandbox (503 at a
	// turn's start on a kernel without Landlock).
	Sandbox bool `json:"sandbox,omitempty" doc:"run every turn's agent in the kernel sandbox (Landlock): it and what it starts write only the workdir (not its protected paths), its own state directories and a private temporary directory; a turn on a kernel without Landlock fails with 503, never unsandboxed"`
	// Budget limits what the session's turns spend (usage.go).
	Budget *harness.Budget `json:"budget,omitempty" doc:"what the session's turns may spend, set by a person; the turn that crosses it ends with budget_exceeded and later turns answer 422 until it is raised"`
}

func (g *Gateway) createSession(w http.ResponseWriter, r *http.Request) {
	var req createRequest
	if err := decodeBody(r, &req); err != nil {
		g.writeError(w, r, err)
		return
	}
	p := ""
	if req.Persona != nil {
		p = *req.Persona
	}
	if req.Budget != nil {
		if err := req.Budget.Validate(); err != nil {
			g.writeError(w, r, err)
			return
		}
	}
	s, err := g.h.NewSession(harness.SessionSpec{ProjectRoot: req.ProjectRoot, Persona: p, Mode: req.Mode,
		Engine: req.Engine, Model: req.Model, Title: req.Title, Isolation: req.Isolation, Base: req.Base, Branch: req.Branch, Sandbox: req.Sandbox})
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	if !g.setBudget(w, r, s.ID, req.Budget) { // usage.go
		return
	}
	writeJSON(w, http.StatusCreated, g.envelope(s))
}

// envelope is {session, pendingApprovals, permissionMode}: the stored
// session (its engine, title, cost and always-allow rules included), the
// approval requests it waits on now and the permission mode its turns run
// in.
func (g *Gateway) envelope(s *session.Session) envelopeJSON {
	pending := g.h.PendingApprovals(s.ID)
	if pending == nil {
		pending = []event.ApprovalRequested{}
	}
	return envelopeJSON{Session: s, PendingApprovals: pending, PermissionMode: g.h.PermissionMode(s), Budget: g.h.SessionBudget(s.ID)}
}

func (g *Gateway) listSessions(w http.ResponseWriter, r *http.Request) {
	list, err := g.h.ListSessions(r.URL.Query().Get("projectRoot"))
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, list)
}

func (g *Gateway) getSession(w http.ResponseWriter, r *http.Request) {
	s, err := g.h.Session(mux.Vars(r)["id"])
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	g.h.Prewarm(s.ID) // opened in a client: its next turn's agent can start now
	env := g.envelope(s)
	u := g.h.SessionUsage(s) // what its turns used (usage.go)
	env.Usage = &u
	writeJSON(w, http.StatusOK, env)
}

type approvalRequest struct {
	SessionID    string          `json:"sessionId" oa:"format=uuid,required"`
	RequestID    string          `json:"requestId" oa:"required"`
	Decision     string          `json:"decision" oa:"enum=allow|deny|always,required"`
	Message      string          `json:"message,omitempty" doc:"what the model sees when denied"`
	UpdatedInput json.RawMessage `json:"updatedInput,omitempty" oa:"object" doc:"replaces the tool's input when allowed"`
}

// approval answers an approval request: the first answer wins.
func (g *Gateway) approval(w http.ResponseWriter, r *http.Request) {
	var req approvalRequest
	if err := decodeBody(r, &req); err != nil {
		g.writeError(w, r, err)
		return
	}
	err := g.ops.Approve(req.SessionID, req.RequestID, harness.ApprovalAnswer{Decision: req.Decision, Message: req.Message, UpdatedInput: req.UpdatedInput})
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, resolvedJSON{Resolved: true})
}

// engines lists the engines and whether each can run here.
func (g *Gateway) engines(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
	defer cancel()
	writeJSON(w, http.StatusOK, g.h.Engines(ctx))
}

// roots lists the allowed project roots (the demo project first in demo
// mode), for the console's project picker.
func (g *Gateway) roots(w http.ResponseWriter, r *http.Request) {
	roots := g.h.Roots()
	if g.cfg.DemoRoot != "" {
		out := []string{g.cfg.DemoRoot}
		for _, x := range roots {
			if x != g.cfg.DemoRoot {
				out = append(out, x)
			}
		}
		roots = out
	}
	writeJSON(w, http.StatusOK, rootsJSON{Roots: roots, Demo: g.cfg.DemoRoot != ""})
}

func (g *Gateway) deleteSession(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	force := r.URL.Query().Get("force")
	if err := g.h.DeleteSessionWith(ctx, mux.Vars(r)["id"], harness.DeleteOptions{Force: force == "1" || force == "true"}); err != nil {
		g.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

type turnRequest struct {
	SessionID string `json:"sessionId" oa:"format=uuid,required"`
	Message   string `json:"message" oa:"minLength=1,required"`
	// 004's per-turn TurnOpts (harness.TurnOptions): for this turn only,
	// narrowing only (403 when one would widen).
	SystemPromptAppend       string   `json:"systemPromptAppend" oa:"maxLength=32768" doc:"004 TurnOpts: added after the persona's system prompt, for this turn only"`
	ToolsOverride            string   `json:"toolsOverride" doc:"004 TurnOpts: the tools that exist for this turn, --tools form (\"Read,Grep\"; \"default\" = the persona's). Narrows only: a name outside the persona's tools list is 403"`
	DisallowedToolsOverride  []string `json:"disallowedToolsOverride" oa:"maxItems=128" doc:"004 TurnOpts: tools removed for this turn, besides the persona's (never replaces them)"`
	AutoApproveToolsOverride []string `json:"autoApproveToolsOverride" oa:"maxItems=128" doc:"004 TurnOpts: this turn's only auto-approvals, each one of the persona's or the server's (else 403); [] approves nothing"`
	// Queue queues the message when the session is busy (202) instead
	// of 409 (gateway/queue.go).
	Queue bool `json:"queue" doc:"Extension (issue 32): when the session is busy, queue the message behind the running turn and what is queued (202) instead of 409; on an idle session with nothing queued the turn starts as without it. A queued prompt runs later as its own turn with the session's settings then (the per-turn options apply to a turn started now only)."`
}

func (req turnRequest) options() harness.TurnOptions {
	return harness.TurnOptions{
		SystemPromptAppend: req.SystemPromptAppend, ToolsOverride: req.ToolsOverride,
		DisallowedToolsOverride: req.DisallowedToolsOverride, AutoApproveToolsOverride: req.AutoApproveToolsOverride,
	}
}

func (g *Gateway) turn(w http.ResponseWriter, r *http.Request) {
	var req turnRequest
	if err := decodeBody(r, &req); err != nil {
		g.writeError(w, r, err)
		return
	}
	if strings.TrimSpace(req.Message) == "" {
		g.writeError(w, r, harness.ErrEmptyMessage)
		return
	}
	sel, err := eventsOf(r) // before the turn: a 400 starts nothing
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	done, ok := g.acquireStream(w, r, req.SessionID) // before the turn: a 503 starts nothing
	if !ok {
		return
	}
	defer done()
	if req.Queue {
		g.queueTurn(w, r, req, sel)
		return
	}
	t, err := g.ops.StartTurn(r.Context(), harness.TurnRequest{SessionID: req.SessionID, Message: req.Message, Options: req.options()})
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	// where the turn's events start: a cluster node that forwarded the
	// turn streams them from there (cluster.TurnStartHeader)
	w.Header().Set("Harness-Turn-Start", strconv.FormatInt(t.StartSeq, 10))
	g.stream(w, r, req.SessionID, t.StartSeq, sel)
}

type interruptRequest struct {
	SessionID string `json:"sessionId" oa:"format=uuid,required"`
}

func (g *Gateway) interrupt(w http.ResponseWriter, r *http.Request) {
	var req interruptRequest
	if err := decodeBody(r, &req); err != nil {
		g.writeError(w, r, err)
		return
	}
	if err := g.ops.Interrupt(req.SessionID); err != nil {
		g.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, interruptedJSON{Interrupted: true})
}

func (g *Gateway) sessionEvents(w http.ResponseWriter, r *http.Request) {
	after, err := afterOf(r)
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	sel, err := eventsOf(r)
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	id := mux.Vars(r)["id"]
	done, ok := g.acquireStream(w, r, id)
	if !ok {
		return
	}
	defer done()
	g.stream(w, r, id, after, sel)
}

// eventsOf reads ?events= (eventsel.Param): the event types a stream
// sends besides 004's UIEvent types.
func eventsOf(r *http.Request) (eventsel.Set, error) {
	sel, err := eventsel.FromRequest(r)
	if err != nil {
		return sel, httpapi.BadRequest(err.Error())
	}
	return sel, nil
}

// afterOf reads Last-Event-ID, else ?after=, else 0.
func afterOf(r *http.Request) (int64, error) {
	v := r.Header.Get("Last-Event-ID")
	if v == "" {
		v = r.URL.Query().Get("after")
	}
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: %q", errBadAfter, v)
	}
	return n, nil
}

func (g *Gateway) personas(w http.ResponseWriter, r *http.Request) {
	list, err := g.h.Personas(r.URL.Query().Get("projectRoot"))
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, list)
}

// nodes answers GET /nodes and POST /session/{id}/move on a server that
// is not a cluster node (a node's cluster.Node answers them before the
// router).
func (g *Gateway) nodes(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusNotFound, map[string]string{"error": "not a cluster node: start harness serve with --node"})
}

// serveMCP serves the harness as an MCP server.
func (g *Gateway) serveMCP(w http.ResponseWriter, r *http.Request) { g.mcpHandler.ServeHTTP(w, r) }

func (g *Gateway) openapi(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openAPI)
}
