// Package agentserver is `harness agent serve`: one harness session over
// HTTP, the contract the terminal UI (package tui) talks to. Its turns run
// on the core (harness.Harness) like every other door's: the session's
// persona, mode and engine, its event log, warm turns and approvals.
//
//	GET  /events    text/event-stream: the session's events (see below)
//	POST /prompt    {"content": "…"} → 200 {"accepted":true} (the turn runs in the background);
//	                409 while a prompt runs; 400 for an empty or malformed body
//	POST /cancel    → 200 {"cancelled":bool} (idle too)
//	POST /approval  {"requestId": "…", "decision": "allow|deny|always", "message"?: "…"}
//	                → 200 {"ok":true}; 404 unknown request, 409 already answered, 400 bad decision
//	POST /plan      {"decision": "approve|revise", "mode"?: "default|acceptEdits", "feedback"?: "…"}
//	                → 200 {"ok":true}; 409 no plan waits, 400 bad decision
//	GET  /session   the session served: {sessionId, engine, persona, model, permissionMode, effort, title,
//	                isolation?, workdir?, branch?, base?} (the last four a worktree session's)
//	GET  /sessions  {"sessions": [{sessionId, title, engine, current, running, pendingApprovals,
//	                isolation?, branch?, base?}]}: the served session's project's sessions
//	POST /session   {"persona"?, "model"?, "permissionMode"?, "effort"?, "title"?}: the next turns run with them
//	GET  /turns     the session's turns (for /rewind and /fork)
//	POST /fork      {"atSeq"?}: fork the session; the server serves the fork from then on
//	POST /rewind    {"toTurn"? | "turns"?, "files"?, "conversation"?}: undo turns (files, conversation or both)
//	GET  /rewind    ?turns=N | ?toTurn=S: what that rewind would undo (the files it would restore)
//	POST /trust     {"kind": "persona|mcp", "name"?, "path"?, "hash"}: a person trusts what a trust
//	                event showed → 200 {"trusted": {…}}; 409 it changed since, 404 no such thing
//	GET  /queue     the prompts queued behind the running turn (POST /prompt with "queue": true
//	                → 202 {queued, promptId, position}); PATCH /queue/{promptId} {message?, position?},
//	                DELETE /queue/{promptId} edit, move or drop one (queue.go)
//	POST /steer     {"content": "…"} → 200 {"ok":true}: the message goes into the running turn
//	                (an extension, steer.go); 409 when no turn runs, 422 naming the engines
//	                that can when this one cannot
//
// (control.go has the details of the six before the queue: bodies, answers, errors.)
//
// Events are JSON objects with "type" and "timestamp" (Unix ms, when the
// event happened: stamped once as the session log stores it, so two
// readers, and a replay, see the same time):
//
//	user        {content}             the prompt, as accepted; or, within a turn, a message
//	                                  steered into it (POST /steer), followed by status thinking
//	text        {content}             a completed block of the answer, its whole text
//	reasoning   {content}             a completed block of thinking, its whole text
//	tool_call   {id, name, input}     a tool use, once its input is complete
//	tool_result {id, result, isError} its outcome
//	status      {state, message?}     thinking | running_tool (message: the tool) | idle | error (message);
//	                                  thinking with a message while the model API is retried
//	                                  ("Retrying 3/10 in 4 s — API unreachable")
//	approval    {requestId, toolUseId, tool, input, suggestions, expiresAt, unsandboxed?}
//	            a tool waits for a person: answer with POST /approval;
//	            unsandboxed (an extension, absent when false): once allowed
//	            the use runs outside the agent's sandbox, so no rule allows
//	            it and "always" allows it once, remembering nothing
//	approval_resolved {requestId, decision (allow|deny), by (user|rule|timeout|interrupt|shutdown), message?}
//	plan        {planId, plan, toolUseId?, expiresAt}
//	            the agent ended a plan (markdown) and waits: decide with POST /plan
//	plan_resolved {planId, decision (approve|revise), mode?, feedback?, by (user|timeout|interrupt|shutdown)}
//	session     {sessionId, from}     the server now serves session sessionId, a fork of from
//	                                  (POST /fork); the events after it are the fork's
//	rewound     {toTurn, files, conversation}
//	                                  turns were undone (POST /rewind) from the one whose user
//	                                  event has id toTurn: files restored, conversation cut or not
//	trust       {trustKind, name?, path?, hash?, changes?, rules?, message}
//	                                  what the turn does not honour until a person trusts it (the
//	                                  core's trust:required): trust a persona or mcp one with POST /trust
//
// text and reasoning are sent once per completed block, never per delta:
// one event is one part. A prompt's events are: user, status thinking,
// then parts, tool calls and approvals, then status idle — or status
// error with its message when the turn failed. An interrupted turn ends
// status idle with message "interrupted".
//
// Opt-in streaming: GET /events?deltas=1 adds text_delta {content} and
// reasoning_delta {content} for every piece as the model streams it,
// before the block's text or reasoning event (which still comes). A
// client without deltas=1 never gets them. GET /events?usage=1 adds
// usage {costUsd, tokens} for every model call (usage:update) and
// rate_limit {limit, usedPercent, resetsAt} (extensions, issue 33).
//
// Replay: every event has an SSE id made from the session log's seq: the
// seq of the record it was made from, with a suffix ".1", ".2", … on all
// but the last of several events made from one record ("41.1", "41").
// A client that reconnects with Last-Event-ID (or ?after=ID, a seq or an
// id) gets every event after it, exactly once; without either it gets
// the session from its first event. The stream stays open across turns;
// `: heartbeat` comments keep it alive.
//
// Every request meets the one guard of the harness's HTTP doors (package
// internal/httpguard, as the gateway does): the Host must name this
// server; a request with a foreign Origin is refused (403) on every
// route, and a CORS preflight gets a grant only from Config.AllowOrigins;
// the token when set (401); a POST with a body must say Content-Type:
// application/json (415), so a page cannot send a "simple" text/plain
// request; bodies over Config.MaxBody are 413.
//
// The server serves one existing session (Config.SessionID) of a Harness
// its owner made and shuts down (cmd/harness makes the session, or
// continues one with --session). Close ends the event streams.
package agentserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/mux"
	"github.com/rs/zerolog"

	"github.com/chirality/harness"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/gateway/ops"
	"github.com/chirality/harness/internal/httpapi"
	"github.com/chirality/harness/internal/httpguard"
	"github.com/chirality/harness/internal/sse"
)

