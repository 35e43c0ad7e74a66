package harness

import (
	"context"
	"sync"
	"testing"
)

// whileTheFirstTurnEnds runs f on a goroutine of its own as the first
// turn that ends (of the Harness the test makes next) begins to finalize,
// its process:exit stored, and holds that end until f waits for it
// (occupy); the hooks go after the Harness's Shutdown.
func whileTheFirstTurnEnds(t *testing.T, f func()) {
	waiting := make(chan struct{})
	testHookOccupyWaits = func() { close(waiting) } // once: only f waits
	var once sync.Once
	testHookFinalize = func() {
		once.Do(func() {
			go f()
			<-waiting
		})
	}
	t.Cleanup(func() { testHookFinalize, testHookOccupyWaits = nil, nil })
}

// The next turn started while the previous one is ending (its
// process:exit stored, its last save not yet done: occupy waits for it)
// runs on the session as that last save left it, not on a copy read
// before it: the ended turn's cost (saved then) is not undone by the next
// turn's saves, and a budget sees it.
func TestNextTurnStartedWhileOneEndsKeepsItsLastSave(t *testing.T) {
	var h *Harness
	var id string
	second := make(chan *Turn, 1)
	whileTheFirstTurnEnds(t, func() {
		// Its process:exit is stored: a client that read it starts the
		// next turn.
		tr, err := h.StartTurn(context.Background(), TurnRequest{SessionID: id, Message: "two"})
		if err != nil {
			t.Error(err)
		}
		second <- tr
	})
	qe := newQueueEngine() // its turns cost 1.5 USD each
	qe.cost = 1.5
	e := newTestEnv(t, func(c *Config) { c.Engines = append(c.Engines, qe) })
	s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct", Engine: "queue"})
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
	var h *Harness
	var id string
	var toTurn int64
	rewound := make(chan error, 1)
	whileTheFirstTurnEnds(t, func() {
		_, err := h.Rewind(context.Background(), id, RewindOptions{ToTurn: toTurn, Conversation: true})
		rewound <- err
	})
	qe := newQueueEngine() // its turns cost 1.5 USD each
	qe.cost = 1.5
	e := newTestEnv(t, func(c *Config) { c.Engines = append(c.Engines, qe) })
	s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct", Engine: "queue"})
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
