package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/chirality/harness/engine"
	"github.com/rs/zerolog"
)

// Errors of the Keeper, for callers to branch on with errors.Is.
var (
	// ErrPaused is returned by Keeper.SendPrompt while the keeper is
	// paused and its runner is not a Holder; the prompt is not queued
	// (the daemon keeps it in its buffer). A Holder's prompts queue
	// while paused instead.
	ErrPaused = errors.New("runner: paused")
	// ErrCircuitOpen is returned by Keeper.SendPrompt while the circuit
	// breaker is open (too many crashes; nothing restarts the runner).
	ErrCircuitOpen = errors.New("runner: circuit open after repeated crashes")
	// ErrUnsupported is returned by Compact and Clear when the Runner
	// does not implement Compactor. It is engine.ErrUnsupported.
	ErrUnsupported = engine.NewError(engine.ErrUnsupported, "runner: not supported by this runner")
)

// Defaults of KeeperConfig.
const (
	DefaultMaxCrashes     = 3
	DefaultWindow         = 300 * time.Second
	DefaultMaxFailedTurns = 3
	// DefaultResumePrompt is the first prompt after a crash when
	// KeeperConfig.ResumePrompt is empty.
	DefaultResumePrompt = "Your previous run ended unexpectedly (a crash, or a turn that timed out). " +
		"Check where you were, then carry on with what you were doing."
)

// KeeperConfig configures NewKeeper; it is copied and zero values get the
// documented defaults.
type KeeperConfig struct {
	// Runner is the runner kept alive. Required. The Keeper sets its
	// OnExit (and, for a TurnReporter, OnTurnStart and OnTurnEnd).
	Runner Runner
	// ResumePrompt starts the runner again after a crash ("" =
	// DefaultResumePrompt).
	ResumePrompt string
	// MaxCrashes within Window open the circuit breaker (0 = 3; 0 s = 300 s).
	MaxCrashes int
	Window     time.Duration
	// MaxFailedTurns consecutive failed turns pause the keeper (0 = 3).
	MaxFailedTurns int
	// Now is the clock (nil = time.Now); tests give a fake one.
	Now func() time.Time
	// OnPause is called with the reason when failed turns pause the
	// keeper (not for Pause). OnCircuitOpen is called when the breaker
	// opens. Both run on the runner's goroutine (or the Keeper's restart
	// goroutine): do not block, and do not call Stop from them.
	OnPause       func(reason string)
	OnCircuitOpen func(reason string)
	// Logger receives the keeper's log lines (nil = none).
	Logger *zerolog.Logger
}

// Keeper wraps a Runner with crash recovery. After a crash
// (OnExit(code != 0)) it calls Stop, then Start(ResumePrompt): the same
// session, which the engine resumes where it can. MaxCrashes crashes
// within Window open the circuit breaker: no more restarts (Status
// circuit_open) until Resume. MaxFailedTurns consecutive failed turns
// (a TurnReporter's Failed outcome) pause it: OnPause(reason).
//
// Paused (by Pause or by failed turns) means paused: the turn under way
// finishes, and no other starts until Resume. For a Holder (Core) the
// queue is held and kept, SendPrompt still queues (Status.Waiting counts
// them), and Resume lets them run in order; for any other runner
// SendPrompt refuses with ErrPaused. A Keeper is safe for concurrent use.
type Keeper struct {
	cfg KeeperConfig
	r   Runner
	log zerolog.Logger

	mu             sync.Mutex
	onMessage      func(Message)
	onTurnStart    func(TurnStart)
	onTurnEnd      func(TurnEnd)
	onExit         func(int)
	crashes        []time.Time
	failed         int
	paused         bool
	circuitOpen    bool
	turnCount      int
	lastActivation time.Time
	working        bool
	stopped        bool // Stop was called: no restarts
	// restarting is set from a crash until a restart has handed pending
	// to the runner: prompts sent meanwhile wait in pending (the runner
	// refuses them while it is down), then run after the resume prompt.
	restarting bool
	pending    []string
	restarts   sync.WaitGroup
}