// Config configures New. Harness and SessionID are required.
type Config struct {
	// Harness runs the turns; its owner shuts it down after Close.
	Harness *harness.Harness
	// SessionID is the session served.
	SessionID string
	// Token, when set, is required as "Authorization: Bearer <Token>".
	Token string
	// Addr's host joins the Host allowlist (loopback names always are).
	Addr string
	// AllowHosts are more Host values accepted; AllowOrigins the origins
	// allowed to call cross-origin (none by default).
	AllowHosts, AllowOrigins []string
	// MaxBody bounds a request body (0 = httpguard.DefaultMaxBody).
	MaxBody int64
	// Heartbeat is the interval of `: heartbeat` comments (0 = 30 s).
	// Streams are written by package internal/sse: a client that does
	// not take an event within its write timeout is dropped (it comes
	// back with Last-Event-ID); at most sse.DefaultMaxStreams are open
	// (503 with Retry-After beyond).
	Heartbeat time.Duration
	// Logger receives the server's logs (nil = none).
	Logger *zerolog.Logger
}

// Server serves one session. It is safe for concurrent use; Close ends
// its event streams.
//
// It is a thin adapter: every route reads the specification's request,
// calls the gateway's operation (package gateway/ops) on the session
// served and writes the specification's answer; the event stream renders
// the core's one fold (package event/fold) of the session's log. What it
// keeps is which session it serves (a fork moves it) and its open
// streams: the session's turns, queue, approvals and plans are the
// core's, so two servers over one Harness, or a restarted one, serve the
// same session alike.
type Server struct {
	cfg     Config
	h       *harness.Harness
	ops     ops.Ops
	log     zerolog.Logger
	handler http.Handler // the routes behind the guard

	ctl sync.Mutex // one fork, rewind or turn start at a time

	mu     sync.Mutex
	id     string // the session served: a fork moves it
	moved  int64  // after a fork: the seq before the session:forked record (where a moved stream goes on)
	closed bool
	done   chan struct{}
	// stopWatch ends the watch (queue.go) at Close.
	stopWatch context.CancelFunc
	limits    *sse.Limiter
	woken     chan struct{} // closed (and replaced) when the session has new records outside a stream's Follow, or a fork moves
	streams   sync.WaitGroup
}

