package acp

import (
	"fmt"

	"github.com/chirality/harness/engine"
)

var _ engine.Controller = (*Engine)(nil)

// Controls reports session/fork as the agent's last initialize answer
// advertised it (Config.Fork before any did). Rewind is never supported:
// ACP has no means to continue a session cut at a turn (session/fork
// copies a whole session).
func (e *Engine) Controls() engine.Controls {
	switch e.forks.Load() {
	case 1:
		return engine.Controls{Fork: true}
	case 2:
		return engine.Controls{}
	}
	return engine.Controls{Fork: e.cfg.Fork}
}

// learnForks remembers what an initialize answer said of session/fork.
func (e *Engine) learnForks(fork bool) {
	if fork {
		e.forks.Store(1)
	} else {
		e.forks.Store(2)
	}
}

// checkControls refuses, before anything starts, a turn that asks what
// the agent cannot do: a cut (ResumeAt) always, a fork when the agent is
// not known to offer session/fork.
func (e *Engine) checkControls(req engine.Request) error {
	if req.ResumeAt != "" {
		return fmt.Errorf("%w: %s cannot continue a conversation cut at a turn (rewind): ACP has no means to (session/fork copies a whole session)", engine.ErrUnsupported, e.cfg.Name)
	}
	if req.Fork && req.Resume != "" && !e.Controls().Fork {
		return fmt.Errorf("%w: %s does not offer session/fork (its initialize answer does not advertise sessionCapabilities.fork), so its conversation cannot be forked", engine.ErrUnsupported, e.cfg.Name)
	}
	return nil
}
