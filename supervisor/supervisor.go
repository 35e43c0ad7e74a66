package supervisor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/chirality/harness/logging"
	"github.com/chirality/harness/runner"
)

// Evaluator answers one evaluation prompt with the model's reply: a
// one-shot turn with no tools. Cancelling ctx abandons it.
type Evaluator func(ctx context.Context, prompt string) (string, error)

// Defaults of Config.
const (
	DefaultWindowSize          = 20
	DefaultEvalInterval        = 5
	DefaultEscalationThreshold = 3
	DefaultResumeAfterClean    = 5
	// DefaultEvalTimeout bounds one evaluation.
	DefaultEvalTimeout = 5 * time.Minute
)

// Config configures New; it is copied, and zero values get the
// documented defaults.
type Config struct {
	// WindowSize is how many observed turns (Messages) are kept and shown
	// to the evaluator (0 = 20).
	WindowSize int
	// EvalInterval: an evaluation runs every EvalInterval observed turns
	// (0 = 5).
	EvalInterval int
	// EscalationThreshold consecutive failed corrections escalate (0 = 3).
	EscalationThreshold int
	// ResumeAfterClean clean (OK) evaluations in a row end an escalation's
	// pause (0 = 5).
	ResumeAfterClean int
	// EvalTimeout bounds one evaluation (0 = DefaultEvalTimeout).
	EvalTimeout time.Duration
	// Evaluate runs the evaluations. Required.
	Evaluate Evaluator
	// Logger receives the supervisor's log lines (nil = none).
	Logger *zerolog.Logger
}

// Supervisor watches one agent: it keeps a rolling window of the agent's
// turns, asks an evaluator about it every EvalInterval turns and acts on
// the verdict (see the package documentation for the rules). Its methods
// are safe for concurrent use; callbacks run on the supervisor's own
// goroutine, one at a time, and must not block for long.
type Supervisor struct {
	cfg Config
	log zerolog.Logger

	mu           sync.Mutex
	window       []runner.Message
	since        int // turns observed since the last evaluation was due
	due          chan struct{}
	onWhisper    func(message, action string)
	onEscalation func(message string)
	paused       bool
	corrections  int // consecutive corrections not followed by an OK
	clean        int // consecutive OK evaluations while paused
	evals        int
	cancel       context.CancelFunc
	done         chan struct{}
}

// New returns a Supervisor for cfg. It observes from the start; it
// evaluates once started.
func New(cfg Config) *Supervisor {
	if cfg.WindowSize <= 0 {
		cfg.WindowSize = DefaultWindowSize
	}
	if cfg.EvalInterval <= 0 {
		cfg.EvalInterval = DefaultEvalInterval
	}
	if cfg.EscalationThreshold <= 0 {
		cfg.EscalationThreshold = DefaultEscalationThreshold
	}
	if cfg.ResumeAfterClean <= 0 {
		cfg.ResumeAfterClean = DefaultResumeAfterClean
	}
	if cfg.EvalTimeout <= 0 {
		cfg.EvalTimeout = DefaultEvalTimeout
	}
	s := &Supervisor{cfg: cfg, log: zerolog.Nop(), due: make(chan struct{}, 1)}
	if cfg.Logger != nil {
		s.log = *cfg.Logger
	}
	return s
}

// ErrNoEvaluator is returned by Start when Config.Evaluate is nil.
var ErrNoEvaluator = errors.New("supervisor: Config.Evaluate is nil")

