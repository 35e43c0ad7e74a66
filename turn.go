package harness

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/internal/secrets"
	"github.com/chirality/harness/logging"
	"github.com/chirality/harness/persona"
	"github.com/chirality/harness/session"
	"github.com/rs/zerolog"
)

// Plan is how a session's next turn will be run: the persona, the saved
// system prompt file and the CLI options derived from them and from the
// server configuration. The client has no say in it.
type Plan struct {
	Session *session.Session
	// Persona is nil for a session without one.
	Persona *persona.Persona
	// Engine names the engine that runs the turn.
	Engine string
	// PromptFile is the saved system prompt (--append-system-prompt-file).
	PromptFile string
	// Request is what the engine is started with (Message, Approver and
	// Logger are filled in by StartTurn).
	Request engine.Request
	// Rules are the session's "always" rules a person gave (the trust
	// record's, not the session file's).
	Rules []string
	// Trust says what the turn does not honour until a person trusts it
	// (trust:required events); Untrusted are the project MCP servers left
	// out, as session:init reports them.
	Trust     []event.TrustRequired
	Untrusted []event.MCPServerStatus
}

// plan builds the Plan of s. With rebuild the prompt is assembled and
// saved again (what a turn does); without it the saved file is reused
// when there is one (what `harness replay` does, to re-run exactly what
// the model was given).
//
// s is the caller's copy: what the session file says beyond what a
// person chose for it is put back there (see trustSession).
func (h *Harness) plan(s *session.Session, rebuild bool) (*Plan, error) {
	var notices []event.TrustRequired
	rules, sn := h.trustSession(s)
	if sn != nil {
		notices = append(notices, *sn)
	}
	var p *persona.Persona
	if s.Persona != "" {
		var err error
		var pn *event.TrustRequired
		if p, pn, err = h.loadPersona(s.ProjectRoot, s.Persona); err != nil {
			return nil, mapPersonaErr(err)
		}
		if pn != nil {
			notices = append(notices, *pn)
		}
	}
	mode, err := persona.ParseMode(s.Mode)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidMode, err)
	}
	path := persona.PromptPath(s.ProjectRoot, s.ID)
	var prompt string
	if _, statErr := os.Stat(path); rebuild || statErr != nil {
		if prompt, err = persona.BuildSystemPrompt(s.ProjectRoot, p, mode); err != nil {
			return nil, err
		}
		// Unchanged (the usual case between turns), the saved file is
		// left alone: a save is two fsyncs on the turn's start path.
		if b, rerr := os.ReadFile(path); rerr != nil || string(b) != prompt {
			if path, err = persona.SavePrompt(s.ProjectRoot, s.ID, prompt); err != nil {
				return nil, err
			}
		}
	} else {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		prompt = string(b)
	}
	perm, err := h.cfg.permissionModeFor(p, s.PermissionMode)
	if err != nil {
		return nil, err
	}
	effort := h.cfg.Effort
	if s.Effort != "" {
		effort = s.Effort
	}
	name := h.sessionEngine(s)
	req := engine.Request{
		SessionKey:       s.ID,
		Cwd:              s.Dir(), // a worktree session's worktree, else the project root
		Resume:           s.ConversationID,
		SystemPrompt:     prompt,
		SystemPromptFile: path,
		PermissionMode:   perm,
		MaxTurns:         h.cfg.maxTurns(p, mode),
		Effort:           effort,
		AllowedTools:     slices.Clone(h.cfg.AllowedTools),
		Env:              slices.Clone(h.cfg.ChildEnv),
		StateDir:         session.StateDir(s.ProjectRoot, s.ID),
		Model:            s.Model,
		Protected:        h.protectedPaths(s),
	}
	if err := h.sandboxRequest(s, name, &req); err != nil {
		return nil, err
	}
	mcpNotices, untrusted, err := []event.TrustRequired(nil), []event.MCPServerStatus(nil), error(nil)
	if req.MCP, mcpNotices, untrusted, err = h.mcpServers(s.ProjectRoot, p); err != nil {
		return nil, err
	}
	notices = append(notices, mcpNotices...)
	if pd := s.Pending; pd != nil {
		// A fork's or a rewind's cut, waiting for this turn.
		req.Resume, req.ResumeAt, req.Fork = pd.Resume, pd.ResumeAt, pd.Fork
	}
	req.PromptChanged = req.Resume != "" && s.PromptHash != "" && s.PromptHash != promptHash(prompt)
	if p != nil {
		req.Tools = p.Tools
		req.DisallowedTools = p.DisallowedTools
		req.AllowedTools = append(slices.Clone(p.AutoApproveTools), req.AllowedTools...)
		if req.Model == "" {
			req.Model = p.Model
		}
	}
	return &Plan{Session: s, Persona: p, Engine: name, PromptFile: path, Request: req,
		Rules: rules, Trust: notices, Untrusted: untrusted}, nil
}