// DefaultMaxBody bounds a request body unless Config.MaxBody says
// otherwise.
const DefaultMaxBody = httpguard.DefaultMaxBody

// New returns a Server for cfg. It fails with the Harness's errors for a
// bad session (harness.ErrInvalidID, harness.ErrNotFound, …) and the
// guard's for a malformed Addr or origin.
func New(cfg Config) (*Server, error) {
	if cfg.Harness == nil {
		return nil, errors.New("agentserver: Config.Harness is required")
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 30 * time.Second
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if _, err := cfg.Harness.Session(cfg.SessionID); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, h: cfg.Harness, ops: ops.Ops{H: cfg.Harness}, id: cfg.SessionID, log: zerolog.Nop(),
		done: make(chan struct{}), woken: make(chan struct{}), limits: sse.NewLimiter(0, 0)}
	if cfg.Logger != nil {
		s.log = *cfg.Logger
	}
	guard, err := httpguard.New(httpguard.Config{Addr: cfg.Addr, AllowHosts: cfg.AllowHosts, AllowOrigins: cfg.AllowOrigins,
		Token: cfg.Token, MaxBody: cfg.MaxBody, WriteError: func(w http.ResponseWriter, _ *http.Request, err error) { writeError(w, err) }})
	if err != nil {
		return nil, err
	}
	s.handler = guard.Wrap(s.routes())
	var wctx context.Context
	wctx, s.stopWatch = context.WithCancel(context.Background())
	events := s.h.Watch(wctx, 0)
	s.streams.Add(1)
	go s.watch(events) // queue.go
	return s, nil
}

// routes are the specification's routes and the opt-in extensions, on the
// gateway's router (httpapi.NewRouter). Each reads its request, calls the
// operation on the session served and writes the answer (control.go,
// queue.go, steer.go, sessions.go have the rest).
func (s *Server) routes() *mux.Router {
	r := httpapi.NewRouter()
	for _, rt := range []struct {
		method, path string
		serve        http.HandlerFunc
	}{
		{http.MethodGet, "/events", s.events},
		{http.MethodPost, "/prompt", s.prompt},
		{http.MethodPost, "/cancel", s.cancel},
		{http.MethodPost, "/approval", s.approval},
		{http.MethodPost, "/plan", s.plan},
		{http.MethodGet, "/session", s.getSession},
		{http.MethodGet, "/sessions", s.listSessions},
		{http.MethodPost, "/session", s.updateSession},
		{http.MethodGet, "/turns", s.turns},
		{http.MethodPost, "/fork", s.fork},
		{http.MethodPost, "/rewind", s.rewind},
		{http.MethodGet, "/rewind", s.previewRewind},
		{http.MethodPost, "/trust", s.trust},
		{http.MethodGet, "/queue", s.getQueue},
		{http.MethodPatch, "/queue/{promptId}", s.patchQueued},
		{http.MethodDelete, "/queue/{promptId}", s.deleteQueued},
		{http.MethodPost, "/steer", s.steer},
	} {
		r.HandleFunc(rt.path, rt.serve).Methods(rt.method)
	}
	return r
}

// SessionID is the session served: the one Config named, or the last
// fork's.
func (s *Server) SessionID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.id
}

// wake wakes the event streams waiting for the session's next records
// (or for another session to be served).
func (s *Server) wake() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.woken)
	s.woken = make(chan struct{})
}

// typeOf reads a stored event's type without decoding the rest.
func typeOf(line []byte) event.Type {
	var head struct {
		Type event.Type `json:"type"`
	}
	_ = json.Unmarshal(line, &head)
	return head.Type
}

// ServeHTTP implements http.Handler: the guard (see the package doc),
// then the routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// Close ends every event stream and waits for their handlers. It does not
// stop the running turn: the Harness's owner shuts it down. Safe to call
// more than once.
func (s *Server) Close() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.done)
		s.stopWatch()
	}
	s.mu.Unlock()
	s.streams.Wait()
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

