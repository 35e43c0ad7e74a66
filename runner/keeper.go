package runner

import (
	"context"
	"errors"
	"time"

	"github.com/rs/zerolog"
)

// ErrPaused is returned by Keeper.SendPrompt while the keeper is paused.
var ErrPaused = errors.New("runner: paused")

type KeeperConfig struct {
	Runner         Runner
	ResumePrompt   string
	MaxCrashes     int
	Window         time.Duration
	MaxFailedTurns int
	Now            func() time.Time
	OnPause        func(reason string)
	OnCircuitOpen  func(reason string)
	Logger         *zerolog.Logger
}

type Keeper struct{ cfg KeeperConfig }

type Status struct {
	Running        bool      `json:"running"`
	Paused         bool      `json:"paused"`
	CircuitOpen    bool      `json:"circuit_open"`
	TurnCount      int       `json:"turn_count"`
	LastActivation time.Time `json:"last_activation"`
	Activity       string    `json:"activity"`
}

func NewKeeper(cfg KeeperConfig) *Keeper                                { return &Keeper{cfg: cfg} }
func (k *Keeper) Start(ctx context.Context, initialPrompt string) error { return nil }
func (k *Keeper) Stop(ctx context.Context) error                        { return nil }
func (k *Keeper) SendPrompt(text string) error                          { return nil }
func (k *Keeper) Pause()                                                {}
func (k *Keeper) Resume()                                               {}
func (k *Keeper) Status() Status                                        { return Status{} }
func (k *Keeper) OnMessage(func(Message))                               {}
func (k *Keeper) Compact(ctx context.Context) error                     { return nil }
func (k *Keeper) Clear(ctx context.Context) error                       { return nil }