// ReplayPlan returns the Plan `harness replay` runs for session id: the
// saved prompt file, --resume of the stored Claude session, the persona's
// flags and the server's policy, exactly as the gateway would run it.
func (h *Harness) ReplayPlan(s *session.Session) (*Plan, error) {
	return h.plan(s, false)
}

// Turn is a turn started by StartTurn. It runs on a goroutine of the
// Harness, not of the caller: it goes on when the caller stops reading,
// until it ends, Interrupt or Kill stops it, or the Harness shuts down.
// Events reads it; Wait reads it to its end and says how it ended.
type Turn struct {
	// SessionID is the harness session ("" for an ephemeral turn).
	SessionID string
	// StartSeq is the seq of the last event stored before this turn:
	// Follow(ctx, SessionID, StartSeq) yields this turn's events (and,
	// unlike Events, what the session stores after them). 0 for an
	// ephemeral turn.
	StartSeq int64
	lt       *liveTurn  // a session's turn
	eph      *ephemeral // an ephemeral turn (ephemeral.go)
	h        *Harness
}

// Done is closed when the turn has ended, its events are stored and the
// session is saved (an ephemeral turn: when its engine's turn is read to
// the end and closed).
func (t *Turn) Done() <-chan struct{} {
	if t.eph != nil {
		return t.eph.done
	}
	return t.lt.done
}

// Err returns, after Done, nil when the turn completed and otherwise how
// it ended (the engine's Turn.Err, or an *engine.TurnError for what kept a resume
// fallback from starting).
func (t *Turn) Err() error {
	select {
	case <-t.Done():
	default:
		return nil
	}
	if t.eph != nil {
		return t.eph.err
	}
	return t.lt.err
}

// liveTurn is the Harness's record of a running turn (or, with deleting,
// of a session being deleted).
type liveTurn struct {
	id       string
	deleting bool
	broker   *broker
	done     chan struct{}
	err      error // set before done is closed
	// gone is made (h.mu) when the turn's process:exit is about to be
	// stored (Harness.exiting) and closed when the turn is forgotten: a
	// turn that starts meanwhile waits for it (occupy). forgotten says it
	// was closed.
	gone      chan struct{}
	forgotten bool

	mu   sync.Mutex
	cur  engine.Turn
	stop int // 0, 1 interrupt, 2 kill
	// asks is the turn's Approver (nil when the turn asks nobody); run
	// reads the turn. Both are set once, before the engine starts.
	asks *approvals
	run  *runner
	// unlockFile lets the session's turn lock go (cutturn.go); nil for a
	// reservation.
	unlockFile func()
}

// approvals returns the turn's Approver, or nil.
func (lt *liveTurn) approvals() *approvals {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	return lt.asks
}

// runner returns the turn's runner, or nil.
func (lt *liveTurn) runner() *runner {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	return lt.run
}

func (lt *liveTurn) interrupt() { lt.request(1) }
func (lt *liveTurn) kill()      { lt.request(2) }

func (lt *liveTurn) request(level int) {
	if a := lt.approvals(); level > 0 && a != nil {
		// A stopped turn answers nothing more: its open questions are
		// denied first, so the agent is not left waiting on them.
		a.closeAll(event.ByInterrupt)
	}
	lt.mu.Lock()
	defer lt.mu.Unlock()
	if level > lt.stop {
		lt.stop = level
	}
	if lt.cur == nil || lt.stop == 0 {
		return
	}
	if lt.stop == 2 {
		_ = lt.cur.Kill()
	} else {
		_ = lt.cur.Interrupt()
	}
}

