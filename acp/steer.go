package acp

import (
	"context"
	"fmt"

	"github.com/chirality/harness/engine"
)

// Steering: claude-agent-acp takes a message into the running turn with
// its _session/steering request, advertised in InitializeResponse
// _meta.steering.supported (the ACP steering draft). An agent that does
// not advertise it cannot be steered: ACP itself has no such request.

// SteerMethod is the request that steers a running turn.
const SteerMethod = "_session/steering"

type steerParams struct {
	SessionID string         `json:"sessionId"`
	Prompt    []textBlock    `json:"prompt"`
	Meta      map[string]any `json:"_meta,omitempty"`
}

type steerResult struct {
	// Outcome is "injected" (into the running turn), "promptRequired"
	// (no turn ran: nothing was done) or "startedNewTurn".
	Outcome string `json:"outcome"`
}

// Steers implements engine.SteerCapable: what the last initialize answer
// said, else the configuration (Config.Steer).
func (e *Engine) Steers() bool {
	switch e.steer.Load() {
	case 1:
		return true
	case 2:
		return false
	}
	return e.cfg.Steer
}

func (e *Engine) learnSteer(ok bool) {
	if ok {
		e.steer.Store(1)
	} else {
		e.steer.Store(2)
	}
}

var _ engine.Steerer = (*Turn)(nil)

// Steer implements engine.Steerer: once the turn's prompt is sent, the
// message goes to the agent with _session/steering, asking it to do
// nothing when no turn runs (idleBehavior promptRequired: that answer is
// engine.ErrNotRunning). An agent that does not advertise steering is
// engine.ErrUnsupported.
func (t *Turn) Steer(ctx context.Context, message string) error {
	select {
	case <-t.prompted:
	case <-t.s.Done():
		return engine.ErrNotRunning
	case <-ctx.Done():
		return ctx.Err()
	}
	if !t.p.info.Steer {
		return fmt.Errorf("%w: %s does not advertise steering (InitializeResponse _meta.steering)", engine.ErrUnsupported, t.e.cfg.Name)
	}
	t.mu.Lock()
	over := t.ending || t.interrupted || t.killed
	t.mu.Unlock()
	if over {
		return engine.ErrNotRunning
	}
	done := make(chan error, 1)
	var res steerResult
	go func() {
		done <- call(t.p.conn, SteerMethod, steerParams{SessionID: t.p.sessionID, Prompt: []textBlock{{Type: "text", Text: message}},
			Meta: map[string]any{"steering": map[string]any{"idleBehavior": "promptRequired"}}}, &res)
	}()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("%w: %s: %s", engine.ErrNotRunning, SteerMethod, rpcMessage(err))
		}
	case <-t.s.Done():
		return engine.ErrNotRunning
	case <-ctx.Done():
		return ctx.Err()
	}
	if res.Outcome != "injected" {
		return fmt.Errorf("%w: the agent answered %q", engine.ErrNotRunning, res.Outcome)
	}
	return nil
}
