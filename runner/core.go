package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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
	// wait already (at most the core queue's harness.MaxQueued, whose
	// harness.ErrQueueFull it then wraps); the prompt is not queued (the
	// caller keeps it).
	ErrQueueFull = engine.NewError(engine.ErrFull, "runner: prompt queue full")
)

// Defaults of Config.
const (
	DefaultMaxQueue  = harness.MaxQueued
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
	// MaxQueue bounds the prompts waiting (0 = DefaultMaxQueue, the core
	// queue's bound harness.MaxQueued, which is also the most it can be).
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

// item is one entry of what the runner queued and has not started: a
// prompt (in the core queue of the runner's session, by its promptId),
// the compaction's summary prompt (also there, not reported), or a clear
// or compaction (barriers, kept here: the prompts behind one wait in the
// core queue and move to the new session when it is done).
type item struct {
	kind itemKind
	id   string // the core promptId (prompt, summary)
	text string // as queued: what TurnStart and TurnEnd report
	// queued is when SendPrompt (or Start) took it
	queued time.Time
}

type itemKind int

const (
	itemPrompt itemKind = iota
	itemCompact
	itemClear
	itemSummary
)

func (it item) barrier() bool { return it.kind == itemCompact || it.kind == itemClear }

// Core is the Runner over the harness core, the same for every engine.
// Its prompts go into the core's queue of the runner's session
// (Harness.Enqueue: stored with the session, they survive a restart), and
// the core starts each as a turn of that session; the runner gates the
// queue (Harness.GateQueue) so that one turn starts at a time, and
// follows every turn of its session (Harness.Watch, Harness.Follow),
// whichever door started it, to report it. So the session, its event
// log, queue, fan-out and approvals are the core's own. Its methods are
// safe for concurrent use.
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

	// sendMu orders what is queued: a prompt's core queue entry and its
	// item are added together, barriers between them.
	sendMu sync.Mutex

	mu          sync.Mutex
	onMessage   func(Message)
	onExit      func(int)
	onTurnStart func(TurnStart)
	onTurnEnd   func(TurnEnd)
	running     bool
	sessionID   string
	items       []item
	wake        chan struct{} // cap 1: something changed for the worker
	quit        chan struct{} // closed by Stop
	done        chan struct{} // closed when the worker has ended
	stopping    bool          // Stop asked the current turn to end
	killing     bool          // Stop's grace ran out
	turnSID     string        // the session of the running turn, "" when idle
	barrierOn   bool          // a clear or compaction is being done
	held        bool          // Hold(true): no queue item starts until Hold(false)
	carry       string        // a compaction summary for the next prompt
	// permit lets the core start one queued prompt of the runner's
	// session (the gate); the worker hands it out when it is idle.
	// inflight: the core took it and the worker has not yet seen what
	// came of it (the turn's start, or its failure to start).
	permit, inflight bool
	spec             harness.SessionSpec

	// gateMu orders the gate's moves; gateSID is the session gated,
	// ungate removes its gate.
	gateMu  sync.Mutex
	gateSID string
	ungate  func()

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
	if cfg.MaxQueue <= 0 || cfg.MaxQueue > harness.MaxQueued {
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
func (c *Core) Busy() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.turnSID != "" || c.barrierOn
}

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
	if on {
		c.permit = false
	}
	c.wakeLocked()
	c.mu.Unlock()
	c.syncHold()
}