// attach makes t the current attempt, applying a stop already requested.
func (lt *liveTurn) attach(t engine.Turn) {
	lt.mu.Lock()
	lt.cur = t
	lt.mu.Unlock()
	lt.request(0)
}

func (lt *liveTurn) stopRequested() bool {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	return lt.stop > 0
}

// TurnOptions change what a session runs with, from this turn on: the
// session keeps them for its later turns. A zero field keeps the
// session's.
//
// The next turn is planned with them as a session created with them
// would be (the persona's system prompt, tools and model; the model), on
// the session's engine and conversation. Whether an agent honours a new
// system prompt inside a resumed conversation is the engine's: the native
// loop sends it with every request.
type TurnOptions struct {
	// Persona is a persona ID (agents/AGENT_<ID>.md or a built-in one).
	Persona string
	// Model is the model to ask the engine for.
	Model string

	// The rest are 004's per-turn TurnOpts: this turn's alone, the
	// session keeps none of them. The overrides only narrow what the
	// persona and the server allow (turnopts.go has the exact rules).

	// SystemPromptAppend is added after the persona's system prompt for
	// this turn (at most MaxSystemPromptAppend bytes).
	SystemPromptAppend string
	// ToolsOverride is the tools that exist for this turn, in --tools
	// form ("Read,Grep"); "" or "default" = the persona's. Each name must
	// be one of the persona's tools when it lists them (else ErrWidens).
	ToolsOverride string
	// DisallowedToolsOverride are removed too, besides the persona's.
	DisallowedToolsOverride []string
	// AutoApproveToolsOverride, when not nil, are the turn's only
	// auto-approvals: a subset of the persona's and Config.AllowedTools
	// (else ErrWidens).
	AutoApproveToolsOverride []string

	// dequeued is the queued prompt this turn runs (queue.go): its
	// prompt:dequeued opens the turn.
	dequeued string
}

