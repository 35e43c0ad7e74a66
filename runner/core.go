package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/chirality/harness"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/event/fold"
	"github.com/chirality/harness/logging"
	"github.com/chirality/harness/session"
)

// Errors of this package, for callers to branch on with errors.Is (some
// are kinds of engine's error set, as the core's are).
var (
	// ErrRunning is returned by Start on a runner that is running.
	ErrRunning = errors.New("runner: already running")
	// ErrEmptyPrompt is returned by SendPrompt for a blank prompt.
	ErrEmptyPrompt = engine.NewError(engine.ErrInvalid, "runner: empty prompt")
	// ErrQueueFull is returned by SendPrompt when Config.MaxQueue prompts
	// wait already; the prompt is not queued (the caller keeps it).
	ErrQueueFull = engine.NewError(engine.ErrFull, "runner: prompt queue full")
)

// Defaults of Config.
const (
	DefaultMaxQueue  = 256
	DefaultStopGrace = 5 * time.Second
)

// Config configures New. It is copied on entry; zero values get the
// defaults documented on each field.
//
// The daemon builds one *harness.Harness per agent (its Roots = the
// agent's directory; ChildEnv = HARNESS_NICK and a PATH with the harness
// binary first; AllowedTools = "Bash(harness channel:*)"), so the runner
// needs no environment or tool policy of its own.
type Config struct {
	// Harness runs the turns. Required.
	Harness *harness.Harness
	// ProjectRoot is the agent's directory (absolute, inside the
	// Harness's roots). Required unless ResumeSession is set.
	ProjectRoot string
	// Engine is a harness engine name (claude-code, anthropic, codex, an
	// ACP entry…); "" = the persona's, else the Harness's default.
	Engine string
	// Model is the model ("" = the engine's default).
	Model string
	// Persona is a persona ID ("" = none).
	Persona string
	// Mode is workbench, pipeline or direct ("" = pipeline).
	Mode string
	// Isolation "worktree" makes each session the runner starts in a git
	// worktree of its own (harness.SessionSpec), from Base ("" = the
	// project's HEAD). A session that replaces another (clear, compact)
	// starts from the old one's branch, its changes committed there
	// first, so the work carries over.
	Isolation, Base string
	// TurnTimeout ends a turn that runs longer (0 = none). A timed-out
	// turn is a crash: OnExit(non-zero), so the owner's recovery runs.
	TurnTimeout time.Duration
	// ResumeSession is a harness session ID to continue ("" = a new
	// session, made by the first Start).
	ResumeSession string
	// MaxQueue bounds the prompts waiting (0 = DefaultMaxQueue).
	MaxQueue int
	// StopGrace is how long Stop waits for an interrupted turn to end
	// before it kills it (0 = DefaultStopGrace).
	StopGrace time.Duration
	// Logger receives the runner's log lines (nil = none). Prompts are
	// logged truncated to 200 characters.
	Logger *zerolog.Logger
}

// Outcome is how a turn ended, as TurnEnd reports it.
type Outcome string

const (
	// Completed: session:complete.
	Completed Outcome = "completed"
	// Failed: the agent answered with an error (api_error, not_logged_in,
	// max_turns, max_budget, execution, resume_not_found). The runner
	// keeps running; the Keeper counts these.
	Failed Outcome = "failed"
	// Interrupted: the turn was interrupted (by Stop, or by someone else
	// through the Harness). Neither a failure nor a crash.
	Interrupted Outcome = "interrupted"
	// Crashed: the agent died (process), could not start (start), was
	// killed from outside (killed), timed out, or its events could not be
	// read. The runner stops and calls OnExit(non-zero).
	Crashed Outcome = "crashed"
)

// TurnStart is what OnTurnStart reports: a prompt's turn began.
type TurnStart struct {
	SessionID string
	// Prompt is the prompt as it was queued (the daemon finds the
	// mention's channel in it), without the summary a compaction carries
	// into the first prompt of the new session.
	Prompt string
	// Queued is when SendPrompt (or Start) took the prompt; Dequeued
	// when the runner's goroutine took it up and called
	// Harness.StartTurn; Started when StartTurn returned (the agent runs).
	Queued, Dequeued, Started time.Time
}

