package rpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"github.com/chirality/harness"
	"github.com/chirality/harness/internal/atomicfile"
	"github.com/chirality/harness/internal/jsonrpc"
	"github.com/chirality/harness/session"
)

// Version is the protocol version initialize answers.
const Version = "1.0.0"

// Limits on what a client sends (rpc/PROTOCOL.md lists them). A line over
// its bound is -32600 and a batch over MaxBatch one -32600; a string field
// over its bound is -32602. Nothing a client sends is echoed back whole.
const (
	// DefaultMaxLineBytes bounds one request line: room for an input of
	// MaxInputBytes however it is escaped.
	DefaultMaxLineBytes = 8 << 20
	// MaxInputBytes bounds turn.start's input: its text items together.
	MaxInputBytes = 1 << 20
	// MaxTitleBytes bounds a thread's title (a longer title stored by an
	// older server is cut to it when the thread is loaded).
	MaxTitleBytes = 4 << 10
	// MaxPathBytes bounds thread.create's directory.
	MaxPathBytes = 4 << 10
	// MaxNameBytes bounds every other string: ids (threadId, requestId),
	// agent, model.providerID and model.modelID, decision, clientInfo.
	MaxNameBytes = 256
)

// tooLong returns -32602 when v is longer than max bytes.
func tooLong(field, v string, max int) *Error {
	if len(v) <= max {
		return nil
	}
	return errorf(CodeInvalidParams, fmt.Sprintf("invalid params: %s is %d bytes, over the limit of %d", field, len(v), max))
}

// firstTooLong returns the first of checks that is not nil.
func firstTooLong(checks ...*Error) *Error {
	for _, e := range checks {
		if e != nil {
			return e
		}
	}
	return nil
}

// clip shortens what a client sent for an error message.
func clip(v string) string {
	if len(v) <= 64 {
		return v
	}
	return strings.ToValidUTF8(v[:64], "") + "…"
}

// Options configure Serve.
type Options struct {
	// Cwd is the project: threads live in Cwd/.harness/threads and run
	// there (or in a directory below it).
	Cwd string
	// MaxLineBytes bounds a request line (0 = DefaultMaxLineBytes).
	MaxLineBytes int
	// Logger receives the door's logs (nil = none); never stdout.
	Logger *zerolog.Logger
	// Grace bounds how long Serve waits, once it stops reading, for the
	// interrupted turns to send their ends (0 = DefaultGrace).
	Grace time.Duration
}

// DefaultGrace is Options.Grace's default.
const DefaultGrace = 10 * time.Second

// Thread is a conversation: a harness session once its first turn runs.
type Thread struct {
	ThreadID  string     `json:"threadId"`
	Title     string     `json:"title"`
	Directory string     `json:"directory"`
	Time      threadTime `json:"time"`
	// ForkedFrom is the thread this one is a fork of (thread.fork; an
	// extension, absent for others).
	ForkedFrom string `json:"forkedFrom,omitempty"`
	// Isolation "worktree" runs the thread's session in a git worktree of
	// its own from Base ("" = the directory's HEAD); extensions of
	// thread.create, absent for others.
	Isolation string `json:"isolation,omitempty"`
	Base      string `json:"base,omitempty"`
}

type threadTime struct {
	Created int64 `json:"created"`
	Updated int64 `json:"updated"`
}

// meta is meta.json: the Thread and what runs it.
type meta struct {
	Thread
	SessionID      string `json:"sessionId,omitempty"`
	Engine         string `json:"engine,omitempty"`
	Model          string `json:"model,omitempty"`
	Agent          string `json:"agent,omitempty"`
	PermissionMode string `json:"permissionMode,omitempty"`
	Effort         string `json:"effort,omitempty"`
	// Turns are the thread's turns, oldest first, as thread.fork and
	// thread.rollback name them (turns of a thread from before they were
	// kept are not listed).
	Turns []turnRef `json:"turns,omitempty"`
	// Store is storeSession for a thread whose one log is its session's
	// (the package doc): its own notifications are Notes, its turns'
	// are rendered from the session's log. "" (a thread from before):
	// events.jsonl is a log of every notification.
	Store string `json:"store,omitempty"`
	// Notes are the thread's own notifications (noteMethods), as sent:
	// {"seq", "method", "params"}.
	Notes []json.RawMessage `json:"notes,omitempty"`
}

