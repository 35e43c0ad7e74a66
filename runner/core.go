package runner

import (
	"context"
	"errors"
	"time"

	"github.com/rs/zerolog"

	"github.com/chirality/harness"
)

// Config configures New. It is copied on entry; zero values get the
// defaults documented on each field.
type Config struct {
	Harness       *harness.Harness
	ProjectRoot   string
	Engine        string
	Model         string
	Persona       string
	Mode          string
	TurnTimeout   time.Duration
	ResumeSession string
	Logger        *zerolog.Logger
}

// Core is the Runner over the harness core, for every engine.
type Core struct{ cfg Config }

// New returns a Core for cfg.
func New(cfg Config) (*Core, error) {
	if cfg.Harness == nil {
		return nil, errors.New("runner: Config.Harness is nil")
	}
	return &Core{cfg: cfg}, nil
}

func (c *Core) Start(ctx context.Context, initialPrompt string) error { return nil }
func (c *Core) Stop(ctx context.Context) error                        { return nil }
func (c *Core) SendPrompt(text string) error                          { return ErrNotRunning }
func (c *Core) IsRunning() bool                                       { return false }
func (c *Core) SessionID() string                                     { return "" }
func (c *Core) OnMessage(func(Message))                               {}
func (c *Core) OnExit(func(code int))                                 {}

var _ Runner = (*Core)(nil)