// Start starts the supervisor's goroutine; ctx bounds its life (its end
// is like Stop, without the wait). Starting a started supervisor does
// nothing.
func (s *Supervisor) Start(ctx context.Context) error {
	if s.cfg.Evaluate == nil {
		return ErrNoEvaluator
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done != nil {
		return nil
	}
	ctx, s.cancel = context.WithCancel(ctx)
	s.done = make(chan struct{})
	go s.run(ctx, s.done)
	return nil
}

// Stop ends the supervisor: an evaluation under way is cancelled and its
// verdict dropped. It waits for the goroutine, bounded by ctx. Safe to
// call more than once.
func (s *Supervisor) Stop(ctx context.Context) error {
	s.mu.Lock()
	done, cancel := s.done, s.cancel
	s.done, s.cancel = nil, nil
	s.mu.Unlock()
	if done == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// OnWhisper sets the callback for CORRECTION and THINK_DEEPER verdicts:
// the message for the agent and the action's name.
func (s *Supervisor) OnWhisper(f func(message, action string)) {
	s.mu.Lock()
	s.onWhisper = f
	s.mu.Unlock()
}

// OnEscalation sets the callback for escalations: a message for people.
func (s *Supervisor) OnEscalation(f func(message string)) {
	s.mu.Lock()
	s.onEscalation = f
	s.mu.Unlock()
}

// Observe adds one of the agent's turns to the window. It never blocks
// (it takes a short lock); when an evaluation is due and one is still
// running, the next one evaluates the newest window.
func (s *Supervisor) Observe(turn runner.Message) {
	s.mu.Lock()
	s.window = append(s.window, turn)
	if over := len(s.window) - s.cfg.WindowSize; over > 0 {
		s.window = append(s.window[:0:0], s.window[over:]...)
	}
	s.since++
	if s.since >= s.cfg.EvalInterval {
		s.since = 0
		select {
		case s.due <- struct{}{}:
		default:
		}
	}
	s.mu.Unlock()
}

// Paused reports whether an escalation paused the supervisor (it then
// evaluates but neither whispers nor escalates).
func (s *Supervisor) Paused() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.paused
}

// Resume ends a pause at once (a person's `resume`) and forgets the
// failed corrections.
func (s *Supervisor) Resume() {
	s.mu.Lock()
	was := s.paused
	s.paused, s.corrections, s.clean = false, 0, 0
	s.mu.Unlock()
	if was {
		s.log.Info().Str("by", "manual").Msg("supervisor resumed")
	}
}

// Evaluations returns how many evaluations have completed.
func (s *Supervisor) Evaluations() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.evals
}

func (s *Supervisor) run(ctx context.Context, done chan struct{}) {
	defer close(done)
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.due:
		}
		s.mu.Lock()
		window := append([]runner.Message(nil), s.window...)
		s.mu.Unlock()
		s.evaluate(ctx, window)
	}
}

// evaluate runs one evaluation of window and applies its verdict.
func (s *Supervisor) evaluate(ctx context.Context, window []runner.Message) {
	ectx, cancel := context.WithTimeout(ctx, s.cfg.EvalTimeout)
	defer cancel()
	start := time.Now()
	answer, err := s.callEvaluator(ectx, Prompt(window))
	if ctx.Err() != nil {
		return // stopped: the verdict is dropped
	}
	if err != nil {
		s.log.Warn().Err(err).Msg("evaluation failed; no verdict")
		return
	}
	v, err := ParseVerdict(answer)
	if err != nil {
		s.log.Warn().Str("answer", logging.Truncate(answer, 300)).Msg("unparseable verdict, counted as OK")
	}
	s.log.Info().Str("verdict", string(v.Action)).Str("text", logging.Truncate(v.Message, 200)).
		Dur("duration", time.Since(start)).Int("turns", len(window)).Msg("evaluation")
	s.apply(v)
}

// callEvaluator calls the evaluator, turning a panic into an error.
func (s *Supervisor) callEvaluator(ctx context.Context, prompt string) (answer string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("supervisor: evaluator panicked: %v", r)
		}
	}()
	return s.cfg.Evaluate(ctx, prompt)
}

// apply acts on a verdict (see the package documentation).
func (s *Supervisor) apply(v Verdict) {
	var whisper, escalate string
	s.mu.Lock()
	s.evals++
	switch v.Action {
	case ActionOK:
		s.corrections = 0
		if s.paused {
			s.clean++
			if s.clean >= s.cfg.ResumeAfterClean {
				s.paused, s.clean = false, 0
				s.log.Info().Str("by", "clean evaluations").Int("clean", s.cfg.ResumeAfterClean).Msg("supervisor resumed")
			}
		}
	case ActionCorrection, ActionThinkDeeper:
		s.clean = 0
		if s.paused {
			break
		}
		whisper = v.Message
		s.corrections++
		if s.corrections >= s.cfg.EscalationThreshold {
			escalate = fmt.Sprintf("the agent did not respond to %d corrections in a row; last: %s", s.corrections, v.Message)
		}
	case ActionEscalation:
		s.clean = 0
		if !s.paused {
			escalate = v.Message
		}
	}
	if escalate != "" {
		s.paused, s.corrections, s.clean = true, 0, 0
	}
	onWhisper, onEscalation := s.onWhisper, s.onEscalation
	s.mu.Unlock()
	if whisper != "" && onWhisper != nil {
		onWhisper(whisper, string(v.Action))
	}
	if escalate != "" {
		s.log.Warn().Str("text", logging.Truncate(escalate, 300)).Msg("escalation; supervisor paused")
		if onEscalation != nil {
			onEscalation(escalate)
		}
	}
}