func (c *Core) wakeLocked() {
	if c.wake != nil {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
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

// gate is the core queue's gate of the runner's session: it hands out
// the worker's permit, once.
func (c *Core) gate() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	ok := c.permit
	c.permit = false
	if ok {
		c.inflight = true
	}
	return ok
}

// gateSession moves the runner's gate onto session sid and returns the
// removal of the gate it had (nil when none): the caller removes it once
// nothing is left to start in the old session. The gate stays while the
// runner is stopped or crashed: the queued prompts wait for the next
// Start.
func (c *Core) gateSession(sid string) (ungateOld func()) {
	c.gateMu.Lock()
	defer c.gateMu.Unlock()
	if c.gateSID == sid {
		return nil
	}
	remove := c.h.GateQueue(sid, c.gate)
	ungateOld = c.ungate
	c.gateSID, c.ungate = sid, remove
	return ungateOld
}

// Pending returns how many prompts wait: those in the core queue of the
// runner's session, and the clears and compactions not yet done.
func (c *Core) Pending() int {
	c.mu.Lock()
	sid, n := c.sessionID, 0
	for _, it := range c.items {
		if it.barrier() {
			n++
		}
	}
	c.mu.Unlock()
	if sid != "" {
		if q, err := c.h.Queue(sid); err == nil {
			n += len(q)
		}
	}
	return n
}

// SessionID is the harness session ID: known once Start returned ("" before).
func (c *Core) SessionID() string { c.mu.Lock(); defer c.mu.Unlock(); return c.sessionID }

// Start makes the runner's session (the first time: a new session from
// Config, or Config.ResumeSession; after a crash or Stop: the same
// session, which the engine resumes where it can), starts the runner's
// goroutine and queues initialPrompt ahead of the prompts still waiting
// from before (at the head of the core queue). ctx bounds only the
// start. It fails with ErrRunning, or with the Harness's session errors
// (harness.ErrNotFound, harness.ErrRootNotAllowed,
// harness.ErrUnknownEngine, …).
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
	if sid == "" {
		s, err := c.h.NewSession(c.spec)
		if err != nil {
			return fmt.Errorf("runner: new session: %w", err)
		}
		sid = s.ID
	} else if _, err := c.h.Session(sid); err != nil {
		return fmt.Errorf("runner: session %s: %w", sid, err)
	}
	elog, err := c.h.EventLog(sid)
	if err != nil {
		return fmt.Errorf("runner: session %s: %w", sid, err)
	}
	from := elog.LastSeq() // the turns the runner reports begin after this
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	c.mu.Lock()
	if err := c.startableLocked(); err != nil {
		c.mu.Unlock()
		return err // another Start won
	}
	c.sessionID = sid
	c.running, c.stopping, c.killing, c.permit, c.inflight = true, false, false, false, false
	c.wake = make(chan struct{}, 1)
	c.quit = make(chan struct{})
	c.done = make(chan struct{})
	c.mu.Unlock()
	if ungate := c.gateSession(sid); ungate != nil {
		ungate()
	}
	c.syncHold() // a hold from before Start holds the session's core queue
	if strings.TrimSpace(initialPrompt) != "" {
		if q, err := c.h.EnqueueFirst(sid, initialPrompt); err != nil {
			c.log.Error().Str("sessionId", sid).Err(err).Msg("the first prompt could not be queued")
		} else {
			c.mu.Lock()
			c.items = append([]item{{kind: itemPrompt, id: q.PromptID, text: initialPrompt, queued: time.Now()}}, c.items...)
			c.mu.Unlock()
		}
	}
	c.mu.Lock()
	wake, quit, done := c.wake, c.quit, c.done
	c.log.Info().Str("sessionId", sid).Str("engine", c.cfg.Engine).Int("items", len(c.items)).Msg("runner started")
	c.mu.Unlock()
	wctx, stopWatch := context.WithCancel(context.Background())
	events := c.h.Watch(wctx, 0)
	go c.work(from, events, stopWatch, wake, quit, done)
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

// switchSession makes a new session and makes it the runner's, with
// carry for its first prompt: the gate and a hold move to it, and the
// prompts queued in the old session's core queue move to the new one's.
func (c *Core) switchSession(carry string) (old, sid string, err error) {
	spec, err := c.nextSpec()
	var s *session.Session
	if err == nil {
		s, err = c.h.NewSession(spec)
	}
	if err != nil {
		return c.SessionID(), c.SessionID(), fmt.Errorf("runner: new session: %w", err)
	}
	// What SendPrompt queues from here on goes to the new session.
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	// The new session is gated before the move (the moved prompts wait
	// for the worker), the old one after it (nothing of it starts).
	if ungate := c.gateSession(s.ID); ungate != nil {
		defer ungate()
	}
	c.mu.Lock()
	old, c.sessionID = c.sessionID, s.ID
	c.mu.Unlock()
	c.syncHold() // a hold moves to the new session
	moved, err := c.h.MoveQueue(old, s.ID)
	if err != nil {
		c.log.Error().Str("from", old).Str("sessionId", s.ID).Err(err).Msg("the prompts queued behind a new session could not move to it")
	}
	if carry != "" {
		carry = "[Context carried over from your previous session (compacted)]\n" + carry + "\n\n"
		if len(moved) > 0 {
			m := carry + moved[0].Message
			if _, err := c.h.EditQueued(s.ID, moved[0].PromptID, harness.QueueEdit{Message: &m}); err == nil {
				carry = ""
			}
		}
	}
	c.mu.Lock()
	c.carry = carry
	c.mu.Unlock()
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

// SendPrompt queues text in the core queue of the runner's session; it
// does not wait for a turn. It fails with ErrNotRunning, ErrEmptyPrompt
// or ErrQueueFull (Config.MaxQueue, or the core's harness.MaxQueued),
// and the prompt is then not queued.
func (c *Core) SendPrompt(text string) error {
	if strings.TrimSpace(text) == "" {
		return ErrEmptyPrompt
	}
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	c.mu.Lock()
	if !c.running {
		c.mu.Unlock()
		return ErrNotRunning
	}
	sid, send := c.sessionID, text
	barrier := slices.ContainsFunc(c.items, item.barrier) || c.barrierOn
	if c.carry != "" && !barrier {
		send = c.carry + text
	}
	c.mu.Unlock()
	if c.cfg.MaxQueue < harness.MaxQueued && c.Pending() >= c.cfg.MaxQueue {
		return ErrQueueFull
	}
	q, err := c.h.Enqueue(sid, send)
	switch {
	case errors.Is(err, harness.ErrQueueFull):
		return fmt.Errorf("%w: %w", ErrQueueFull, err)
	case err != nil:
		return fmt.Errorf("runner: %w", err)
	}
	c.mu.Lock()
	if send != text {
		c.carry = ""
	}
	c.items = append(c.items, item{kind: itemPrompt, id: q.PromptID, text: text, queued: time.Now()})
	c.mu.Unlock()
	return nil
}

// barrier queues a clear or a compaction behind what is queued.
func (c *Core) barrier(ctx context.Context, kind itemKind) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	if !c.IsRunning() {
		return ErrNotRunning
	}
	if c.Pending() >= c.cfg.MaxQueue {
		return ErrQueueFull
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.items = append(c.items, item{kind: kind, queued: time.Now()})
	c.permit = false // what is queued behind it waits for it
	c.wakeLocked()
	return nil
}

// Clear queues a fresh start: the prompts after it run in a new harness
// session (the same engine, model, persona and mode). It fails with
// ErrNotRunning or ErrQueueFull.
func (c *Core) Clear(ctx context.Context) error { return c.barrier(ctx, itemClear) }

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
func (c *Core) Compact(ctx context.Context) error { return c.barrier(ctx, itemCompact) }

// Stop interrupts the running turn, waits up to Config.StopGrace (or
// until ctx ends) for it to end, then kills it and waits for it; the
// runner is then not running and OnExit(0) is called (only when it was
// running: not after a crash). Prompts still queued are kept (in the
// core queue, gated shut) for the next Start. Safe to call more than
// once and when not running; it returns ctx's error if ctx ended before
// the runner's goroutine did (the turn has been killed by then and the
// goroutine ends on its own).
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
	c.permit = false
	sid := c.sessionID
	c.mu.Unlock()
	// A prompt the core is starting with the last permit has started
	// once its queue's lock is free: it is interrupted too.
	_, _ = c.h.Queue(sid)
	if c.h.IsRunning(sid) {
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
		c.mu.Unlock()
		if c.h.IsRunning(sid) {
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

// follower is the worker's reading of its session's log: the turns in
// it, from the seq after which it reports.
type follower struct {
	sid  string
	last int64
	// dequeued is the promptId of the queued prompt whose turn opens next
	dequeued string
	t        *turnState // the open turn, nil between turns
	// summary is the end of the compaction's summary turn, once it ended
	summary *turnResult
}

// turnState is one turn being followed.
type turnState struct {
	it       item
	report   bool // its Messages and TurnStart/TurnEnd are reported
	started  time.Time
	n        normalizer
	complete bool                // the last of session:complete and session:error was complete
	err      *event.SessionError // the last session:error
	timer    *time.Timer
	timedOut atomic.Bool
}

type turnResult struct {
	end   TurnEnd
	final string // the text of the last Message
}

// work is the runner's goroutine: it follows the turns of the runner's
// session and reports them, does the clears and compactions when they
// come up, and hands the gate a permit whenever the runner is ready for
// the next turn. A crash ends it (OnExit(code)); so does Stop, once no
// turn runs.
func (c *Core) work(from int64, events iter.Seq2[session.Record, error], stopWatch context.CancelFunc, wake, quit, done chan struct{}) {
	defer close(done)
	defer stopWatch()
	f := &follower{sid: c.SessionID(), last: from}
	var watching atomic.Pointer[string]
	first := f.sid
	watching.Store(&first)
	signal := make(chan struct{}, 1)
	go func() { // ends when stopWatch ends the watch
		for rec, err := range events {
			// A record of the session, or records missed (the watch's
			// queue full): the log is read again.
			if err != nil || rec.Typed.SessionID == *watching.Load() {
				select {
				case signal <- struct{}{}:
				default:
				}
			}
		}
	}()
	for {
		if crashed, code := c.follow(f); crashed {
			c.mu.Lock()
			c.running = false
			onExit := c.onExit
			c.mu.Unlock()
			c.log.Error().Str("sessionId", f.sid).Int("code", code).Msg("runner crashed")
			if onExit != nil {
				onExit(code)
			}
			return
		}
		if f.t == nil {
			c.mu.Lock()
			stopping := c.stopping
			c.mu.Unlock()
			if stopping {
				if !c.h.IsRunning(f.sid) {
					return
				}
			} else if c.between(f) {
				sid := f.sid
				watching.Store(&sid)
				continue // read what the new session has
			}
		}
		var tick <-chan time.Time
		c.mu.Lock()
		inflight := c.inflight
		c.mu.Unlock()
		if f.t != nil || inflight || c.h.IsRunning(f.sid) {
			// a turn runs: its events signal (records the watch missed
			// too); the log is read again soon besides
			tick = time.After(time.Second)
		}
		select {
		case <-signal:
		case <-wake:
		case <-quit:
			quit = nil
		case <-tick:
		}
	}
}

// between runs between turns: a compaction's end or a clear or
// compaction that comes up next, else a permit for the next turn. It
// reports whether the runner moved to a new session.
func (c *Core) between(f *follower) bool {
	if res := f.summary; res != nil {
		f.summary = nil
		c.setBarrier(true)
		defer c.setBarrier(false)
		summary := strings.TrimSpace(res.final)
		if res.end.Outcome != Completed || summary == "" {
			c.log.Warn().Str("outcome", string(res.end.Outcome)).Msg("compact: no summary; the session is kept")
			return false
		}
		old, sid, err := c.switchSession(summary)
		if err != nil {
			c.log.Error().Err(err).Msg("compact: a new session could not be made; keeping the old one")
			return false
		}
		c.log.Info().Str("from", old).Str("sessionId", sid).Int("summary", len(summary)).Msg("compacted: new session seeded with the summary")
		f.sid, f.last = sid, 0
		return true
	}
	c.mu.Lock()
	var next *item
	if len(c.items) > 0 && c.items[0].barrier() {
		it := c.items[0]
		c.items = c.items[1:]
		next, c.barrierOn = &it, true
	}
	grant := next == nil && c.running && !c.stopping && !c.held && !c.permit && !c.inflight
	if grant {
		c.permit = true
	}
	c.mu.Unlock()
	if grant {
		c.h.RunQueue(f.sid)
		return false
	}
	if next == nil {
		return false
	}
	defer c.setBarrier(false)
	switch next.kind {
	case itemClear:
		old, sid, err := c.switchSession("")
		if err != nil {
			c.log.Error().Err(err).Msg("clear: a new session could not be made; keeping the old one")
			return false
		}
		c.log.Info().Str("from", old).Str("sessionId", sid).Msg("cleared: new session")
		f.sid, f.last = sid, 0
		return true
	default: // itemCompact: the summary turn first, at the head of the queue
		q, err := c.h.EnqueueFirst(f.sid, CompactPrompt)
		if err != nil {
			c.log.Error().Err(err).Msg("compact: the summary turn could not be queued; the session is kept")
			return false
		}
		c.mu.Lock()
		c.items = append([]item{{kind: itemSummary, id: q.PromptID, text: CompactPrompt, queued: next.queued}}, c.items...)
		c.mu.Unlock()
		return true // the permit for it comes on the next pass
	}
}

func (c *Core) setBarrier(on bool) { c.mu.Lock(); c.barrierOn = on; c.mu.Unlock() }

// follow reads the runner's session's events after f.last: the stored
// ones, then the running turn's until it ends. crashed reports a turn
// that crashed, with its exit code.
func (c *Core) follow(f *follower) (crashed bool, code int) {
	recs, err := c.h.Follow(context.Background(), f.sid, f.last)
	if err != nil {
		c.log.Warn().Str("sessionId", f.sid).Err(err).Msg("the session's events could not be read")
		return false, 0
	}
	for rec, err := range recs {
		if err != nil {
			c.log.Warn().Str("sessionId", f.sid).Err(err).Msg("the session's events could not be read")
			return false, 0
		}
		if rec.Seq != 0 {
			f.last = rec.Seq
		}
		ev, derr := rec.Decode()
		if derr != nil {
			continue
		}
		if crashed, code := c.record(f, &ev); crashed {
			return true, code
		}
	}
	return false, 0
}

// record takes one event of the runner's session.
func (c *Core) record(f *follower, ev *event.Event) (crashed bool, code int) {
	switch ev.Type {
	case event.TypePromptDequeued:
		d := ev.Dequeued
		if d == nil {
			return false, 0
		}
		switch d.Reason {
		case event.DequeuedStarted:
			f.dequeued = d.PromptID
		case event.DequeuedDeleted:
			c.takeItem(d.PromptID) // a person deleted it: it never runs
		case event.DequeuedFailed:
			c.mu.Lock()
			c.inflight = false
			c.mu.Unlock()
			it, ok := c.takeItem(d.PromptID)
			if !ok {
				return false, 0 // another door's prompt
			}
			end := TurnEnd{SessionID: f.sid, Prompt: it.text, Outcome: Crashed, Kind: event.ErrorStart, Error: d.Error, ExitCode: 1}
			c.log.Error().Str("sessionId", f.sid).Str("error", d.Error).Msg("turn could not start")
			c.mu.Lock()
			onEnd, stopping := c.onTurnEnd, c.stopping
			c.mu.Unlock()
			if onEnd != nil && it.kind != itemSummary {
				onEnd(end)
			}
			return !stopping, 1
		}
	case event.TypeUserMessage:
		c.openTurn(f, ev)
	default:
		t := f.t
		if t == nil {
			return false, 0
		}
		switch ev.Type {
		case event.TypeSessionComplete:
			t.complete = true
		case event.TypeSessionError:
			t.err, t.complete = ev.Error, false
		}
		t.n.add(ev, c.emitter(t))
		if ev.Type == event.TypeProcessExit {
			return c.closeTurn(f, ev)
		}
	}
	return false, 0
}

// takeItem removes the item of prompt id; ok is false when the runner
// did not queue it (another door did), or not yet: a SendPrompt that is
// adding it is waited for.
func (c *Core) takeItem(id string) (item, bool) {
	if id == "" {
		return item{}, false
	}
	if it, ok := c.removeItem(id); ok {
		return it, true
	}
	// A SendPrompt under way adds its item before it lets go of sendMu.
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	return c.removeItem(id)
}

func (c *Core) removeItem(id string) (item, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.IndexFunc(c.items, func(it item) bool { return it.id == id })
	if i < 0 {
		return item{}, false
	}
	it := c.items[i]
	c.items = slices.Delete(c.items, i, i+1)
	return it, true
}

// emitter is t's Message callback: reported, or only kept (the last one
// is the turn's final text).
func (c *Core) emitter(t *turnState) func(Message) {
	c.mu.Lock()
	onMsg := c.onMessage
	c.mu.Unlock()
	return func(m Message) {
		t.n.last = m
		if t.report && onMsg != nil {
			onMsg(m)
		}
	}
}

// openTurn starts following a turn at its user:message.
func (c *Core) openTurn(f *follower, ev *event.Event) {
	it, report := item{kind: itemPrompt, text: ev.Text, queued: time.Now()}, true
	if x, ok := c.takeItem(f.dequeued); ok {
		it, report = x, x.kind != itemSummary
	}
	f.dequeued = ""
	sid := f.sid
	t := &turnState{it: it, report: report, started: time.Now()}
	c.mu.Lock()
	c.turnSID, c.permit, c.inflight = sid, false, false
	stopping, killing, onStart := c.stopping, c.killing, c.onTurnStart
	c.mu.Unlock()
	// A Stop that came while the core started the turn found none to end.
	if killing {
		_ = c.h.Kill(sid)
	} else if stopping {
		_ = c.h.Interrupt(sid)
	}
	c.log.Info().Str("sessionId", sid).Str("prompt", logging.Truncate(it.text, 200)).Msg("turn started")
	if c.cfg.TurnTimeout > 0 {
		t.timer = time.AfterFunc(c.cfg.TurnTimeout, func() {
			t.timedOut.Store(true)
			c.log.Warn().Str("sessionId", sid).Dur("timeout", c.cfg.TurnTimeout).Msg("turn timed out; killing it")
			_ = c.h.Kill(sid)
		})
	}
	f.t = t
	if report && onStart != nil {
		onStart(TurnStart{SessionID: sid, Prompt: it.text, Queued: it.queued, Dequeued: t.started, Started: t.started})
	}
}

// closeTurn ends the followed turn at its process:exit and reports how
// it ended; crashed reports a crash, with its exit code.
func (c *Core) closeTurn(f *follower, ev *event.Event) (crashed bool, code int) {
	t := f.t
	f.t = nil
	t.n.flush(c.emitter(t))
	if t.timer != nil {
		t.timer.Stop()
	}
	end := TurnEnd{SessionID: f.sid, Prompt: t.it.text, TimedOut: t.timedOut.Load(), Duration: time.Since(t.started)}
	if ev.Exit != nil {
		end.ExitCode = ev.Exit.Code
	}
	switch {
	case t.complete:
		end.Outcome = Completed
	case t.err == nil:
		end.Outcome, end.Kind, end.Error = Crashed, event.ErrorProcess, "the turn ended without a result"
	default:
		end.Kind, end.Error = t.err.Kind, t.err.Error
		switch t.err.Kind {
		case event.ErrorInterrupted:
			end.Outcome = Interrupted
		case event.ErrorKilled, event.ErrorProcess, event.ErrorStart:
			end.Outcome = Crashed
		default:
			end.Outcome = Failed
		}
	}
	c.mu.Lock()
	c.turnSID, c.inflight = "", false // (a permit the core could not use for another door's turn)
	stopping, onEnd := c.stopping, c.onTurnEnd
	c.mu.Unlock()
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
	end.Final = t.n.last.Text()
	c.log.Info().Str("sessionId", f.sid).Str("outcome", string(end.Outcome)).Str("kind", string(end.Kind)).
		Int("code", end.ExitCode).Dur("duration", end.Duration).Msg("turn ended")
	if t.it.kind == itemSummary {
		f.summary = &turnResult{end: end, final: end.Final}
	} else if t.report && onEnd != nil {
		onEnd(end)
	}
	return end.Outcome == Crashed, end.ExitCode
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