// storeSession is meta.Store of a thread stored in its session's log.
const storeSession = "session"

// noteMethods are the notifications of the thread itself, kept in
// meta.Notes; every other is a turn's, rendered from the session's log.
var noteMethods = map[string]bool{"thread.created": true, "thread.forked": true, "thread.rolledBack": true}

// turnRef ties a turn of the protocol to its turn in the core.
type turnRef struct {
	TurnID string `json:"turnId"`
	Seq    int64  `json:"seq"`  // its turn.started notification
	Core   int64  `json:"core"` // the seq of its user:message in the session's event log
	// Its records in the session's event log are From+1 … To, and it
	// started at Started (Unix ms): with them its notifications can be
	// rendered again from the core's log alone (see the package doc).
	// Absent for turns kept before they were.
	From    int64 `json:"from,omitempty"`
	To      int64 `json:"to,omitempty"`
	Started int64 `json:"started,omitempty"`
	// End is the seq of its last notification (0 while it runs, or when
	// the server stopped before it ended).
	End int64 `json:"end,omitempty"`
}

// Turn is a turn of a thread.
type Turn struct {
	TurnID   string   `json:"turnId"`
	ThreadID string   `json:"threadId"`
	Status   string   `json:"status"` // running | completed | cancelled | error
	Time     turnTime `json:"time"`
}

type turnTime struct {
	Started   int64  `json:"started"`
	Completed *int64 `json:"completed,omitempty"`
}

type thread struct {
	dir string // .harness/threads/<id>
	log *session.EventLog

	mu   sync.Mutex // meta, the seq of notifications, turn
	meta meta
	turn *activeTurn
	next int64         // the seq of the next notification (storeSession)
	tail chan struct{} // closed once the last turn started has sent its end
	// rec is held (before mu) while a turn's notifications are made
	// ahead of meta.json's word of them (follow); thread.get takes it.
	// Meanwhile (buffering) they are kept in pending, written once rec
	// is let go.
	rec       sync.Mutex
	buffering bool
	pending   [][]byte
}

type activeTurn struct {
	turn Turn
	done chan struct{}
}

// Server is one client's session of the protocol. Serve makes and runs
// one; it is exported for tests that drive it step by step.
type Server struct {
	h    *harness.Harness
	opts Options
	log  zerolog.Logger
	out  *lineWriter
	root string // .harness/threads

	mu        sync.Mutex
	threads   map[string]*thread
	approvals map[string]string // requestId → threadId
	turns     sync.WaitGroup
}

// Serve answers JSON-RPC requests read from in on out until in ends or
// ctx is cancelled, then interrupts the running turns, waits up to
// Options.Grace for their ends to be sent (turn.completed, status
// cancelled) and returns nil. No input ends it early: a malformed line gets
// an error response. Requests are handled one at a time, in order.
//
// in is read on a goroutine of its own: when ctx ends Serve, a read
// blocked on in stays blocked until in delivers or is closed (a command
// that exits does not care; a library caller closes in).
func Serve(ctx context.Context, h *harness.Harness, in io.Reader, out io.Writer, opts Options) error {
	s, err := NewServer(h, out, opts)
	if err != nil {
		return err
	}
	type read struct {
		line []byte
		err  error
	}
	lines := make(chan read)
	next := make(chan struct{}) // the line was handled: read the next one
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		r := jsonrpc.NewLineReader(in, s.opts.MaxLineBytes)
		for {
			line, err := r.Line()
			select {
			case lines <- read{line, err}:
			case <-stop:
				return
			}
			if err != nil && !errors.Is(err, ErrLineTooLong) {
				return
			}
			select {
			case <-next: // the line's buffer is reused by the next read
			case <-stop:
				return
			}
		}
	}()