// startTurn is StartTurn for a session's turn: it first sets the
// session's persona and model to o's (when given and different) and saves
// it, and runs the turn with o's per-turn options.
func (h *Harness) startTurn(ctx context.Context, id, message string, o TurnOptions) (*Turn, error) {
	if strings.TrimSpace(message) == "" {
		return nil, ErrEmptyMessage
	}
	if !session.ValidID(id) {
		return nil, fmt.Errorf("%w %q", ErrInvalidID, id)
	}
	// Held until the turn's runner owns the session's copy: an update,
	// fork or rewind in between is either seen here or refused (ErrBusy),
	// never lost under the turn's save.
	unlock := h.lockSession(id)
	locked := true
	defer func() {
		if locked {
			unlock()
		}
	}()
	// A turn of the session that runs now may end before this one
	// occupies the session (occupy waits for one that is ending), its
	// last save (finalize) after s is read: s is read again then.
	h.mu.Lock()
	ending := h.live[id] != nil
	h.mu.Unlock()
	s, err := h.Session(id)
	if err != nil {
		return nil, err
	}
	budget, err := h.budgetFor(s) // budget.go: a spent budget refuses the turn
	if err != nil {
		return nil, err
	}
	lt := &liveTurn{id: id, broker: newBroker(h.cfg.SubscriberBuffer), done: make(chan struct{})}
	if err := h.occupy(lt); err != nil {
		return nil, err
	}
	// A turn that occupied the session and does not run: a queued prompt
	// whose drain found the session busy meanwhile was left for this
	// turn's end (run's kickQueue), which never comes; it is started
	// now. A queued prompt's own turn is not: drainQueue goes on itself.
	unstarted := func() {
		h.release(lt)
		if o.dequeued == "" {
			h.kickQueue(id)
		}
		h.wg.Done()
	}
	if ending {
		// That turn saved the session as it ended (its cost, its
		// conversation): this turn's saves of the copy read before would
		// undo that save. (No other turn can have run in between: it
		// would need the session's lock, which this start holds.)
		if s, err = h.Session(id); err == nil {
			budget, err = h.budgetFor(s)
		}
		if err != nil {
			unstarted()
			return nil, err
		}
	}
	if lt.unlockFile, err = h.lockTurn(s); err != nil { // cutturn.go: ErrBusy while another process runs a turn of s
		unstarted()
		return nil, err
	}
	started := false
	defer func() {
		if !started {
			unstarted()
		}
	}()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	changed := false
	if (o.Persona != "" && o.Persona != s.Persona) || (o.Model != "" && o.Model != s.Model) {
		if o.Persona != "" && o.Persona != s.Persona {
			p, err := persona.Load(s.ProjectRoot, o.Persona)
			if err != nil {
				return nil, mapPersonaErr(err)
			}
			s.Persona = o.Persona
			h.choose(s, p) // a person switched the session to it
		}
		if o.Model != "" {
			s.Model = o.Model
		}
		changed = true
	}

	plan, err := h.plan(s, true)
	if err != nil {
		return nil, err
	}
	if err := h.applyTurnOptions(plan, s.PromptHash, o); err != nil {
		return nil, err
	}
	if err := budget.addPersona(h, s, plan.Persona); err != nil { // budget.go: the persona's, as a person trusted it
		return nil, err
	}
	if changed {
		// Saved once the turn's options are known to be good: a refused
		// turn changes nothing.
		if err := h.store.Save(s); err != nil {
			return nil, mapStoreErr(err)
		}
	}
	eng, err := h.engineFor(plan.Engine)
	if err != nil {
		return nil, err
	}
	elog, err := h.store.EventLog(id)
	if err != nil {
		return nil, mapStoreErr(err)
	}
	plog := h.projectLog(s.ProjectRoot)
	h.noteRoot(s.ProjectRoot)
	req := plan.Request
	req.Message, req.Logger = message, plog // the engine's entries (spawn, stderr, exit) go to the project's log too
	plog.Info().Str("sessionId", id).Str("userMessage", logging.Truncate(message, 200)).Str("persona", s.Persona).Str("mode", s.Mode).
		Str("engine", plan.Engine).Str("permissionMode", req.PermissionMode).Int("maxTurns", req.MaxTurns).
		Msg(logging.EventTurnStart)
	if req.Resume != "" {
		plog.Info().Str("sessionId", id).Str("claudeSessionId", req.Resume).Msg(logging.EventResumeAttempt)
	}
	if s.Title == "" {
		s.Title = titleOf(message)
	}
	startSeq := elog.LastSeq()
	r := &runner{h: h, lt: lt, eng: eng, s: s, req: req, elog: elog, log: plog, started: time.Now(), tools: map[string]string{},
		ruleList: slices.Clone(plan.Rules), untrusted: plan.Untrusted, budget: budget}
	var asks *approvals
	if h.cfg.Approvals && engine.AsksApproval(req.PermissionMode) {
		asks = &approvals{r: r, timeout: h.cfg.ApprovalTimeout, byID: map[string]*pendingApproval{}}
		r.req.Approver = asks
		if o.hasTurnOverrides() {
			r.req.Approver = narrowedApprover{inner: asks, tools: r.req.Tools, deny: r.req.DisallowedTools}
		}
	}
	lt.mu.Lock()
	lt.run, lt.asks = r, asks
	lt.mu.Unlock()
	unlock()
	locked = false
	// The turn's first event, before the engine can say anything; then
	// what the turn does not honour until a person trusts it.
	if o.dequeued != "" {
		r.emit(event.Event{Type: event.TypePromptDequeued, Dequeued: &event.PromptDequeued{PromptID: o.dequeued, Reason: event.DequeuedStarted}})
	}
	r.emit(event.Event{Type: event.TypeUserMessage, Text: message})
	for i := range plan.Trust {
		n := plan.Trust[i]
		plog.Warn().Str("sessionId", id).Str("kind", n.Kind).Str("name", n.Name).Str("path", n.Path).Msg("trust:required " + n.Message)
		r.emit(event.Event{Type: event.TypeTrustRequired, Trust: &n})
	}
	if seq := elog.LastSeq(); seq > startSeq {
		h.snapshotTurn(ctx, s, seq, plog) // the files before the turn (checkpoints.go); never stops it
	}
	var et engine.Turn
	if err = h.detachWorktree(s, r.req); err == nil { // a sandboxed agent commits on a detached HEAD (sandbox.go)
		et, err = h.startEngineTurn(eng, r.req)
	}
	if err != nil {
		plog.Error().Str("sessionId", id).Str("engine", plan.Engine).Err(err).Msg("turn could not start")
		// The message is in the log: end the turn there too, so the log
		// never holds a turn without its end.
		r.emit(event.Event{Type: event.TypeSessionError, Error: &event.SessionError{Error: "the turn could not start: " + err.Error(), Kind: event.ErrorStart}})
		r.emit(event.Event{Type: event.TypeProcessExit, Exit: engine.TurnExit(false, 0, "")}) // no process ended: 1
		return nil, err                                                                       // engine's error set: ErrBusy, ErrClosed, ErrUnsupported are the core's
	}
	lt.attach(et)
	started = true
	go r.run(et)
	return &Turn{SessionID: id, StartSeq: startSeq, lt: lt, h: h}, nil
}

