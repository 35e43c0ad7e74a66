package harness

import (
	"context"
	"errors"
	"testing"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
)

// unstartable is an engine whose agent cannot start (its binary is
// missing).
type unstartable struct{}

func (unstartable) Name() string { return "unstartable" }
func (unstartable) Check(context.Context) engine.Status {
	return engine.Status{Kind: "unstartable", Available: true}
}
func (unstartable) Shutdown(context.Context) error { return nil }
func (unstartable) StartTurn(context.Context, engine.Request) (engine.Turn, error) {
	return nil, &engine.BinaryNotFoundError{Name: "agent", Tried: []string{"/nonexistent/agent"}}
}

// Issue 20: a turn whose agent cannot start ends in the log as every
// engine's own start failure does (engine.TurnExit, the README's event
// table): session:error of kind start, then process:exit with code 1
// and no signal (it was -1, which the table keeps for a signal).
func TestStartFailureExitCode(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.Engines = []engine.Engine{unstartable{}}; c.DefaultEngine = "unstartable" })
	s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.h.StartTurn(context.Background(), TurnRequest{SessionID: s.ID, Message: "hi"}); !errors.Is(err, engine.ErrBinaryNotFound) {
		t.Fatalf("StartTurn: %v", err)
	}
	evs := e.follow(e.h, s.ID, 0)
	checkTurn(t, s.ID, 0, evs)
	if len(evs) != 3 || evs[1].Type != event.TypeSessionError || evs[1].Error.Kind != event.ErrorStart {
		t.Fatalf("events %+v", evs)
	}
	if x := evs[2].Exit; x.Code != 1 || x.Signal != "" {
		t.Errorf("process:exit %+v, want code 1 and no signal", x)
	}
}