loop:
	for {
		var rd read
		select {
		case <-ctx.Done():
			break loop
		case rd = <-lines:
		}
		switch {
		case errors.Is(rd.err, ErrLineTooLong):
			s.send(nil, nil, errorf(CodeInvalidRequest, fmt.Sprintf("invalid request: the line is longer than %d bytes", s.opts.MaxLineBytes)))
		case rd.err != nil:
			break loop // end of input (or a broken pipe)
		case len(bytes.TrimSpace(rd.line)) > 0:
			s.Handle(ctx, rd.line)
		}
		next <- struct{}{}
	}
	gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.Grace)
	defer cancel()
	s.Close(gctx)
	return nil
}

// NewServer loads the threads of opts.Cwd.
func NewServer(h *harness.Harness, out io.Writer, opts Options) (*Server, error) {
	if opts.MaxLineBytes <= 0 {
		opts.MaxLineBytes = DefaultMaxLineBytes
	}
	if opts.Grace <= 0 {
		opts.Grace = DefaultGrace
	}
	if opts.Cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		opts.Cwd = wd
	}
	s := &Server{h: h, opts: opts, log: zerolog.Nop(), out: newLineWriter(out), root: filepath.Join(opts.Cwd, ".harness", "threads"),
		threads: map[string]*thread{}, approvals: map[string]string{}}
	if opts.Logger != nil {
		s.log = *opts.Logger
	}
	if err := s.load(); err != nil {
		return nil, err
	}
	return s, nil
}

// load reads every thread's meta.json (a thread whose meta cannot be read
// is logged and skipped).
func (s *Server) load() error {
	ents, err := os.ReadDir(s.root)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(s.root, e.Name(), "meta.json"))
		var m meta
		if err == nil {
			err = json.Unmarshal(b, &m)
		}
		if err != nil || m.ThreadID != e.Name() {
			s.log.Warn().Str("thread", e.Name()).AnErr("error", err).Msg("thread skipped: meta.json unreadable")
			continue
		}
		if len(m.Title) > MaxTitleBytes {
			m.Title = strings.ToValidUTF8(m.Title[:MaxTitleBytes], "")
			s.log.Warn().Str("thread", e.Name()).Msg("thread title over the limit: cut when loaded")
		}
		t := &thread{dir: filepath.Join(s.root, e.Name()), meta: m}
		if m.Store == storeSession {
			t.next = s.lastSeq(t) + 1
		}
		s.threads[m.ThreadID] = t
	}
	return nil
}