// forget removes a live turn from the running set. Safe to call twice.
func (h *Harness) forget(lt *liveTurn) {
	h.mu.Lock()
	if h.live[lt.id] == lt {
		delete(h.live, lt.id)
	}
	if lt.gone != nil && !lt.forgotten {
		lt.forgotten = true
		close(lt.gone)
	}
	h.mu.Unlock()
}

// release forgets a live turn and wakes its readers.
func (h *Harness) release(lt *liveTurn) {
	if lt.unlockFile != nil {
		lt.unlockFile()
	}
	h.forget(lt)
	lt.broker.finish()
	close(lt.done)
}

// runner consumes one harness turn: one CLI attempt, or two with the
// resume fallback.
type runner struct {
	h       *Harness
	lt      *liveTurn
	eng     engine.Engine
	req     engine.Request
	elog    *session.EventLog
	log     *zerolog.Logger
	started time.Time
	tools   map[string]string // tool use id → name, for the logs

	emitMu sync.Mutex // the runner and the turn's approvals both emit
	buf    []byte
	// The streamed block being scrubbed (see emit): its deltas' type and
	// parent, and what is held back of its text. Under emitMu.
	stream       secrets.Stream
	streamType   event.Type
	streamParent string

	smu       sync.Mutex // s is saved by the runner and by approvals ("always")
	s         *session.Session
	finalized bool
	saving    sync.WaitGroup // saveAside's saves in flight
	logs      chan logLine   // logAside's lines, written in order by one goroutine
	logsEnd   chan struct{}  // closed when that goroutine has written them all

	rulesMu  sync.Mutex
	ruleList []string // the rules a person gave, readable while s is being saved

	untrusted []event.MCPServerStatus // project MCP servers left out, for session:init

	exited bool // the turn's process:exit is emitted; under emitMu

	planMu     sync.Mutex
	planInputs map[string]json.RawMessage // tool use id → input of the plan tool (plan.go)
	usage      turnUsage                  // the turn's usage:update so far (usageturn.go)
	budget     *turnBudget                // what the turn may spend (budget.go)
}

func (r *runner) run(t engine.Turn) {
	defer r.h.wg.Done()
	defer logging.LogPanic(r.log, r.s.ID) // an unhandled error: in harness.log with its stack, then it crashes as before
	var err error
	for t != nil {
		var next engine.Turn
		next, err = r.attempt(t)
		t = next
	}
	r.emitMu.Lock()
	r.flushLocked() // an engine that broke its contract (no process:exit) still loses no text
	r.emitMu.Unlock()
	r.finalize()
	r.lt.err = err
	r.h.release(r.lt)
	r.h.kickQueue(r.s.ID) // the session's next queued prompt (queue.go)
}

// finalize saves the session and takes the turn out of the running set.
// It runs just before the turn's last process:exit is published, so a
// client that has seen process:exit finds the session saved and idle (its
// next turn is not refused with 409). Safe to call twice.
func (r *runner) finalize() {
	if r.finalized {
		return
	}
	r.finalized = true
	if testHookFinalize != nil {
		testHookFinalize()
	}
	r.drainLogs()
	r.saving.Wait() // the turn's save comes last
	r.smu.Lock()
	r.saveLocked("turn")
	r.smu.Unlock()
	if a := r.lt.approvals(); a != nil {
		r.h.rememberAnswered(r.s.ID, a.ids())
	}
	if r.req.Sandbox {
		r.h.settleWorktree(context.Background(), r.s) // the agent's commits, onto its branch (sandbox.go)
	}
	r.h.forget(r.lt)
	r.h.Prewarm(r.s.ID) // the next turn's agent, while the user reads this one
}