// Status is the keeper's state, the daemon's `status` answer.
type Status struct {
	Running        bool      `json:"running"`
	Paused         bool      `json:"paused"`
	CircuitOpen    bool      `json:"circuit_open"`
	TurnCount      int       `json:"turn_count"`
	LastActivation time.Time `json:"last_activation"`
	// Activity is "paused" (paused or circuit open), "working" (a turn
	// runs) or "idle". A paused agent may still be finishing the turn it
	// was in: Working says so.
	Activity string `json:"activity"`
	Working  bool   `json:"working"`
	// Waiting is how many prompts wait to run (queued, or kept during a
	// restart).
	Waiting int `json:"waiting"`
}

// NewKeeper returns a Keeper over cfg.Runner and installs its callbacks
// on it. Set OnMessage on the Keeper, not on the Runner.
func NewKeeper(cfg KeeperConfig) *Keeper {
	if cfg.MaxCrashes <= 0 {
		cfg.MaxCrashes = DefaultMaxCrashes
	}
	if cfg.Window <= 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.MaxFailedTurns <= 0 {
		cfg.MaxFailedTurns = DefaultMaxFailedTurns
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.ResumePrompt == "" {
		cfg.ResumePrompt = DefaultResumePrompt
	}
	k := &Keeper{cfg: cfg, r: cfg.Runner, log: zerolog.Nop()}
	if cfg.Logger != nil {
		k.log = *cfg.Logger
	}
	k.r.OnExit(k.exited)
	k.r.OnMessage(func(m Message) {
		k.mu.Lock()
		f := k.onMessage
		k.mu.Unlock()
		if f != nil {
			f(m)
		}
	})
	if tr, ok := k.r.(TurnReporter); ok {
		tr.OnTurnStart(k.turnStarted)
		tr.OnTurnEnd(k.turnEnded)
	}
	return k
}

// OnMessage sets the callback the runner's Messages are forwarded to.
func (k *Keeper) OnMessage(f func(Message)) { k.mu.Lock(); k.onMessage = f; k.mu.Unlock() }

// OnTurnStart and OnTurnEnd set callbacks the runner's turn reports are
// forwarded to (after the Keeper has counted them; only for a runner
// that is a TurnReporter). OnTurnEnd is where the daemon relays an
// engine's final answer when the agent cannot post it itself.
func (k *Keeper) OnTurnStart(f func(TurnStart)) { k.mu.Lock(); k.onTurnStart = f; k.mu.Unlock() }

// OnTurnEnd: see OnTurnStart.
func (k *Keeper) OnTurnEnd(f func(TurnEnd)) { k.mu.Lock(); k.onTurnEnd = f; k.mu.Unlock() }

// OnExit sets a callback told of every exit of the runner (0 clean,
// non-zero a crash), before the Keeper restarts it.
func (k *Keeper) OnExit(f func(code int)) { k.mu.Lock(); k.onExit = f; k.mu.Unlock() }

// Start starts the runner with initialPrompt ("" = none), then hands it
// the prompts that waited while it was down. ctx bounds the start only.
func (k *Keeper) Start(ctx context.Context, initialPrompt string) error {
	k.mu.Lock()
	k.stopped = false
	k.mu.Unlock()
	if err := k.r.Start(ctx, initialPrompt); err != nil {
		return err
	}
	k.flush()
	return nil
}

// Stop ends crash recovery (a restart under way is waited for), then
// stops the runner (Runner.Stop, bounded by ctx). Safe to call more than
// once.
func (k *Keeper) Stop(ctx context.Context) error {
	k.mu.Lock()
	k.stopped = true
	k.mu.Unlock()
	k.restarts.Wait()
	return k.r.Stop(ctx)
}

// SendPrompt hands text to the runner; it never blocks. While a restart
// after a crash is under way the prompt waits in the Keeper (at most
// DefaultMaxQueue) and runs after the resume prompt. While paused it is
// queued behind the held ones (a Holder) or refused with ErrPaused. It
// fails with ErrCircuitOpen while the breaker is open, and with the
// runner's errors (ErrNotRunning when stopped, ErrQueueFull).
func (k *Keeper) SendPrompt(text string) error {
	k.mu.Lock()
	paused, open := k.paused, k.circuitOpen
	k.mu.Unlock()
	_, holds := k.r.(Holder)
	switch {
	case open:
		return ErrCircuitOpen
	case paused && !holds:
		return ErrPaused
	}
	err := k.r.SendPrompt(text)
	if !errors.Is(err, ErrNotRunning) {
		return err
	}
	k.mu.Lock()
	if k.restarting && !k.stopped {
		defer k.mu.Unlock()
		if strings.TrimSpace(text) == "" {
			return ErrEmptyPrompt
		}
		if len(k.pending) >= DefaultMaxQueue {
			return ErrQueueFull
		}
		k.pending = append(k.pending, text)
		return nil
	}
	k.mu.Unlock()
	return k.r.SendPrompt(text) // a restart may have ended meanwhile
}

// flush hands the prompts that waited during a restart to the runner,
// in order, and ends the restart; a refused one (the runner crashed
// again) and those after it wait for the next start.
func (k *Keeper) flush() {
	for {
		k.mu.Lock()
		p := k.pending
		k.pending = nil
		if len(p) == 0 {
			k.restarting = false
			k.mu.Unlock()
			return
		}
		k.mu.Unlock()
		for i, text := range p {
			if err := k.r.SendPrompt(text); err != nil {
				k.mu.Lock()
				k.pending = append(p[i:len(p):len(p)], k.pending...)
				k.mu.Unlock()
				k.log.Warn().Err(err).Int("waiting", len(p)-i).Msg("prompts wait for the next start")
				return
			}
		}
	}
}

// Pause pauses the keeper until Resume: the turn under way finishes and
// no other starts (a Holder's queue is held and kept; another runner's
// SendPrompt refuses with ErrPaused). It does not call OnPause.
func (k *Keeper) Pause() {
	k.mu.Lock()
	k.paused = true
	k.mu.Unlock()
	k.hold(true)
	k.log.Info().Msg("keeper paused")
}

// hold holds or releases a Holder's queue; not under k.mu.
func (k *Keeper) hold(on bool) {
	if h, ok := k.r.(Holder); ok {
		h.Hold(on)
	}
}

// Resume ends a pause and resets the failed-turn count. When the circuit
// breaker is open it closes it, forgets the crashes and starts the runner
// again with ResumePrompt (in the background; a failure to start is
// logged and counted as a crash).
func (k *Keeper) Resume() {
	k.mu.Lock()
	k.paused, k.failed = false, 0
	restart := k.circuitOpen && !k.stopped
	k.circuitOpen, k.crashes = false, nil
	if restart {
		k.restarts.Add(1)
	}
	k.mu.Unlock()
	k.hold(false)
	k.log.Info().Bool("restart", restart).Msg("keeper resumed")
	if restart {
		go k.restart()
	}
}

// Status returns the keeper's state.
func (k *Keeper) Status() Status {
	running := k.r.IsRunning()
	waiting := 0
	if h, ok := k.r.(Holder); ok {
		waiting = h.Pending()
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	st := Status{Running: running, Paused: k.paused, CircuitOpen: k.circuitOpen, TurnCount: k.turnCount,
		LastActivation: k.lastActivation, Activity: "idle", Working: k.working && running, Waiting: waiting + len(k.pending)}
	switch {
	case k.paused || k.circuitOpen:
		st.Activity = "paused"
	case k.working && running:
		st.Activity = "working"
	}
	return st
}

// Compact asks the runner to compact its conversation (see
// Compactor): queued, it returns at once. ErrUnsupported when the
// runner cannot.
func (k *Keeper) Compact(ctx context.Context) error {
	c, ok := k.r.(Compactor)
	if !ok {
		return ErrUnsupported
	}
	return c.Compact(ctx)
}

// Clear asks the runner to start a fresh session for the next prompt
// (see Compactor): queued, it returns at once. ErrUnsupported when the
// runner cannot.
func (k *Keeper) Clear(ctx context.Context) error {
	c, ok := k.r.(Compactor)
	if !ok {
		return ErrUnsupported
	}
	return c.Clear(ctx)
}

func (k *Keeper) turnStarted(s TurnStart) {
	k.mu.Lock()
	k.turnCount++
	k.lastActivation = k.cfg.Now()
	k.working = true
	f := k.onTurnStart
	k.mu.Unlock()
	if f != nil {
		f(s)
	}
}

func (k *Keeper) turnEnded(e TurnEnd) {
	k.mu.Lock()
	k.working = false
	var pause func(string)
	reason := ""
	switch e.Outcome {
	case Completed:
		k.failed = 0
	case Failed:
		k.failed++
		if k.failed >= k.cfg.MaxFailedTurns && !k.paused {
			k.paused = true
			reason = fmt.Sprintf("paused after %d consecutive failed turns; last: %s", k.failed, e.Error)
			pause = k.cfg.OnPause
		}
	}
	f := k.onTurnEnd
	k.mu.Unlock()
	if reason != "" {
		k.hold(true) // before the runner takes its next item
	}
	if f != nil {
		f(e)
	}
	if reason != "" {
		k.log.Warn().Str("reason", reason).Msg("keeper paused")
		if pause != nil {
			pause(reason)
		}
	}
}

// exited is the runner's OnExit: a crash restarts it, unless the breaker
// opens.
func (k *Keeper) exited(code int) {
	k.mu.Lock()
	f := k.onExit
	k.mu.Unlock()
	if f != nil {
		f(code)
	}
	if code == 0 {
		return
	}
	now := k.cfg.Now()
	k.mu.Lock()
	k.working = false
	if k.stopped {
		k.mu.Unlock()
		return
	}
	k.restarting = true
	kept := k.crashes[:0]
	for _, t := range k.crashes {
		if now.Sub(t) < k.cfg.Window {
			kept = append(kept, t)
		}
	}
	k.crashes = append(kept, now)
	n := len(k.crashes)
	if n >= k.cfg.MaxCrashes {
		k.circuitOpen = true
		open := k.cfg.OnCircuitOpen
		k.mu.Unlock()
		reason := fmt.Sprintf("circuit open: %d crashes within %s (last exit code %d); not restarting", n, k.cfg.Window, code)
		k.log.Error().Str("reason", reason).Msg("keeper: circuit open")
		if open != nil {
			open(reason)
		}
		return
	}
	k.restarts.Add(1)
	k.mu.Unlock()
	k.log.Warn().Int("code", code).Int("crashes", n).Msg("runner crashed; restarting it")
	// Not on the runner's goroutine: Stop waits for it to end.
	go k.restart()
}

// restart stops the runner and starts it again with the resume prompt.
func (k *Keeper) restart() {
	defer k.restarts.Done()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := k.r.Stop(ctx); err != nil {
		k.log.Error().Err(err).Msg("restart: stop failed")
	}
	k.mu.Lock()
	stopped := k.stopped
	k.mu.Unlock()
	if stopped {
		return
	}
	if err := k.r.Start(ctx, k.cfg.ResumePrompt); err != nil {
		k.log.Error().Err(err).Msg("restart: start failed; counted as a crash")
		k.exited(1) // bounded: the breaker opens after MaxCrashes
		return
	}
	k.flush()
}