// Close cancels running turns and waits for their ends to be sent.
func (s *Server) Close(ctx context.Context) {
	s.mu.Lock()
	for _, t := range s.threads {
		t.mu.Lock()
		if t.turn != nil && t.meta.SessionID != "" {
			_ = s.h.Interrupt(t.meta.SessionID)
		}
		t.mu.Unlock()
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.turns.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	s.mu.Lock()
	for _, t := range s.threads {
		if t.log != nil {
			t.log.Close()
		}
	}
	s.mu.Unlock()
}

// Handle answers one line (a request, a notification or a batch).
//
// A batch's answers are written as they are made, into one line (the
// array's framing, then each answer): none is kept once written, so a
// batch costs the memory of one answer, not of all of them. The writer is
// held for the whole batch, so no notification falls inside its line;
// a turn.start's notifications follow the batch's line.
func (s *Server) Handle(ctx context.Context, line []byte) {
	items, batch, perr := DecodeMessage(line)
	if perr != nil {
		s.send(nil, nil, perr)
		return
	}
	if !batch {
		req, id, err := DecodeRequest(items[0])
		if err != nil {
			s.send(id, nil, err)
			return
		}
		result, rerr := s.dispatch(ctx, req)
		if !req.IsNotification() {
			s.send(req.ID, result, rerr)
		} else if f, ok := result.(deferred); ok {
			f.then() // a turn.start sent as a notification still runs
		}
		return
	}
	// A batch: one array of the answers to its requests (none for its
	// notifications; nothing at all when it held only notifications).
	var after []func()
	s.out.mu.Lock()
	n := 0
	next := func() {
		if n == 0 {
			s.out.w.WriteByte('[')
		} else {
			s.out.w.WriteByte(',')
		}
		n++
	}
	for _, raw := range items {
		req, id, err := DecodeRequest(raw)
		if err != nil {
			next()
			s.writeAnswer(id, nil, err)
			continue
		}
		result, rerr := s.dispatch(ctx, req)
		if f, ok := result.(deferred); ok {
			result = f.result
			after = append(after, f.then)
		}
		if !req.IsNotification() {
			next()
			s.writeAnswer(req.ID, result, rerr)
		}
	}
	if n > 0 {
		s.out.w.WriteByte(']')
		s.out.endLocked()
	}
	s.out.mu.Unlock()
	for _, f := range after {
		f()
	}
}

// deferred is a result whose follow-up (a turn's notifications) must wait
// until the answer was sent.
type deferred struct {
	result any
	then   func()
}

// streamer is a result written straight to the client, piece by piece
// (thread.list, thread.get): a big result is never built whole. It runs
// with the writer held.
type streamer func(w *bufio.Writer)

// send writes one response.
func (s *Server) send(id json.RawMessage, result any, e *Error) {
	if f, ok := result.(deferred); ok {
		s.send(id, f.result, e)
		f.then()
		return
	}
	s.out.mu.Lock()
	s.writeAnswer(id, result, e)
	werr := s.out.endLocked()
	s.out.mu.Unlock()
	if werr != nil {
		s.log.Debug().Err(werr).Msg("the client is gone")
	}
}

// writeAnswer writes one response object, without its newline; the
// caller holds s.out.mu.
func (s *Server) writeAnswer(id json.RawMessage, result any, e *Error) {
	w := s.out.w
	if st, ok := result.(streamer); ok && e == nil {
		s.out.buf = jsonrpc.Strict.AppendResponseHead(s.out.buf[:0], id)
		w.Write(s.out.buf)
		st(w)
		w.WriteString(jsonrpc.ResponseTail)
		return
	}
	b, err := jsonrpc.Strict.AppendResponse(s.out.buf[:0], id, result, e)
	if err != nil {
		b, _ = jsonrpc.Strict.AppendResponse(s.out.buf[:0], id, nil, errorf(CodeInternalError, "internal error: the result could not be encoded"))
	}
	w.Write(b)
	if cap(b) <= 64<<10 {
		s.out.buf = b // reused; a big one is let go
	} else {
		s.out.buf = nil
	}
}

// params decodes p into v; unknown fields are ignored (a newer client's
// additions), a wrong type is InvalidParams.
func params(p json.RawMessage, v any) *Error {
	if len(p) == 0 || string(p) == "null" {
		p = json.RawMessage("{}")
	}
	if p[0] != '{' {
		return errorf(CodeInvalidParams, "invalid params: an object is expected")
	}
	if err := json.Unmarshal(p, v); err != nil {
		return errorf(CodeInvalidParams, "invalid params: "+err.Error())
	}
	return nil
}

func (s *Server) dispatch(ctx context.Context, req *Request) (any, *Error) {
	switch req.Method {
	case "initialize":
		var p struct {
			ClientInfo *struct {
				Name    string `json:"name"`
				Version string `json:"version"`
			} `json:"clientInfo"`
		}
		if err := params(req.Params, &p); err != nil {
			return nil, err
		}
		if p.ClientInfo != nil {
			if err := firstTooLong(tooLong("clientInfo.name", p.ClientInfo.Name, MaxNameBytes),
				tooLong("clientInfo.version", p.ClientInfo.Version, MaxNameBytes)); err != nil {
				return nil, err
			}
		}
		return map[string]any{"version": Version, "capabilities": map[string]bool{
			"threads": true, "turns": true, "approvals": true, "streaming": true, "persistence": true}}, nil
	case "thread.create":
		return s.threadCreate(req.Params)
	case "thread.list":
		var p struct{}
		if err := params(req.Params, &p); err != nil {
			return nil, err
		}
		threads := s.threadList()
		return streamer(func(w *bufio.Writer) {
			w.WriteString(`{"threads":[`)
			for i, t := range threads {
				if i > 0 {
					w.WriteByte(',')
				}
				b, _ := json.Marshal(t)
				w.Write(b)
			}
			w.WriteString("]}")
		}), nil
	case "thread.get":
		return s.threadGet(req.Params)
	case "turn.start":
		return s.turnStart(ctx, req.Params)
	case "turn.cancel":
		return s.turnCancel(req.Params)
	case "approval.respond":
		return s.approvalRespond(req.Params)
	case "thread.update":
		return s.threadUpdate(req.Params)
	case "thread.turns":
		return s.threadTurns(req.Params)
	case "thread.fork":
		return s.threadFork(ctx, req.Params)
	case "thread.rollback":
		return s.threadRollback(ctx, req.Params)
	case "turn.steer":
		return s.turnSteer(ctx, req.Params)
	case "plan.decide":
		return s.planDecide(req.Params)
	case "usage.get":
		return s.usageGet(req.Params)
	}
	return nil, errorf(CodeMethodNotFound, fmt.Sprintf("method not found: %q (initialize, thread.create, thread.list, thread.get, turn.start, turn.cancel, approval.respond; extensions: thread.update, thread.turns, thread.fork, thread.rollback, turn.steer, plan.decide, usage.get)", clip(req.Method)))
}

func nowMS() int64 { return time.Now().UnixMilli() }

func (s *Server) threadCreate(raw json.RawMessage) (any, *Error) {
	var p struct {
		Title     string `json:"title"`
		Directory string `json:"directory"`
		Isolation string `json:"isolation"`
		Base      string `json:"base"`
	}
	if err := params(raw, &p); err != nil {
		return nil, err
	}
	if err := firstTooLong(tooLong("title", p.Title, MaxTitleBytes), tooLong("directory", p.Directory, MaxPathBytes),
		tooLong("base", p.Base, MaxTitleBytes)); err != nil {
		return nil, err
	}
	if p.Isolation != "" && p.Isolation != session.IsolationWorktree {
		return nil, errorf(CodeInvalidParams, `invalid params: isolation: want "worktree" or none`)
	}
	if p.Base != "" && p.Isolation == "" {
		return nil, errorf(CodeInvalidParams, `invalid params: base needs isolation "worktree"`)
	}
	dir := s.opts.Cwd
	if p.Directory != "" {
		d := p.Directory
		if !filepath.IsAbs(d) {
			d = filepath.Join(s.opts.Cwd, d)
		}
		real, err := s.h.ResolveRoot(d)
		if err != nil {
			return nil, errorf(CodeInvalidParams, "invalid params: directory: "+err.Error())
		}
		dir = real
	}
	if p.Isolation != "" {
		// The session is made at the first turn: check now what would
		// refuse it then (not a git repository, no such base).
		if err := s.h.CheckWorktree(context.Background(), dir, p.Base); err != nil {
			return nil, errorf(CodeInvalidParams, "invalid params: isolation: "+err.Error())
		}
	}
	now := nowMS()
	m := meta{Thread: Thread{ThreadID: uuid.NewString(), Title: p.Title, Directory: dir, Time: threadTime{Created: now, Updated: now},
		Isolation: p.Isolation, Base: p.Base}, Store: storeSession}
	t := &thread{dir: filepath.Join(s.root, m.ThreadID), meta: m, next: 1}
	if err := t.saveMeta(); err != nil {
		return nil, errorf(CodeInternalError, "internal error: "+err.Error())
	}
	s.mu.Lock()
	s.threads[m.ThreadID] = t
	s.mu.Unlock()
	return deferred{result: map[string]any{"thread": m.Thread}, then: func() {
		s.notify(t, "thread.created", map[string]any{"threadId": m.ThreadID, "thread": m.Thread})
	}}, nil
}

func (t *thread) saveMeta() error {
	if err := os.MkdirAll(t.dir, 0o700); err != nil {
		return err
	}
	b, err := json.MarshalIndent(t.meta, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(t.dir, "meta.json"), append(b, '\n'), nil)
}

// events opens the thread's events.jsonl (the caller holds t.mu).
func (t *thread) events() (*session.EventLog, error) {
	if t.log == nil {
		l, err := session.OpenEventLog(filepath.Join(t.dir, "events.jsonl"))
		if err != nil {
			return nil, err
		}
		t.log = l
	}
	return t.log, nil
}

func (s *Server) threadList() []Thread {
	s.mu.Lock()
	out := make([]Thread, 0, len(s.threads))
	for _, t := range s.threads {
		t.mu.Lock()
		out = append(out, t.meta.Thread)
		t.mu.Unlock()
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Time.Updated != out[j].Time.Updated {
			return out[i].Time.Updated > out[j].Time.Updated
		}
		return out[i].ThreadID < out[j].ThreadID
	})
	return out
}