// TurnEnd is what OnTurnEnd reports: a prompt's turn ended.
type TurnEnd struct {
	SessionID string
	Prompt    string // as in TurnStart
	Outcome   Outcome
	// Kind is the session:error's kind ("" when completed); TimedOut is
	// set when Config.TurnTimeout ended the turn.
	Kind     event.ErrorKind
	Error    string
	TimedOut bool
	// ExitCode is the turn's process:exit code.
	ExitCode int
	Duration time.Duration
	// Final is the text of the turn's last Message: the answer to relay
	// for an engine whose agent cannot post it itself.
	Final string
}

// TurnReporter is implemented by runners that report each turn's start
// and end (Core does); the Keeper uses it for failed-turn counting and
// Status. Set the callbacks before Start.
type TurnReporter interface {
	OnTurnStart(func(TurnStart))
	OnTurnEnd(func(TurnEnd))
}

// Compactor is implemented by runners whose conversation can be cleared
// or compacted (Core does). Both only queue the operation: it runs after
// the prompts sent before it and before those sent after it, so an agent
// may ask for it from inside its own turn (through the skill CLI) without
// waiting on itself.
type Compactor interface {
	Compact(ctx context.Context) error
	Clear(ctx context.Context) error
}

// Holder is a runner whose queue can be held (Core is one): Hold(true)
// lets the item being worked on finish and starts no other until
// Hold(false), keeping the queue; Pending is how many items wait. A
// Keeper pauses a Holder this way.
type Holder interface {
	Hold(on bool)
	Pending() int
}

// item is one entry of the queue.
type item struct {
	kind itemKind
	text string // as queued: what TurnStart and TurnEnd report
	// send, when not "", is what the engine is sent instead of text (text
	// behind a compaction's carried summary)
	send   string
	queued time.Time
}

type itemKind int

const (
	itemPrompt itemKind = iota
	itemCompact
	itemClear
)

// Core is the Runner over the harness core, the same for every engine:
// each prompt is one Harness turn of the runner's session (StartTurn, then
// Follow until process:exit), so the session, its event log, fan-out and
// approvals are the core's own. Its methods are safe for concurrent use.
//
// Messages: one Message per assistant step — the thinking, text and
// tool uses of one model response, in order — flushed when the step's
// tools report their first result, and at the turn's end (chat:complete
// of the final answer, session:complete or session:error). A tool use is
// therefore always in a Message before its result is known.
type Core struct {
	cfg Config
	h   *harness.Harness
	log zerolog.Logger

	mu          sync.Mutex
	onMessage   func(Message)
	onExit      func(int)
	onTurnStart func(TurnStart)
	onTurnEnd   func(TurnEnd)
	running     bool
	sessionID   string
	queue       []item
	wake        chan struct{} // cap 1: the queue changed
	quit        chan struct{} // closed by Stop
	done        chan struct{} // closed when the worker has ended
	stopping    bool          // Stop asked the current turn to end
	killing     bool          // Stop's grace ran out
	turnSID     string        // the session of the running turn, "" when idle
	busy        bool          // a queue item is being worked on
	held        bool          // Hold(true): no queue item starts until Hold(false)
	carry       string        // a compaction summary for the next prompt
	spec        harness.SessionSpec

	// holdMu orders the core queue holds (syncHold); heldSID is the
	// session whose core queue the runner holds ("" = none); holdRead,
	// that the core's stored hold of the session was read once.
	holdMu   sync.Mutex
	heldSID  string
	holdRead bool
}

// New returns a Core for cfg. It fails when cfg.Harness is nil, or when
// neither ProjectRoot nor ResumeSession is set. Nothing runs until Start.
func New(cfg Config) (*Core, error) {
	if cfg.Harness == nil {
		return nil, errors.New("runner: Config.Harness is nil")
	}
	if cfg.ProjectRoot == "" && cfg.ResumeSession == "" {
		return nil, errors.New("runner: Config.ProjectRoot is empty (and no ResumeSession)")
	}
	if cfg.Mode == "" {
		cfg.Mode = "pipeline"
	}
	if cfg.MaxQueue <= 0 {
		cfg.MaxQueue = DefaultMaxQueue
	}
	if cfg.StopGrace <= 0 {
		cfg.StopGrace = DefaultStopGrace
	}
	c := &Core{cfg: cfg, h: cfg.Harness, log: zerolog.Nop(), sessionID: cfg.ResumeSession,
		spec: harness.SessionSpec{ProjectRoot: cfg.ProjectRoot, Persona: cfg.Persona, Mode: cfg.Mode, Engine: cfg.Engine, Model: cfg.Model,
			Isolation: cfg.Isolation, Base: cfg.Base}}
	if cfg.Logger != nil {
		c.log = *cfg.Logger
	}
	return c, nil
}

