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
}

// Gateway is the HTTP handler. It is safe for concurrent use.
type Gateway struct {
	cfg     Config
	h       *harness.Harness
	log     zerolog.Logger
	guard   *httpguard.Guard
	limits  *sse.Limiter
	mcp     *mcpserver.Server // /api/harness/mcp
	router  *mux.Router
	handler http.Handler

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
	g := &Gateway{cfg: cfg, h: cfg.Harness, log: zerolog.Nop(), closing: make(chan struct{}),
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
	g.handler = guard.Wrap(g.dispatch())
	return g, nil
}

func (g *Gateway) routes() *mux.Router {
	r := mux.NewRouter()
	// No cleaning: mux would answer an unclean path (../, %2e%2e, //) with a
	// 301 redirect; here it gets a JSON 400 or 404 like any bad path.
	r.SkipClean(true)
	route := func(method, path string, h http.HandlerFunc) {
		r.HandleFunc(APIPrefix+path, h).Methods(method)
	}
	route(http.MethodPost, "/session/create", g.createSession)
	route(http.MethodGet, "/session/list", g.listSessions)
	route(http.MethodGet, "/session/{id}", g.getSession)
	route(http.MethodDelete, "/session/{id}", g.deleteSession)
	route(http.MethodPatch, "/session/{id}", g.patchSession)
	route(http.MethodPost, "/session/{id}/fork", g.forkSession)
	route(http.MethodGet, "/session/{id}/turns", g.listTurns)
	route(http.MethodGet, "/session/{id}/rewind", g.previewRewind)
	route(http.MethodPost, "/session/{id}/rewind", g.rewindSession)
	route(http.MethodGet, "/session/{id}/diff", g.sessionDiff)
	route(http.MethodPost, "/session/{id}/merge", g.mergeSession)
	route(http.MethodGet, "/session/{id}/queue", g.getQueue)
	route(http.MethodPatch, "/session/{id}/queue/{promptId}", g.patchQueued)
	route(http.MethodDelete, "/session/{id}/queue/{promptId}", g.deleteQueued)
	route(http.MethodPost, "/approval", g.approval)
	route(http.MethodGet, "/engines", g.engines)
	route(http.MethodGet, "/roots", g.roots)
	route(http.MethodGet, "/session/{id}/events", g.sessionEvents)
	route(http.MethodPost, "/turn", g.turn)
	route(http.MethodPost, "/interrupt", g.interrupt)
	route(http.MethodGet, "/personas", g.personas)
	route(http.MethodGet, "/trust", g.trustList)
	route(http.MethodPost, "/trust", g.trustAccept)
	route(http.MethodGet, "/health", g.health)
	route(http.MethodGet, "/openapi.json", g.openapi)
	// The harness as an MCP server (streamable HTTP), behind the same guard.
	g.mcp = mcpserver.New(g.h, mcpserver.Options{})
	mcpHandler := newMCPCap(g.mcp.Handler(), g.mcp.MCP(), g.cfg.MaxMCPSessions, g.cfg.MCPPressureIdle)
	for _, m := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
		r.Handle(APIPrefix+"/mcp", mcpHandler).Methods(m)
	}
	r.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such route"})
	})
	r.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "method not allowed"})
	})
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
		g.router.ServeHTTP(w, r)
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
	ProjectRoot string  `json:"projectRoot"`
	Persona     *string `json:"persona"`
	Mode        string  `json:"mode"`
	// Engine, Model and Title are optional ("" = the persona's engine or
	// the server's default, the persona's model, the first message).
	Engine string `json:"engine,omitempty"`
	Model  string `json:"model,omitempty"`
	Title  string `json:"title,omitempty"`
	// Isolation "worktree" runs the session in a git worktree of its own,
	// on Branch ("" = harness/<short id>) from Base ("" = the project's
	// HEAD). See worktree.go.
	Isolation string `json:"isolation,omitempty"`
	Base      string `json:"base,omitempty"`
	Branch    string `json:"branch,omitempty"`
	// Sandbox runs every turn's agent in the kernel sandbox (503 at a
	// turn's start on a kernel without Landlock).
	Sandbox bool `json:"sandbox,omitempty"`
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
	s, err := g.h.NewSession(harness.SessionSpec{ProjectRoot: req.ProjectRoot, Persona: p, Mode: req.Mode,
		Engine: req.Engine, Model: req.Model, Title: req.Title, Isolation: req.Isolation, Base: req.Base, Branch: req.Branch, Sandbox: req.Sandbox})
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, g.envelope(s))
}