func (s *Server) thread(raw json.RawMessage) (*thread, *Error) {
	var p struct {
		ThreadID string `json:"threadId"`
	}
	if err := params(raw, &p); err != nil {
		return nil, err
	}
	if p.ThreadID == "" {
		return nil, errorf(CodeInvalidParams, "invalid params: threadId is required")
	}
	if err := tooLong("threadId", p.ThreadID, MaxNameBytes); err != nil {
		return nil, err
	}
	s.mu.Lock()
	t := s.threads[p.ThreadID]
	s.mu.Unlock()
	if t == nil {
		return nil, errorf(CodeThreadNotFound, "thread not found: "+p.ThreadID)
	}
	return t, nil
}

// threadGet answers {thread, events} straight from the event log, one
// event at a time: a 100k-event history is never held in memory, let
// alone twice. The thread is held meanwhile, so no notification of it
// is stored (and sent) while its history is written.
func (s *Server) threadGet(raw json.RawMessage) (any, *Error) {
	t, err := s.thread(raw)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	var lerr error
	if t.meta.Store != storeSession {
		_, lerr = t.events()
	}
	t.mu.Unlock()
	if lerr != nil {
		return nil, errorf(CodeInternalError, "internal error: "+lerr.Error())
	}
	if t.meta.Store == storeSession {
		return s.history(t), nil
	}
	return streamer(func(w *bufio.Writer) {
		t.mu.Lock()
		defer t.mu.Unlock()
		writeHistory(w, t, func(write func([]byte)) {
			for rec, err := range t.log.Records(0) {
				if err != nil {
					s.log.Error().Err(err).Msg("thread.get: reading the event log failed; the answer is cut short")
					break
				}
				write(rec.Event)
			}
		})
	}), nil
}

