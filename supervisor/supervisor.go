package supervisor

import (
	"context"

	"github.com/rs/zerolog"

	"github.com/chirality/harness"
	"github.com/chirality/harness/runner"
)

type Evaluator func(ctx context.Context, prompt string) (string, error)

type Config struct {
	WindowSize          int
	EvalInterval        int
	EscalationThreshold int
	ResumeAfterClean    int
	Evaluate            Evaluator
	Logger              *zerolog.Logger
}

type Supervisor struct{ cfg Config }

func New(cfg Config) *Supervisor                             { return &Supervisor{cfg: cfg} }
func (s *Supervisor) Start(ctx context.Context) error        { return nil }
func (s *Supervisor) Stop(ctx context.Context) error         { return nil }
func (s *Supervisor) Observe(turn runner.Message)            {}
func (s *Supervisor) OnWhisper(func(message, action string)) {}
func (s *Supervisor) OnEscalation(func(message string))      {}
func (s *Supervisor) Resume()                                {}
func (s *Supervisor) Paused() bool                           { return false }

func CoreEvaluator(h *harness.Harness, projectRoot, engine, model, thinking string) Evaluator {
	return func(ctx context.Context, prompt string) (string, error) { return "OK", nil }
}