// envelope is {session, pendingApprovals, permissionMode}: the stored
// session (its engine, title, cost and always-allow rules included), the
// approval requests it waits on now and the permission mode its turns run
// in.
func (g *Gateway) envelope(s *session.Session) map[string]any {
	pending := g.h.PendingApprovals(s.ID)
	if pending == nil {
		pending = []event.ApprovalRequested{}
	}
	return map[string]any{"session": s, "pendingApprovals": pending, "permissionMode": g.h.PermissionMode(s)}
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
	writeJSON(w, http.StatusOK, g.envelope(s))
}

type approvalRequest struct {
	SessionID    string          `json:"sessionId"`
	RequestID    string          `json:"requestId"`
	Decision     string          `json:"decision"`
	Message      string          `json:"message,omitempty"`
	UpdatedInput json.RawMessage `json:"updatedInput,omitempty"`
}

// approval answers an approval request: the first answer wins.
func (g *Gateway) approval(w http.ResponseWriter, r *http.Request) {
	var req approvalRequest
	if err := decodeBody(r, &req); err != nil {
		g.writeError(w, r, err)
		return
	}
	if req.RequestID == "" {
		g.writeError(w, r, fmt.Errorf("%w: requestId is required", errBadBody))
		return
	}
	err := g.h.Approve(req.SessionID, req.RequestID, harness.ApprovalAnswer{Decision: req.Decision, Message: req.Message, UpdatedInput: req.UpdatedInput})
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"resolved": true})
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
	writeJSON(w, http.StatusOK, map[string]any{"roots": roots, "demo": g.cfg.DemoRoot != ""})
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
	SessionID string `json:"sessionId"`
	Message   string `json:"message"`
	// 004's per-turn TurnOpts (harness.TurnOptions): for this turn only,
	// narrowing only (403 when one would widen).
	SystemPromptAppend       string   `json:"systemPromptAppend"`
	ToolsOverride            string   `json:"toolsOverride"`
	DisallowedToolsOverride  []string `json:"disallowedToolsOverride"`
	AutoApproveToolsOverride []string `json:"autoApproveToolsOverride"`
	// Queue queues the message when the session is busy (202) instead
	// of 409 (gateway/queue.go).
	Queue bool `json:"queue"`
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
	done, ok := g.acquireStream(w, r, req.SessionID) // before the turn: a 503 starts nothing
	if !ok {
		return
	}
	defer done()
	if req.Queue {
		g.queueTurn(w, r, req)
		return
	}
	t, err := g.h.StartTurnWith(r.Context(), req.SessionID, req.Message, req.options())
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	g.stream(w, r, req.SessionID, t.StartSeq)
}

type interruptRequest struct {
	SessionID string `json:"sessionId"`
}

func (g *Gateway) interrupt(w http.ResponseWriter, r *http.Request) {
	var req interruptRequest
	if err := decodeBody(r, &req); err != nil {
		g.writeError(w, r, err)
		return
	}
	if err := g.h.Interrupt(req.SessionID); err != nil {
		g.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"interrupted": true})
}

func (g *Gateway) sessionEvents(w http.ResponseWriter, r *http.Request) {
	after, err := afterOf(r)
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
	g.stream(w, r, id, after)
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

func (g *Gateway) health(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
	defer cancel()
	v, err := g.h.CLIVersion(ctx)
	body := map[string]any{"ok": err == nil, "claudeVersion": v}
	if err != nil {
		body["error"] = err.Error()
	}
	writeJSON(w, http.StatusOK, body)
}

func (g *Gateway) openapi(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openAPI)
}