// notify appends a notification to the thread's events.jsonl (its seq is
// the line's) and sends it. It returns the seq.
func (s *Server) notify(t *thread, method string, p map[string]any) int64 {
	t.mu.Lock()
	if t.meta.Store == storeSession {
		// Stored once: a turn's notification is rendered again from
		// the session's log, the thread's own is kept in meta.json.
		seq := t.next
		t.next++
		p["seq"] = seq
		if noteMethods[method] {
			t.meta.Notes = append(t.meta.Notes, noteLine(seq, method, p))
			if err := t.saveMeta(); err != nil {
				s.log.Error().Err(err).Msg("notification not stored: meta.json not saved")
			}
		}
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": p})
		if t.buffering {
			t.pending = append(t.pending, b)
			t.mu.Unlock()
			return seq
		}
		t.mu.Unlock()
		_ = s.out.write(b)
		return seq
	}
	l, err := t.events()
	if err != nil {
		t.mu.Unlock()
		s.log.Error().Err(err).Msg("notification not stored")
		return 0
	}
	seq := l.LastSeq() + 1
	p["seq"] = seq
	stored, _ := json.Marshal(map[string]any{"method": method, "params": p})
	if _, err := l.Append(stored); err != nil {
		s.log.Error().Err(err).Msg("notification not stored")
	}
	t.mu.Unlock()
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": p})
	_ = s.out.write(b)
	return seq
}