var (
	_ Runner       = (*Core)(nil)
	_ TurnReporter = (*Core)(nil)
	_ Compactor    = (*Core)(nil)
	_ Holder       = (*Core)(nil)
)

// OnMessage sets the message callback (before Start).
func (c *Core) OnMessage(f func(Message)) { c.mu.Lock(); c.onMessage = f; c.mu.Unlock() }

// OnExit sets the exit callback (before Start).
func (c *Core) OnExit(f func(code int)) { c.mu.Lock(); c.onExit = f; c.mu.Unlock() }

// OnTurnStart sets the turn-start callback (before Start).
func (c *Core) OnTurnStart(f func(TurnStart)) { c.mu.Lock(); c.onTurnStart = f; c.mu.Unlock() }

// OnTurnEnd sets the turn-end callback (before Start).
func (c *Core) OnTurnEnd(f func(TurnEnd)) { c.mu.Lock(); c.onTurnEnd = f; c.mu.Unlock() }

// IsRunning reports whether the runner is started and neither crashed
// nor stopped.
func (c *Core) IsRunning() bool { c.mu.Lock(); defer c.mu.Unlock(); return c.running }

// Busy reports whether a prompt (or a compaction) is being worked on.
func (c *Core) Busy() bool { c.mu.Lock(); defer c.mu.Unlock(); return c.busy }

