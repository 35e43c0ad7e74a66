// Package agentserver is `harness agent serve`: one conversation with an
// agent over HTTP, the contract the terminal UI (package tui) talks to.
//
//	GET  /events   text/event-stream: `data: {json}` per event, `: heartbeat` comments
//	POST /prompt   {"content": "…"} → 200 {"accepted":true} (the turn runs in the background);
//	               409 while a prompt runs; 400 for an empty or malformed body
//	POST /cancel   → 200 {"cancelled":bool} (idle too)
//
// Events are JSON objects with "type" and "timestamp" (Unix ms):
//
//	user        {content}             the prompt, as accepted
//	text        {content}             a streamed chunk of the answer
//	reasoning   {content}             a streamed chunk of thinking
//	tool_call   {id, name, input}     a tool use, once its input is complete
//	tool_result {id, result, isError} its outcome
//	status      {state, message?}     thinking | running_tool (message: the tool) | idle | error (message)
//
// text and reasoning carry chunks: consecutive chunks of one type belong to
// one part, and any other event ends it. A prompt's events are: user,
// status thinking, then parts and tool calls, then status idle — or status
// error with its message when the turn failed (an interrupted turn ends
// idle).
//
// The conversation runs on any engine.Engine, one turn per prompt, each
// resuming the previous turn's conversation. Every event goes to every
// connected client; a client too slow to keep up (its queue of 1,024
// events full) is disconnected rather than slowing the turn down.
package agentserver

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
)

// Config configures a Server. Engine is required.
type Config struct {
	Engine engine.Engine
	// Cwd is the project the agent works in ("" = the current directory).
	Cwd string
	// Model, MaxTurns, SystemPrompt and AllowedTools go into every turn's
	// request ("" / 0 = the engine's defaults).
	Model        string
	MaxTurns     int
	SystemPrompt string
	AllowedTools []string
	// Env entries are added to a child's environment (the demo's fake API).
	Env []string
	// Token, when set, is required as "Authorization: Bearer <Token>".
	Token string
	// Addr's host joins the Host allowlist (loopback names always are).
	Addr string
	// Heartbeat is the interval of `: heartbeat` comments (0 = 30 s).
	Heartbeat time.Duration
	// Logger receives the server's logs (nil = none).
	Logger *zerolog.Logger
}

// Event is one event of the stream (see the package doc).
type Event struct {
	Type      string          `json:"type"`
	Timestamp int64           `json:"timestamp"`
	Content   string          `json:"content,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	Result    *string         `json:"result,omitempty"`
	IsError   *bool           `json:"isError,omitempty"`
	State     string          `json:"state,omitempty"`
	Message   string          `json:"message,omitempty"`
}

// Server serves one conversation. It is safe for concurrent use; Close
// ends it.
type Server struct {
	cfg   Config
	log   zerolog.Logger
	hosts map[string]bool
	state string // the engine's state directory for this conversation
	mux   *http.ServeMux

	mu      sync.Mutex
	clients map[*client]struct{}
	turn    engine.Turn
	busy    bool
	resume  string
	closed  bool
	done    chan struct{}
	wg      sync.WaitGroup
}

type client struct {
	ch      chan []byte
	dropped chan struct{}
}

// ErrBusy is answered (409) to a prompt while another runs.
var ErrBusy = errors.New("agentserver: a prompt is already running")

// New returns a Server for cfg.
func New(cfg Config) (*Server, error) {
	if cfg.Engine == nil {
		return nil, errors.New("agentserver: Config.Engine is required")
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 30 * time.Second
	}
	if cfg.Cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		cfg.Cwd = wd
	}
	state, err := os.MkdirTemp("", "harness-agent-")
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: zerolog.Nop(), state: state, clients: map[*client]struct{}{}, done: make(chan struct{}),
		hosts: map[string]bool{"localhost": true, "127.0.0.1": true, "::1": true}}
	if cfg.Logger != nil {
		s.log = *cfg.Logger
	}
	if host, _, err := net.SplitHostPort(cfg.Addr); err == nil && host != "" {
		if ip := net.ParseIP(host); ip == nil || !ip.IsUnspecified() {
			s.hosts[strings.ToLower(strings.Trim(host, "[]"))] = true
		}
	}
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("GET /events", s.events)
	s.mux.HandleFunc("POST /prompt", s.prompt)
	s.mux.HandleFunc("POST /cancel", s.cancel)
	return s, nil
}

// ServeHTTP implements http.Handler: Host check, token, then the routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if !s.hosts[strings.ToLower(strings.Trim(host, "[]"))] {
		writeJSON(w, http.StatusForbidden, map[string]string{"error": "host not allowed"})
		return
	}
	if s.cfg.Token != "" && subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte("Bearer "+s.cfg.Token)) != 1 {
		w.Header().Set("WWW-Authenticate", `Bearer realm="harness"`)
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "missing or wrong bearer token"})
		return
	}
	s.mux.ServeHTTP(w, r)
}

// Close cancels a running prompt, waits for it, ends every event stream
// and removes the conversation's state. Safe to call more than once.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	t := s.turn
	close(s.done)
	s.mu.Unlock()
	if t != nil {
		t.Interrupt()
	}
	s.wg.Wait()
	os.RemoveAll(s.state)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// maxPrompt bounds a POST /prompt body.
const maxPrompt = 1 << 20

func (s *Server) prompt(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Content string `json:"content"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxPrompt))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "body must be {\"content\": \"…\"}: " + err.Error()})
		return
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "body must be one JSON object"})
		return
	}
	if strings.TrimSpace(body.Content) == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "content is empty"})
		return
	}
	if err := s.Prompt(body.Content); err != nil {
		status := http.StatusInternalServerError
		switch {
		case errors.Is(err, ErrBusy):
			status = http.StatusConflict
		case errors.Is(err, engine.ErrClosed):
			status = http.StatusServiceUnavailable
		}
		writeJSON(w, status, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"accepted": true})
}