// engineFor maps a model's providerID to an engine; "" keeps the
// thread's (or the server's default). A providerID is any engine the
// harness has (the built-in ones, an engines file's entries) or one of
// its aliases (harness.Config.Aliases: native, claude, openai).
func engineFor(h *harness.Harness, providerID string) (string, *Error) {
	if providerID == "" {
		return "", nil
	}
	name, err := h.EngineName(providerID)
	if err != nil {
		return "", errorf(CodeInvalidParams, fmt.Sprintf("invalid params: model.providerID %q: want one of %s", providerID, strings.Join(h.EngineNames(), ", ")))
	}
	return name, nil
}

func (s *Server) turnStart(ctx context.Context, raw json.RawMessage) (any, *Error) {
	var p struct {
		ThreadID string `json:"threadId"`
		Input    []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"input"`
		Model *struct {
			ProviderID string `json:"providerID"`
			ModelID    string `json:"modelID"`
		} `json:"model"`
		Agent string `json:"agent"`
		// 004's per-turn TurnOpts (an extension of turn.start): this
		// turn's alone, narrowing only (harness.TurnOptions).
		SystemPromptAppend       string   `json:"systemPromptAppend"`
		ToolsOverride            string   `json:"toolsOverride"`
		DisallowedToolsOverride  []string `json:"disallowedToolsOverride"`
		AutoApproveToolsOverride []string `json:"autoApproveToolsOverride"`
		// Queue (an extension, issue 32): on a busy thread the text is
		// queued in the session's prompt queue instead of -32002.
		Queue bool `json:"queue"`
	}
	if err := params(raw, &p); err != nil {
		return nil, err
	}
	t, terr := s.thread(raw)
	if terr != nil {
		return nil, terr
	}
	var texts []string
	size := 0
	for _, in := range p.Input {
		if in.Type != "text" {
			return nil, errorf(CodeInvalidParams, fmt.Sprintf("invalid params: input type %q: only text is supported", clip(in.Type)))
		}
		texts = append(texts, in.Text)
		size += len(in.Text) + 2
	}
	if size-2 > MaxInputBytes { // the text items joined by blank lines
		return nil, errorf(CodeInvalidParams, fmt.Sprintf("invalid params: input is %d bytes, over the limit of %d", size-2, MaxInputBytes))
	}
	if err := tooLong("agent", p.Agent, MaxNameBytes); err != nil {
		return nil, err
	}
	if p.Model != nil {
		if err := firstTooLong(tooLong("model.providerID", p.Model.ProviderID, MaxNameBytes),
			tooLong("model.modelID", p.Model.ModelID, MaxNameBytes)); err != nil {
			return nil, err
		}
	}
	text := strings.Join(texts, "\n\n")
	if strings.TrimSpace(text) == "" {
		return nil, errorf(CodeInvalidParams, "invalid params: input needs a non-empty text item")
	}
	eng, model := "", ""
	if p.Model != nil {
		var eerr *Error
		if eng, eerr = engineFor(s.h, p.Model.ProviderID); eerr != nil {
			return nil, eerr
		}
		model = p.Model.ModelID
	}

	t.mu.Lock()
	if t.turn != nil && p.Queue {
		id := t.meta.SessionID
		t.mu.Unlock()
		return s.enqueue(id, text)
	}
	if t.turn != nil {
		t.mu.Unlock()
		return nil, errorf(CodeTurnBusy, "turn busy: thread "+t.meta.ThreadID+" has a turn running ("+t.turn.turn.TurnID+")")
	}
	if t.meta.SessionID != "" {
		// The agent and the model may change from turn to turn (the
		// thread remembers the latest); the engine is the thread's.
		if eng != "" && eng != t.meta.Engine {
			t.mu.Unlock()
			return nil, errorf(CodeInvalidParams, fmt.Sprintf("invalid params: this thread runs on %s; start a new thread for %s", t.meta.Engine, eng))
		}
	} else {
		if err := s.newSession(t, p.Agent, eng, model); err != nil {
			t.mu.Unlock()
			return nil, err
		}
	}
	o := harness.TurnOptions{Persona: p.Agent, Model: model,
		SystemPromptAppend: p.SystemPromptAppend, ToolsOverride: p.ToolsOverride,
		DisallowedToolsOverride: p.DisallowedToolsOverride, AutoApproveToolsOverride: p.AutoApproveToolsOverride}
	ht, err := s.h.StartTurn(ctx, harness.TurnRequest{SessionID: t.meta.SessionID, Message: text, Options: o, Queue: p.Queue})
	if q := (*harness.Queued)(nil); errors.As(err, &q) {
		t.mu.Unlock() // another door's turn runs: queued behind it
		return queuedResult(q), nil
	}
	if err != nil {
		t.mu.Unlock()
		return nil, coreError(fmt.Errorf("the turn could not start: %w", err))
	}
	if (p.Agent != "" && p.Agent != t.meta.Agent) || (model != "" && model != t.meta.Model) {
		if p.Agent != "" {
			t.meta.Agent = p.Agent
		}
		if model != "" {
			t.meta.Model = model
		}
		if err := t.saveMeta(); err != nil {
			s.log.Error().Err(err).Msg("meta.json not saved")
		}
	}
	at := &activeTurn{turn: Turn{TurnID: "turn_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:16], ThreadID: t.meta.ThreadID,
		Status: "running", Time: turnTime{Started: nowMS()}}, done: make(chan struct{})}
	t.turn = at
	prev := t.tail // the last turn's end may not be sent yet: this one's notifications follow it
	t.tail = at.done
	t.mu.Unlock()
	s.turns.Add(1)
	return deferred{result: map[string]any{"turnId": at.turn.TurnID}, then: func() {
		go s.follow(t, at, ht, prev)
	}}, nil
}

// enqueue queues text in session id's prompt queue (turn.start with
// queue on a busy thread).
func (s *Server) enqueue(id, text string) (any, *Error) {
	q, err := s.h.Enqueue(id, text)
	if err != nil {
		return nil, coreError(fmt.Errorf("the text could not be queued: %w", err))
	}
	return queuedResult(q), nil
}

func queuedResult(q *harness.Queued) map[string]any {
	return map[string]any{"queued": true, "promptId": q.PromptID, "position": q.Position}
}

func (s *Server) turnCancel(raw json.RawMessage) (any, *Error) {
	t, err := s.thread(raw)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	at, sid := t.turn, t.meta.SessionID
	t.mu.Unlock()
	if at == nil {
		return nil, errorf(CodeTurnNotFound, "turn not found: thread "+t.meta.ThreadID+" has no turn running")
	}
	if ierr := s.h.Interrupt(sid); ierr != nil && !errors.Is(ierr, harness.ErrNotRunning) {
		return nil, coreError(ierr)
	}
	return map[string]any{"ok": true}, nil
}

func (s *Server) approvalRespond(raw json.RawMessage) (any, *Error) {
	var p struct {
		RequestID string `json:"requestId"`
		Decision  string `json:"decision"`
	}
	if err := params(raw, &p); err != nil {
		return nil, err
	}
	if err := firstTooLong(tooLong("requestId", p.RequestID, MaxNameBytes), tooLong("decision", p.Decision, MaxNameBytes)); err != nil {
		return nil, err
	}
	decision := map[string]string{"once": "allow", "always": "always", "reject": "deny"}[p.Decision]
	if decision == "" {
		return nil, errorf(CodeInvalidParams, fmt.Sprintf("invalid params: decision %q: want once, always or reject", p.Decision))
	}
	s.mu.Lock()
	tid := s.approvals[p.RequestID]
	t := s.threads[tid]
	s.mu.Unlock()
	if t == nil {
		return nil, errorf(CodeApprovalMissing, "approval not found: "+p.RequestID)
	}
	t.mu.Lock()
	sid := t.meta.SessionID
	t.mu.Unlock()
	if err := s.h.Approve(sid, p.RequestID, harness.ApprovalAnswer{Decision: decision}); err != nil {
		return nil, coreError(fmt.Errorf("%s: %w", p.RequestID, err))
	}
	return map[string]any{"ok": true}, nil
}
