package harness

import (
	"context"
	"sync"
	"testing"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
)

// costEngine's turns cost 1.5 USD each: session:init, session:complete,
// process:exit.
type costEngine struct{}

func (costEngine) Name() string { return "cost" }
func (costEngine) Check(context.Context) engine.Status {
	return engine.Status{Kind: "cost", Available: true}
}
func (costEngine) Shutdown(context.Context) error { return nil }
func (costEngine) StartTurn(_ context.Context, req engine.Request) (engine.Turn, error) {
	return &costTurn{key: req.SessionKey}, nil
}

type costTurn struct {
	key string
	i   int
	ev  event.Event
}

func (t *costTurn) Next() bool {
	switch t.i++; t.i {
	case 1:
		t.ev = event.Event{Type: event.TypeSessionInit, SessionID: t.key, Init: &event.SessionInit{Engine: "cost", ConversationID: "c1"}}
	case 2:
		t.ev = event.Event{Type: event.TypeSessionComplete, SessionID: t.key, Complete: &event.SessionComplete{CostUSD: 1.5}}
	case 3:
		t.ev = event.Event{Type: event.TypeProcessExit, SessionID: t.key, Exit: &event.ProcessExit{}}
	default:
		return false
	}
	return true
}
func (t *costTurn) Event() event.Event { return t.ev }
func (t *costTurn) Err() error         { return nil }
func (t *costTurn) Interrupt() error   { return nil }
func (t *costTurn) Kill() error        { return nil }
func (t *costTurn) Close() error       { return nil }

// The next turn started while the previous one is ending (its
// process:exit stored, its last save not yet done: occupy waits for it)
// runs on the session as that last save left it, not on a copy read
// before it: the ended turn's cost (saved then) is not undone by the next
// turn's saves, and a budget sees it.
func TestNextTurnStartedWhileOneEndsKeepsItsLastSave(t *testing.T) {
	waiting := make(chan struct{})
	testHookOccupyWaits = func() { close(waiting) } // once: only the second turn waits
	var once sync.Once
	var h *Harness
	var id string
	second := make(chan *Turn, 1)
	testHookFinalize = func() {
		once.Do(func() {
			// The first turn's process:exit is stored: a client that read
			// it starts the next turn, which waits for this end.
			go func() {
				tr, err := h.StartTurn(context.Background(), TurnRequest{SessionID: id, Message: "two"})
				if err != nil {
					t.Error(err)
				}
				second <- tr
			}()
			<-waiting
		})
	}
	t.Cleanup(func() { testHookFinalize, testHookOccupyWaits = nil, nil })
	e := newTestEnv(t, func(c *Config) { c.Engines = []engine.Engine{costEngine{}} })
	s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct", Engine: "cost"})
	if err != nil {
		t.Fatal(err)
	}
	h, id = e.h, s.ID
	tr, err := e.h.StartTurn(context.Background(), TurnRequest{SessionID: s.ID, Message: "one"})
	if err != nil {
		t.Fatal(err)
	}
	<-tr.Done()
	tr2 := <-second
	if tr2 == nil {
		t.FailNow()
	}
	<-tr2.Done()
	got, err := e.h.Session(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.CostUSD != 3 {
		t.Fatalf("the session cost %v after two turns of 1.5, want 3 (the first turn's last save undone by the next turn)", got.CostUSD)
	}
}

// A rewind asked while a turn is ending (reserve waits for it, as a
// turn's start does) saves the session as that turn's last save left it:
// the ended turn's cost is not undone by the rewind's save.
func TestRewindWhileATurnEndsKeepsItsLastSave(t *testing.T) {
	waiting := make(chan struct{})
	testHookOccupyWaits = func() { close(waiting) } // once: only the rewind waits
	var once sync.Once
	var h *Harness
	var id string
	var toTurn int64
	rewound := make(chan error, 1)
	testHookFinalize = func() {
		once.Do(func() {
			go func() {
				_, err := h.Rewind(context.Background(), id, RewindOptions{ToTurn: toTurn, Conversation: true})
				rewound <- err
			}()
			<-waiting
		})
	}
	t.Cleanup(func() { testHookFinalize, testHookOccupyWaits = nil, nil })
	e := newTestEnv(t, func(c *Config) { c.Engines = []engine.Engine{costEngine{}} })
	s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct", Engine: "cost"})
	if err != nil {
		t.Fatal(err)
	}
	h, id = e.h, s.ID
	elog, err := e.h.Store().EventLog(id)
	if err != nil {
		t.Fatal(err)
	}
	toTurn = elog.LastSeq() + 1 // the turn's user:message
	tr, err := e.h.StartTurn(context.Background(), TurnRequest{SessionID: s.ID, Message: "one"})
	if err != nil {
		t.Fatal(err)
	}
	<-tr.Done()
	if err := <-rewound; err != nil {
		t.Fatal(err)
	}
	got, err := e.h.Session(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.CostUSD != 1.5 || got.Pending == nil {
		t.Fatalf("after a turn of 1.5 and a rewind the session cost %v, pending %+v; want 1.5 and the rewind's cut", got.CostUSD, got.Pending)
	}
}