// testHookFinalize, when set by a test, runs as a turn's finalize
// begins: after its process:exit is stored, before it is forgotten.
var testHookFinalize func()

// logAside writes a log line of the turn (e, its fields taken now, and
// msg) beside the event path: the project's log is one file that every
// turn of the project writes, a line at a time under its lock, and when
// many turns start at once a line waited there for milliseconds with the
// events behind it. The lines are written in order by one goroutine, and
// all of them before the turn's process:exit is published (finalize). Only
// the runner's goroutine calls it.
func (r *runner) logAside(e *zerolog.Event, msg string) {
	if e == nil {
		return // the level is off
	}
	if r.finalized {
		e.Msg(msg)
		return
	}
	if r.logs == nil {
		r.logs, r.logsEnd = make(chan logLine, 64), make(chan struct{})
		logs, end := r.logs, r.logsEnd
		go func() {
			defer close(end)
			for l := range logs {
				l.e.Msg(l.msg)
			}
		}()
	}
	r.logs <- logLine{e, msg}
}

type logLine struct {
	e   *zerolog.Event
	msg string
}

// drainLogs waits until logAside's lines are written (finalize).
func (r *runner) drainLogs() {
	if r.logs != nil {
		close(r.logs)
		<-r.logsEnd
		r.logs = nil
	}
}

// saveAside saves the session beside the event path: a save is a write
// and two fsyncs (tens of ms on a busy disk), and the events behind
// session:init must not wait for it. finalize waits for it before the
// turn's own save, so the last save is the turn's.
func (r *runner) saveAside(why string) {
	r.saving.Add(1)
	go func() {
		defer r.saving.Done()
		r.smu.Lock()
		defer r.smu.Unlock()
		r.saveLocked(why)
	}()
}