// Hold(true) holds the queue: the item being worked on finishes, and no
// other starts until Hold(false); the queue is kept, SendPrompt still
// adds to it (up to Config.MaxQueue), and a hold lasts across Stop and
// Start. It is how a paused agent stops working without losing what
// waits. The hold is also the core's on the runner's session
// (Harness.HoldQueue): prompts another door queued for that session
// (the console, agent serve) wait as the runner's own do.
func (c *Core) Hold(on bool) {
	c.mu.Lock()
	c.held = on
	if !on && c.wake != nil {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
	c.mu.Unlock()
	c.syncHold()
}

// syncHold makes the core's hold follow the runner's: the runner's
// current session's queue is held while the runner is, and a session the
// runner left (clear, compact) is released. Not under c.mu: the core
// writes the hold to disk.
func (c *Core) syncHold() {
	c.holdMu.Lock()
	defer c.holdMu.Unlock()
	c.mu.Lock()
	sid, want := c.sessionID, ""
	if c.held {
		want = sid
	}
	c.mu.Unlock()
	if !c.holdRead && sid != "" {
		// The core stores a hold; a runner's pause is not kept across
		// processes: a hold a previous one left is released here.
		c.holdRead = true
		if held, err := c.h.QueueHeld(sid); err == nil && held {
			c.heldSID = sid
		}
	}
	if want == c.heldSID {
		return
	}
	if c.heldSID != "" {
		if err := c.h.HoldQueue(c.heldSID, false); err != nil {
			c.log.Warn().Str("sessionId", c.heldSID).Err(err).Msg("the session's queue could not be released")
		}
	}
	if want != "" {
		if err := c.h.HoldQueue(want, true); err != nil {
			c.log.Warn().Str("sessionId", want).Err(err).Msg("the session's queue could not be held")
		}
	}
	c.heldSID = want
}

// Pending returns how many prompts wait in the queue.
func (c *Core) Pending() int { c.mu.Lock(); defer c.mu.Unlock(); return len(c.queue) }

// SessionID is the harness session ID: known once Start returned ("" before).
func (c *Core) SessionID() string { c.mu.Lock(); defer c.mu.Unlock(); return c.sessionID }

// Start makes the runner's session (the first time: a new session from
// Config, or Config.ResumeSession; after a crash or Stop: the same
// session, which the engine resumes where it can), starts the runner's
// goroutine and queues initialPrompt ahead of the prompts still waiting
// from before. ctx bounds only the start. It fails with ErrRunning, or
// with the Harness's session errors (harness.ErrNotFound,
// harness.ErrRootNotAllowed, harness.ErrUnknownEngine, …).
func (c *Core) Start(ctx context.Context, initialPrompt string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	err := c.startableLocked()
	sid := c.sessionID
	c.mu.Unlock()
	if err != nil {
		return err
	}
	// The session is made or checked outside the lock: SendPrompt must
	// not wait on the disk.
	if sid == "" {
		s, err := c.h.NewSession(c.spec)
		if err != nil {
			return fmt.Errorf("runner: new session: %w", err)
		}
		sid = s.ID
	} else if _, err := c.h.Session(sid); err != nil {
		return fmt.Errorf("runner: session %s: %w", sid, err)
	}
	c.mu.Lock()
	if err := c.startableLocked(); err != nil {
		c.mu.Unlock()
		return err // another Start won
	}
	defer c.syncHold() // a hold from before Start holds the session's core queue
	defer c.mu.Unlock()
	c.sessionID = sid
	if strings.TrimSpace(initialPrompt) != "" {
		c.queue = append([]item{{kind: itemPrompt, text: initialPrompt, queued: time.Now()}}, c.queue...)
	}
	c.running, c.stopping, c.killing = true, false, false
	c.wake = make(chan struct{}, 1)
	c.quit = make(chan struct{})
	c.done = make(chan struct{})
	if len(c.queue) > 0 {
		c.wake <- struct{}{}
	}
	c.log.Info().Str("sessionId", c.sessionID).Str("engine", c.cfg.Engine).Int("queued", len(c.queue)).Msg("runner started")
	go c.work(c.wake, c.quit, c.done)
	return nil
}

// startableLocked says why the runner cannot start now (nil when it can).
func (c *Core) startableLocked() error {
	if c.running {
		return ErrRunning
	}
	if c.done != nil {
		select {
		case <-c.done: // the worker of a crashed run has ended
		default:
			return ErrRunning // Stop is still waiting for it
		}
	}
	return nil
}

// switchSession makes a new session (outside the lock: SendPrompt must
// not wait on the disk) and makes it the runner's, with carry for the
// next prompt.
func (c *Core) switchSession(carry string) (old, sid string, err error) {
	spec, err := c.nextSpec()
	var s *session.Session
	if err == nil {
		s, err = c.h.NewSession(spec)
	}
	c.mu.Lock()
	if err != nil {
		defer c.mu.Unlock()
		return c.sessionID, c.sessionID, fmt.Errorf("runner: new session: %w", err)
	}
	old, c.sessionID, c.carry = c.sessionID, s.ID, carry
	c.mu.Unlock()
	c.syncHold() // a hold moves to the new session
	return old, s.ID, nil
}

// nextSpec is the spec of a session that replaces the current one: for a
// worktree session, based on its branch once its changes are committed.
func (c *Core) nextSpec() (harness.SessionSpec, error) {
	spec := c.spec
	c.mu.Lock()
	cur := c.sessionID
	c.mu.Unlock()
	if spec.Isolation == "" || cur == "" {
		return spec, nil
	}
	s, err := c.h.Session(cur)
	if err != nil || s.Isolation == "" {
		return spec, nil // gone, or not isolated: start from the configured base
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := c.h.CommitSession(ctx, cur, "harness: the work of session "+cur+" before a new conversation"); err != nil {
		return spec, err
	}
	spec.Base = s.Branch
	return spec, nil
}

// SendPrompt queues text; it never blocks. It fails with ErrNotRunning,
// ErrEmptyPrompt or ErrQueueFull, and the prompt is then not queued.
func (c *Core) SendPrompt(text string) error {
	return c.enqueue(item{kind: itemPrompt, text: text, queued: time.Now()})
}

func (c *Core) enqueue(it item) error {
	if it.kind == itemPrompt && strings.TrimSpace(it.text) == "" {
		return ErrEmptyPrompt
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.running {
		return ErrNotRunning
	}
	if len(c.queue) >= c.cfg.MaxQueue {
		return ErrQueueFull
	}
	c.queue = append(c.queue, it)
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return nil
}

// Clear queues a fresh start: the prompts after it run in a new harness
// session (the same engine, model, persona and mode). It fails with
// ErrNotRunning or ErrQueueFull.
func (c *Core) Clear(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return c.enqueue(item{kind: itemClear, queued: time.Now()})
}

// CompactPrompt is the turn Compact runs in the old session.
const CompactPrompt = "Summarize this conversation so far for your own continuation in a fresh session: " +
	"the task, what has been done, decisions and their reasons, open questions, and the next steps. " +
	"Be complete but concise; answer with the summary only."

// Compact queues a compaction: a turn in the current session asks the
// agent for a summary (CompactPrompt; its Messages are not reported), then
// the prompts after it run in a new session, the first of them prefixed
// with the summary. The same for every engine: none of the engines' own
// compactions is used (Claude Code's /compact is not reachable through
// the engine seam). It fails with ErrNotRunning or ErrQueueFull; a
// compaction whose summary turn does not complete leaves the session as
// it was.
func (c *Core) Compact(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return c.enqueue(item{kind: itemCompact, queued: time.Now()})
}

// Stop interrupts the running turn, waits up to Config.StopGrace (or
// until ctx ends) for it to end, then kills it and waits for it; the
// runner is then not running and OnExit(0) is called (only when it was
// running: not after a crash). Prompts still queued are kept for the next
// Start. Safe to call more than once and when not running; it returns
// ctx's error if ctx ended before the runner's goroutine did (the turn
// has been killed by then and the goroutine ends on its own).
func (c *Core) Stop(ctx context.Context) error {
	c.mu.Lock()
	done := c.done
	if done == nil {
		c.mu.Unlock()
		return nil
	}
	if !c.stopping {
		c.stopping = true
		close(c.quit)
	}
	sid := c.turnSID
	c.mu.Unlock()
	if sid != "" {
		_ = c.h.Interrupt(sid)
	}
	grace := time.NewTimer(c.cfg.StopGrace)
	defer grace.Stop()
	var err error
	select {
	case <-done:
	case <-grace.C:
	case <-ctx.Done():
	}
	select {
	case <-done:
	default:
		c.mu.Lock()
		c.killing = true
		sid = c.turnSID
		c.mu.Unlock()
		if sid != "" {
			c.log.Warn().Str("sessionId", sid).Msg("turn did not end after interrupt; killing it")
			_ = c.h.Kill(sid)
		}
		select {
		case <-done:
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	c.mu.Lock()
	was := c.running
	c.running = false
	if err == nil {
		c.done = nil
	}
	onExit := c.onExit
	c.mu.Unlock()
	if was {
		c.log.Info().Str("sessionId", c.SessionID()).Msg("runner stopped")
		if onExit != nil {
			onExit(0)
		}
	}
	return err
}

// work is the runner's goroutine: one queue item at a time, in order.
func (c *Core) work(wake, quit, done chan struct{}) {
	defer close(done)
	for {
		c.mu.Lock()
		for (len(c.queue) == 0 || c.held) && !c.stopping {
			c.mu.Unlock()
			select {
			case <-wake:
			case <-quit:
			}
			c.mu.Lock()
		}
		if c.stopping {
			c.mu.Unlock()
			return
		}
		it := c.queue[0]
		c.queue = c.queue[1:]
		c.busy = true
		c.mu.Unlock()

		code, crashed := c.do(it)

		c.mu.Lock()
		c.busy = false
		if crashed && !c.stopping {
			c.running = false
			onExit := c.onExit
			c.mu.Unlock()
			c.log.Error().Str("sessionId", c.SessionID()).Int("code", code).Msg("runner crashed")
			if onExit != nil {
				onExit(code)
			}
			return
		}
		c.mu.Unlock()
	}
}

// do runs one queue item; crashed reports a crash with its exit code.
func (c *Core) do(it item) (code int, crashed bool) {
	switch it.kind {
	case itemClear:
		old, sid, err := c.switchSession("")
		if err != nil {
			c.log.Error().Err(err).Msg("clear: a new session could not be made; keeping the old one")
			return 0, false
		}
		c.log.Info().Str("from", old).Str("sessionId", sid).Msg("cleared: new session")
		return 0, false
	case itemCompact:
		res := c.turn(item{kind: itemPrompt, text: CompactPrompt, queued: it.queued}, false)
		if res.end.Outcome == Crashed {
			return res.end.ExitCode, true
		}
		summary := strings.TrimSpace(res.final)
		if res.end.Outcome != Completed || summary == "" {
			c.log.Warn().Str("outcome", string(res.end.Outcome)).Msg("compact: no summary; the session is kept")
			return 0, false
		}
		old, sid, err := c.switchSession(summary)
		if err != nil {
			c.log.Error().Err(err).Msg("compact: a new session could not be made; keeping the old one")
			return 0, false
		}
		c.log.Info().Str("from", old).Str("sessionId", sid).Int("summary", len(summary)).Msg("compacted: new session seeded with the summary")
		return 0, false
	}
	c.mu.Lock()
	if c.carry != "" {
		it.send = "[Context carried over from your previous session (compacted)]\n" + c.carry + "\n\n" + it.text
		c.carry = ""
	}
	c.mu.Unlock()
	res := c.turn(it, true)
	return res.end.ExitCode, res.end.Outcome == Crashed
}

type turnResult struct {
	end   TurnEnd
	final string // the text of the last Message
}

// turn runs one prompt as a Harness turn and follows it to its end.
// report says whether Messages and turn callbacks are delivered.
func (c *Core) turn(it item, report bool) turnResult {
	c.mu.Lock()
	sid := c.sessionID
	if c.stopping {
		c.mu.Unlock()
		return turnResult{end: TurnEnd{SessionID: sid, Prompt: it.text, Outcome: Interrupted, Kind: event.ErrorInterrupted}}
	}
	c.turnSID = sid
	onStart, onEnd, onMsg := c.onTurnStart, c.onTurnEnd, c.onMessage
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.turnSID = ""
		c.mu.Unlock()
	}()
	if !report {
		onStart, onEnd, onMsg = nil, nil, nil
	}
	end := TurnEnd{SessionID: sid, Prompt: it.text}
	dequeued := time.Now()
	c.log.Info().Str("sessionId", sid).Str("prompt", logging.Truncate(it.text, 200)).Msg("turn starting")
	send := it.text
	if it.send != "" {
		send = it.send
	}
	t, err := c.h.StartTurn(context.Background(), sid, send)
	if err != nil {
		end.Outcome, end.Kind, end.Error, end.ExitCode = Crashed, event.ErrorStart, err.Error(), 1
		c.log.Error().Str("sessionId", sid).Err(err).Msg("turn could not start")
		if onEnd != nil {
			onEnd(end)
		}
		return turnResult{end: end}
	}
	started := time.Now()
	// A Stop that came while StartTurn ran found no turn to interrupt.
	c.mu.Lock()
	stopping, killing := c.stopping, c.killing
	c.mu.Unlock()
	if killing {
		_ = c.h.Kill(sid)
	} else if stopping {
		_ = c.h.Interrupt(sid)
	}
	if onStart != nil {
		onStart(TurnStart{SessionID: sid, Prompt: it.text, Queued: it.queued, Dequeued: dequeued, Started: started})
	}
	var timedOut sync.Mutex
	timedOutFlag := false
	var timer *time.Timer
	if c.cfg.TurnTimeout > 0 {
		timer = time.AfterFunc(c.cfg.TurnTimeout, func() {
			timedOut.Lock()
			timedOutFlag = true
			timedOut.Unlock()
			c.log.Warn().Str("sessionId", sid).Dur("timeout", c.cfg.TurnTimeout).Msg("turn timed out; killing it")
			_ = c.h.Kill(sid)
		})
	}
	var n normalizer
	emit := func(m Message) {
		n.last = m
		if onMsg != nil {
			onMsg(m)
		}
	}
	res, werr := t.Wait(context.Background(), func(rec session.Record) error {
		n.add(rec.Typed, emit)
		return nil
	})
	n.flush(emit)
	if timer != nil {
		timer.Stop()
	}
	timedOut.Lock()
	end.TimedOut = timedOutFlag
	timedOut.Unlock()
	end.Duration = time.Since(started)
	c.mu.Lock()
	stopping = c.stopping
	c.mu.Unlock()
	if res.Exit != nil {
		end.ExitCode = res.Exit.Code
	}
	var te *harness.TurnError
	switch {
	case res.Exit == nil:
		end.Outcome, end.Kind = Crashed, event.ErrorProcess
		end.Error = "the turn's events could not be read"
		if werr != nil {
			end.Error += ": " + werr.Error()
		}
	case res.Status == harness.TurnCompleted:
		end.Outcome = Completed
	case !errors.As(werr, &te):
		end.Outcome, end.Kind, end.Error = Crashed, event.ErrorProcess, "the turn ended without a result"
	default:
		end.Kind, end.Error = te.Kind, te.Message
		switch te.Kind {
		case event.ErrorInterrupted:
			end.Outcome = Interrupted
		case event.ErrorKilled, event.ErrorProcess, event.ErrorStart:
			end.Outcome = Crashed
		default:
			end.Outcome = Failed
		}
	}
	if end.TimedOut && end.Outcome != Completed {
		end.Outcome = Crashed
		end.Error = fmt.Sprintf("the turn timed out after %s", c.cfg.TurnTimeout)
	}
	if stopping && end.Outcome == Crashed {
		end.Outcome = Interrupted // our own Stop ended it
	}
	if end.Outcome == Crashed && end.ExitCode == 0 {
		end.ExitCode = 1
	}
	end.Final = n.last.Text()
	c.log.Info().Str("sessionId", sid).Str("outcome", string(end.Outcome)).Str("kind", string(end.Kind)).
		Int("code", end.ExitCode).Dur("duration", end.Duration).Msg("turn ended")
	if onEnd != nil {
		onEnd(end)
	}
	return turnResult{end: end, final: end.Final}
}

// normalizer renders the one fold of a turn's UI events (event/fold) as
// Messages (see Core): the blocks of one step (text, thinking, tool uses)
// are one Message, sent when the step's tools have results or the turn
// ends.
type normalizer struct {
	f        fold.Fold
	model    string
	cur      []Content
	toolOpen bool // cur holds tool uses whose results have not begun
	last     Message
}

func (n *normalizer) flush(emit func(Message)) {
	u := n.f.Flush()
	for _, it := range u.Items() {
		n.item(&it, emit)
	}
	n.send(emit)
}

// send emits the step so far.
func (n *normalizer) send(emit func(Message)) {
	if len(n.cur) > 0 {
		emit(Message{Type: "assistant", Model: n.model, Content: n.cur})
	}
	n.cur, n.toolOpen = nil, false
}

func (n *normalizer) add(ev *event.Event, emit func(Message)) {
	u := n.f.Add(ev)
	for _, it := range u.Items() {
		n.item(&it, emit)
	}
}

func (n *normalizer) item(it *fold.Item, emit func(Message)) {
	switch it.Kind {
	case fold.KindStatus:
		switch ev := it.Event; {
		case ev.Type == event.TypeSessionInit && ev.Init != nil && ev.Init.Model != "":
			n.model = ev.Init.Model
		case ev.Type == event.TypeSessionError:
			n.send(emit)
		}
	case fold.KindText, fold.KindReasoning:
		if it.Whole {
			// Claude Code sends the final answer again at the end; the
			// native loop sends each text block whole.
			if !n.hasText(it.Text) {
				n.cur = append(n.cur, Content{Type: "text", Text: it.Text})
			}
			break
		}
		if it.New && n.toolOpen {
			n.send(emit) // a new step after tool uses without results
		}
		switch {
		case !it.Done || it.Text == "":
		case it.Kind == fold.KindText:
			n.cur = append(n.cur, Content{Type: "text", Text: it.Text})
		default:
			n.cur = append(n.cur, Content{Type: "thinking", Thinking: it.Text})
		}
	case fold.KindTool:
		if it.Done {
			n.send(emit)
			break
		}
		input := it.Tool.Input
		if len(input) == 0 || !json.Valid(input) {
			input = json.RawMessage("{}")
		}
		n.cur = append(n.cur, Content{Type: "tool_use", ID: it.Tool.ID, Name: it.Tool.Name, Input: input})
		n.toolOpen = true
	case fold.KindEnd:
		n.send(emit)
	}
}

// hasText reports whether s is already a text block of the step, or was
// the last Message's text (the final answer repeated at the end).
func (n *normalizer) hasText(s string) bool {
	for _, c := range n.cur {
		if c.Type == "text" && c.Text == s {
			return true
		}
	}
	return len(n.cur) == 0 && n.last.Text() == s
}