func writeJSON(w http.ResponseWriter, status int, v any) { httpguard.WriteJSON(w, status, v) }

// Errors of the door (besides the Harness's and the operations'), 400 as
// httpapi.BadRequest makes them.
var (
	// ErrBadBody: a POST body that is not the one JSON object the route
	// takes (400).
	ErrBadBody = httpapi.BadRequest("bad request body")
	// ErrBadPosition: Last-Event-ID or ?after= is not an event id (400).
	ErrBadPosition = httpapi.BadRequest("Last-Event-ID / after must be an event id (a seq, or seq.index)")
)

// statusOf maps an error to its HTTP status: the HTTP doors' one mapping
// (httpapi.Status), the gateway's.
func statusOf(err error) int { return httpapi.Status(err) }

func writeError(w http.ResponseWriter, err error) { httpapi.WriteError(w, err) }

// answer writes a route's answer: err's status and message, or status
// with v.
func answer(w http.ResponseWriter, status int, v any, err error) {
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, status, v)
}

// decode reads the body (capped by the guard) as exactly one JSON object
// into v, refusing unknown fields (httpapi.Decode, as the gateway).
func decode(r *http.Request, v any) error { return httpapi.Decode(r.Body, v, ErrBadBody) }

// ok is the answer of the routes that answer {"ok": true}.
var ok = map[string]bool{"ok": true}

func (s *Server) prompt(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Content string `json:"content"`
		Queue   bool   `json:"queue"` // queue.go: queue behind a running turn (202) instead of 409
	}
	if err := decode(r, &body); err != nil {
		writeError(w, err)
		return
	}
	if body.Queue {
		s.promptOrQueue(w, r, body.Content)
		return
	}
	answer(w, http.StatusOK, map[string]bool{"accepted": true}, s.Prompt(r.Context(), body.Content))
}

func (s *Server) cancel(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]bool{"cancelled": s.Cancel()})
}

func (s *Server) approval(w http.ResponseWriter, r *http.Request) {
	var body struct {
		RequestID string `json:"requestId"`
		Decision  string `json:"decision"`
		Message   string `json:"message,omitempty"`
	}
	err := decode(r, &body)
	if err == nil {
		err = s.ops.Approve(s.SessionID(), body.RequestID, harness.ApprovalAnswer{Decision: body.Decision, Message: body.Message})
	}
	answer(w, http.StatusOK, ok, err)
}

func (s *Server) plan(w http.ResponseWriter, r *http.Request) {
	var body harness.PlanDecision
	err := decode(r, &body)
	if err == nil {
		err = s.ops.DecidePlan(s.SessionID(), body)
	}
	answer(w, http.StatusOK, ok, err)
}

// Prompt starts a turn with content; it runs on the Harness. It fails
// with harness.ErrEmptyMessage, harness.ErrBusy while one runs,
// harness.ErrClosed, or the engine's start error (the turn's events say
// so too). ctx bounds only the start.
func (s *Server) Prompt(ctx context.Context, content string) error {
	if s.isClosed() {
		return harness.ErrClosed
	}
	s.ctl.Lock() // not while a fork moves the server
	defer s.ctl.Unlock()
	_, err := s.ops.StartTurn(ctx, harness.TurnRequest{SessionID: s.SessionID(), Message: content})
	s.wake() // a turn that could not start still stored its user:message
	return err
}

// Cancel interrupts the running turn; it reports whether one ran.
func (s *Server) Cancel() bool {
	return s.ops.Interrupt(s.SessionID()) == nil
}

// replayFrom is where a stream of session id at p must start reading: the
// start of the turn that holds p (the user:message at or before it), so
// that the block open at p is known.
func (s *Server) replayFrom(id string, p Position) (int64, error) {
	if p.Seq == 0 {
		return 0, nil
	}
	seq, err := s.lastOf(id, event.TypeUserMessage, p.Seq)
	return max(0, seq-1), err
}