// attempt reads one CLI run to its end. It returns the fallback attempt to
// read next, if the resume failed and a fresh session was started.
func (r *runner) attempt(t engine.Turn) (engine.Turn, error) {
	defer t.Close()
	fallback := false
	var heldExit *event.Event
	for t.Next() {
		ev := specEvent(t.Event()) // 004's UIEvent shape whatever the engine (uievent.go)
		switch ev.Type {
		case event.TypeSessionInit:
			r.smu.Lock()
			r.s.ConversationID = ev.Init.ConversationID
			// The conversation took the turn: a fork's or rewind's cut is
			// done, and it has been given this prompt.
			r.s.Pending = nil
			r.s.PromptHash = promptHash(r.req.SystemPrompt)
			if len(r.untrusted) > 0 {
				init := *ev.Init
				init.MCPServers = append(slices.Clone(init.MCPServers), r.untrusted...)
				ev.Init = &init
			}
			r.s.MCPServers = ev.Init.MCPServers
			r.smu.Unlock()
			r.usage.model = ev.Init.Model
			r.saveAside("session:init")
			r.logAside(r.log.Info().Str("sessionId", r.s.ID).Str("claudeSessionId", ev.Init.ConversationID).
				Str("model", ev.Init.Model).Strs("tools", ev.Init.Tools).Str("permissionMode", ev.Init.PermissionMode), logging.EventSessionInit)
		case event.TypeToolStart:
			r.tools[ev.ToolStart.ToolUseID] = ev.ToolStart.Name
			if ev.ToolStart.Name == PlanTool {
				r.notePlan(ev.ToolStart)
			}
			r.logAside(r.log.Info().Str("sessionId", r.s.ID).Str("toolName", ev.ToolStart.Name).
				Str("inputSummary", logging.Truncate(string(ev.ToolStart.Input), 200)), logging.EventToolStart)
		case event.TypeToolResult:
			r.logAside(r.log.Info().Str("sessionId", r.s.ID).Str("toolName", r.tools[ev.ToolResult.ToolUseID]).
				Bool("isError", ev.ToolResult.IsError).Int("contentLength", len(ev.ToolResult.Content)), logging.EventToolResult)
		case event.TypeUsageUpdate:
			var ok bool
			if ev, ok = r.usageEvent(ev); !ok {
				continue
			}
			r.checkBudget()
		case event.TypeRateLimit:
			ev = r.rateLimitEvent(ev)
		case event.TypeSessionComplete:
			r.completeUsage(ev.Complete.Usage, ev.Complete.CostUSD)
			r.smu.Lock()
			r.s.CostUSD += ev.Complete.CostUSD
			r.smu.Unlock()
			in, out := usageTokens(ev.Complete.Usage)
			r.logAside(r.log.Info().Str("sessionId", r.s.ID).Float64("costUsd", ev.Complete.CostUSD).Int("inputTokens", in).
				Int("outputTokens", out).Int("numTurns", ev.Complete.NumTurns).Int64("durationMs", ev.Complete.DurationMS).
				Dur("wall", time.Since(r.started)), logging.EventTurnComplete)
			ev = r.budgetEnd(ev) // budget.go: a turn that crossed its budget ends budget_exceeded
		case event.TypeSessionError:
			if ev.Error.CostUSD > 0 {
				r.completeUsage(nil, ev.Error.CostUSD)
			}
			if r.budget != nil && r.budget.crossed != nil && ev.Error.Kind != event.ErrorResumeNotFound {
				ev.Error = r.budget.budgetError(ev.Error)
			}
			if ev.Error.Kind == event.ErrorResumeNotFound && r.req.Resume != "" && !r.lt.stopRequested() {
				fallback = true
				r.log.Warn().Str("sessionId", r.s.ID).Str("claudeSessionId", r.req.Resume).
					Str("error", "the engine no longer has the conversation; starting a fresh one with the same message").Msg(logging.EventResumeFail)
				e := *ev.Error
				e.Error = "The " + r.eng.Name() + " engine no longer has conversation " + r.req.Resume +
					" (its storage was cleared, or the project moved); starting a fresh conversation with the same message"
				ev.Error = &e
			} else {
				r.log.Warn().Str("sessionId", r.s.ID).Str("kind", string(ev.Error.Kind)).Str("error", logging.Truncate(ev.Error.Error, 500)).
					Dur("wall", time.Since(r.started)).Msg("turn failed")
			}
		case event.TypeProcessExit:
			ev = r.budgetEnd(ev)
			if fallback {
				held := ev
				heldExit = &held // the turn is not over: one process:exit per turn
				continue
			}
			if a := r.lt.approvals(); a != nil {
				// No question outlives its turn in the log.
				a.closeAll(event.ByInterrupt)
			}
		}
		r.emit(ev)
	}
	err := t.Err()
	if !fallback {
		return nil, err
	}
	// The resume fallback: same message, fresh conversation.
	r.req.Resume, r.req.ResumeAt, r.req.Fork, r.req.PromptChanged = "", "", false, false
	if r.lt.stopRequested() {
		return nil, r.endWith(heldExit, event.ErrorInterrupted, "interrupted before a fresh conversation was started")
	}
	next, serr := r.eng.StartTurn(context.Background(), r.req)
	if serr != nil {
		r.log.Error().Str("sessionId", r.s.ID).Err(serr).Msg("fresh session after a failed resume could not start")
		return nil, r.endWith(heldExit, event.ErrorStart, "a fresh conversation could not be started: "+serr.Error())
	}
	r.lt.attach(next)
	return next, nil
}

// endWith ends a turn whose fallback did not run: a session:error, then
// the held process:exit.
func (r *runner) endWith(exit *event.Event, kind event.ErrorKind, msg string) error {
	r.emit(event.Event{Type: event.TypeSessionError, SessionID: r.s.ID,
		Error: &event.SessionError{Error: msg, Kind: kind}})
	if exit == nil {
		exit = &event.Event{Type: event.TypeProcessExit, SessionID: r.s.ID, Exit: engine.TurnExit(false, 0, "")}
	}
	r.emit(*exit)
	return &engine.TurnError{Kind: kind, Message: msg}
}