func (s *Server) cancel(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]bool{"cancelled": s.Cancel()})
}

// Prompt starts a turn with content in the background. It fails with
// ErrBusy while one runs, and with the engine's start error.
func (s *Server) Prompt(content string) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return engine.ErrClosed
	}
	if s.busy {
		s.mu.Unlock()
		return ErrBusy
	}
	s.busy = true
	resume := s.resume
	s.mu.Unlock()
	s.broadcast(Event{Type: "user", Content: content})
	s.broadcast(Event{Type: "status", State: "thinking"})
	t, err := s.cfg.Engine.StartTurn(context.Background(), engine.Request{
		SessionKey: "agent", Message: content, Cwd: s.cfg.Cwd, Resume: resume, SystemPrompt: s.cfg.SystemPrompt,
		Model: s.cfg.Model, MaxTurns: s.cfg.MaxTurns, AllowedTools: s.cfg.AllowedTools, Env: s.cfg.Env,
		StateDir: s.state, PermissionMode: "dontAsk", Logger: s.cfg.Logger,
	})
	if err != nil {
		s.broadcast(Event{Type: "status", State: "error", Message: err.Error()})
		s.mu.Lock()
		s.busy = false
		s.mu.Unlock()
		return err
	}
	s.mu.Lock()
	s.turn = t
	s.wg.Add(1)
	s.mu.Unlock()
	go s.run(t)
	return nil
}

// Cancel interrupts the running prompt; it reports whether one ran.
func (s *Server) Cancel() bool {
	s.mu.Lock()
	t := s.turn
	s.mu.Unlock()
	if t == nil {
		return false
	}
	t.Interrupt()
	return true
}

// run maps the turn's UI events onto the stream.
func (s *Server) run(t engine.Turn) {
	defer s.wg.Done()
	defer t.Close()
	failed := ""
	for t.Next() {
		ev := t.Event()
		switch ev.Type {
		case event.TypeSessionInit:
			s.mu.Lock()
			s.resume = ev.Init.ConversationID()
			s.mu.Unlock()
		case event.TypeChatDelta:
			s.broadcast(Event{Type: "text", Content: ev.Text})
		case event.TypeThinkingDelta:
			s.broadcast(Event{Type: "reasoning", Content: ev.Text})
		case event.TypeToolStart:
			s.broadcast(Event{Type: "tool_call", ID: ev.ToolStart.ToolUseID, Name: ev.ToolStart.Name, Input: ev.ToolStart.Input})
			s.broadcast(Event{Type: "status", State: "running_tool", Message: ev.ToolStart.Name})
		case event.TypeToolResult:
			res, isErr := ev.ToolResult.Content, ev.ToolResult.IsError
			s.broadcast(Event{Type: "tool_result", ID: ev.ToolResult.ToolUseID, Result: &res, IsError: &isErr})
			s.broadcast(Event{Type: "status", State: "thinking"})
		case event.TypeSessionError:
			if ev.Error.Kind == event.ErrorResumeNotFound {
				s.mu.Lock()
				s.resume = "" // the engine lost it; the next prompt starts afresh
				s.mu.Unlock()
			}
			if ev.Error.Kind != event.ErrorInterrupted && ev.Error.Kind != event.ErrorKilled {
				failed = ev.Error.Error
			}
		}
	}
	s.mu.Lock()
	s.turn, s.busy = nil, false
	s.mu.Unlock()
	if failed != "" {
		s.broadcast(Event{Type: "status", State: "error", Message: failed})
	} else {
		s.broadcast(Event{Type: "status", State: "idle"})
	}
}

// broadcast stamps ev and hands it to every client without blocking.
func (s *Server) broadcast(ev Event) {
	ev.Timestamp = time.Now().UnixMilli()
	b, err := json.Marshal(ev)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.clients {
		select {
		case c.ch <- b:
		default:
			delete(s.clients, c) // too slow: cut off, never waited for
			close(c.dropped)
			s.log.Warn().Msg("an event stream client fell behind and was disconnected")
		}
	}
}

// events streams the conversation's events from now on.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	c := &client{ch: make(chan []byte, 1024), dropped: make(chan struct{})}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "shutting down"})
		return
	}
	s.clients[c] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.clients, c)
		s.mu.Unlock()
	}()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if _, err := io.WriteString(w, ": connected\n\n"); err != nil || rc.Flush() != nil {
		return
	}
	beat := time.NewTicker(s.cfg.Heartbeat)
	defer beat.Stop()
	for {
		var err error
		select {
		case <-r.Context().Done():
			return
		case <-s.done:
			return
		case <-c.dropped:
			return
		case <-beat.C:
			_, err = io.WriteString(w, ": heartbeat\n\n")
		case b := <-c.ch:
			_, err = fmt.Fprintf(w, "data: %s\n\n", b)
			for more := true; more && err == nil; { // drain what is queued, then flush once
				select {
				case b = <-c.ch:
					_, err = fmt.Fprintf(w, "data: %s\n\n", b)
				default:
					more = false
				}
			}
		}
		if err != nil || rc.Flush() != nil {
			return
		}
	}
}