// lastOf is the seq of session id's last stored record of type typ with
// a seq up to upTo (0: any), 0 when there is none. It reads the log.
func (s *Server) lastOf(id string, typ event.Type, upTo int64) (int64, error) {
	elog, err := s.h.EventLog(id)
	if err != nil {
		return 0, err
	}
	last := int64(0)
	for rec, err := range elog.Records(0) {
		if err != nil {
			return 0, err
		}
		if upTo != 0 && rec.Seq > upTo {
			break
		}
		if typeOf(rec.Event) == typ {
			last = rec.Seq
		}
	}
	return last, nil
}

// position reads Last-Event-ID, else ?after=, else the beginning.
func position(r *http.Request) (Position, error) {
	v := r.Header.Get("Last-Event-ID")
	if v == "" {
		v = r.URL.Query().Get("after")
	}
	if v == "" {
		return Position{}, nil
	}
	p, ok := ParsePosition(strings.TrimSpace(v))
	if !ok {
		return Position{}, fmt.Errorf("%w (got %s)", ErrBadPosition, httpguard.Quote(v))
	}
	return p, nil
}

// events streams the session's events after the client's position, then
// live ones, turn after turn, until the client goes or Close.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	pos, err := position(r)
	if err != nil {
		writeError(w, err)
		return
	}
	deltas := false
	if v := r.URL.Query().Get("deltas"); v != "" {
		if deltas, err = strconv.ParseBool(v); err != nil {
			writeError(w, fmt.Errorf("%w: deltas must be 1 or 0", ErrBadBody))
			return
		}
	}
	withUsage := false
	if v := r.URL.Query().Get("usage"); v != "" {
		if withUsage, err = strconv.ParseBool(v); err != nil {
			writeError(w, fmt.Errorf("%w: usage must be 1 or 0", ErrBadBody))
			return
		}
	}
	release, err := s.limits.Acquire(s.SessionID())
	if err != nil {
		w.Header().Set("Retry-After", strconv.Itoa(sse.RetryAfter))
		writeError(w, err)
		return
	}
	defer release()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		writeError(w, harness.ErrClosed)
		return
	}
	s.streams.Add(1)
	id := s.id
	s.mu.Unlock()
	defer s.streams.Done()
	last, err := s.replayFrom(id, pos)
	if err != nil {
		writeError(w, err)
		return
	}
	st := sse.New(w, r, sse.Config{Heartbeat: s.cfg.Heartbeat, Done: s.done})
	defer st.Close()
	if st.Start() != nil {
		return
	}
	ctx := st.Context()

	m := &mapper{deltas: deltas, usage: withUsage, session: id}
	var out []Event
	var ev event.Event
	for ctx.Err() == nil {
		s.mu.Lock()
		next := s.woken
		if s.id != id {
			// A fork moved the server: go on with the new session from its
			// session:forked record (the records before it are the copy
			// of what this stream has sent).
			id, last = s.id, s.moved
			m = &mapper{deltas: deltas, usage: withUsage, session: id}
		}
		s.mu.Unlock()
		events, err := s.h.Follow(ctx, id, last)
		if err != nil {
			s.log.Warn().Err(err).Msg("event stream: the session cannot be read")
			return
		}
		for rec, err := range events {
			if err != nil {
				s.log.Warn().Err(err).Msg("event stream: reading the log failed")
				return
			}
			if rec.Seq != 0 {
				last = rec.Seq
			}
			if ev.UnmarshalJSON(rec.Event) != nil {
				continue
			}
			out = m.record(&ev, out[:0])
			for i := range out {
				e := &out[i]
				if rec.Seq != 0 && pos.delivered(rec.Seq, i+1, len(out)) {
					continue
				}
				// When the event happened, as the log stores it: every
				// reader, and every replay, sees the same time. A record
				// stored without one (an older log) gets the time it is sent.
				if e.Timestamp = ev.Time; e.Timestamp == 0 {
					e.Timestamp = time.Now().UnixMilli()
				}
				id := ""
				if rec.Seq != 0 {
					id = idOf(rec.Seq, i+1, len(out)).String()
				}
				data, err := json.Marshal(e)
				if err != nil {
					continue
				}
				if st.EventID(id, data, false) != nil {
					return // the client went away; the turn goes on
				}
			}
			if !rec.More && st.Flush() != nil {
				return
			}
		}
		select {
		case <-next:
		case <-ctx.Done():
		}
	}
}