// emit stores ev in the event log, then publishes it: a reader that
// subscribes and then reads the log never misses an event. The turn's last
// process:exit is stored, then the turn is finalized, then it is
// published.
//
// Deltas (chat:delta, thinking:delta) go through the turn's
// secrets.Stream first, so a secret split across two deltas is scrubbed
// as in the whole text: the end of a delta that could be the start of a
// secret is held back and shown with the next delta of the same block.
// A block ends at a delta of another type or parent and at any other
// event (chat:complete, tool:start, session:error, process:exit…):
// what is held is emitted first, as a delta of its block, so no text is
// lost or reordered within its block. A delta held whole is not emitted.
func (r *runner) emit(ev event.Event) {
	r.emitMu.Lock()
	defer r.emitMu.Unlock()
	if ev.Type == event.TypeChatDelta || ev.Type == event.TypeThinkingDelta {
		if ev.Type != r.streamType || ev.ParentToolUseID != r.streamParent {
			r.flushLocked()
			r.streamType, r.streamParent = ev.Type, ev.ParentToolUseID
		}
		if ev.Text = r.stream.Write(ev.Text); ev.Text == "" {
			return
		}
	} else {
		r.flushLocked()
	}
	r.emitLocked(ev)
}

// flushLocked emits what the block's stream holds back; emitMu is held.
func (r *runner) flushLocked() {
	if tail := r.stream.Flush(); tail != "" {
		r.emitLocked(event.Event{Type: r.streamType, ParentToolUseID: r.streamParent, Text: tail})
	}
}

// emitLocked is emit after the stream; emitMu is held.
func (r *runner) emitLocked(ev event.Event) {
	ev.SessionID = r.req.SessionKey
	if ev.Time == 0 {
		// When it happened, stored with it: every reader of the event, and
		// every replay of the log, sees this time (not the time it is sent).
		ev.Time = time.Now().UnixMilli()
	}
	r.buf = ev.AppendJSON(r.buf[:0])
	if clean := secrets.ScrubJSON(r.buf); len(clean) != len(r.buf) || &clean[0] != &r.buf[0] {
		// A secret value (withheld from the agent, or its own key) was in
		// the event, an agent that ran `env` for one: it is neither stored
		// nor published, the typed event included.
		r.buf = clean
		var scrubbed event.Event
		if json.Unmarshal(clean, &scrubbed) == nil {
			ev = scrubbed
		}
	}
	if ev.Type == event.TypeProcessExit {
		r.h.exiting(r.lt) // a reader of the log sees it before finalize: the next turn's start waits for that
	}
	seq, err := r.elog.Append(r.buf)
	if err != nil {
		// Not stored: published without a seq so live readers still see
		// it; it cannot be replayed.
		r.log.Error().Str("sessionId", r.s.ID).Err(err).Str("type", string(ev.Type)).Msg("event could not be stored")
		seq = 0
	}
	if ev.Type == event.TypeProcessExit {
		r.exited = true
		r.finalize()
	}
	// The typed event travels with its JSON: in-process readers
	// (Turn.Wait) take it as it is, without decoding the line back.
	rec := &session.Record{Seq: seq, Event: session.WithSeq(seq, r.buf), Typed: &ev}
	r.lt.broker.publish(rec, isTerminal(ev.Type))
	r.h.taps.publish(*rec) // watch.go
}

func isTerminal(t event.Type) bool {
	return t == event.TypeSessionComplete || t == event.TypeSessionError || t == event.TypeProcessExit
}

// titleOf is a session's default title: the first line of its first
// message, at most 80 characters.
func titleOf(message string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(message), "\n")
	line = secrets.Scrub(strings.TrimSpace(line)) // stored in the session file
	if r := []rune(line); len(r) > 80 {
		line = string(r[:79]) + "…"
	}
	return line
}

// promptHash identifies a system prompt (session.Session.PromptHash).
func promptHash(prompt string) string {
	sum := sha256.Sum256([]byte(prompt))
	return hex.EncodeToString(sum[:8])
}

func usageTokens(raw json.RawMessage) (in, out int) {
	var u struct {
		In  int `json:"input_tokens"`
		Out int `json:"output_tokens"`
	}
	_ = json.Unmarshal(raw, &u)
	return u.In, u.Out
}
