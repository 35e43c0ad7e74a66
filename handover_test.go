package harness

import (
	"context"
	"runtime"
	"strings"
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
	e, qe, sid := queueEnv(t)
	qe.cost = 1.5 // each turn's
	h, id = e.h, sid
	tr, err := e.h.StartTurn(context.Background(), TurnRequest{SessionID: id, Message: "one"})
	if err != nil {
		t.Fatal(err)
	}
	<-tr.Done()
	tr2 := <-second
	if tr2 == nil {
		t.FailNow()
	}
	<-tr2.Done()
	got, err := e.h.Session(id)
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
	e, qe, sid := queueEnv(t)
	qe.cost = 1.5 // each turn's
	h, id = e.h, sid
	elog, err := e.h.Store().EventLog(id)
	if err != nil {
		t.Fatal(err)
	}
	toTurn = elog.LastSeq() + 1 // the turn's user:message
	tr, err := e.h.StartTurn(context.Background(), TurnRequest{SessionID: id, Message: "one"})
	if err != nil {
		t.Fatal(err)
	}
	<-tr.Done()
	if err := <-rewound; err != nil {
		t.Fatal(err)
	}
	got, err := e.h.Session(id)
	if err != nil {
		t.Fatal(err)
	}
	if got.CostUSD != 1.5 || got.Pending == nil {
		t.Fatalf("after a turn of 1.5 and a rewind the session cost %v, pending %+v; want 1.5 and the rewind's cut", got.CostUSD, got.Pending)
	}
}

// A title set while the session's next turn starts (it has read the
// session, its runner does not own the copy yet) is not undone by that
// turn's saves: SetTitle waits for the start, as UpdateSession does, and
// changes the running turn's copy.
func TestTitleSetWhileATurnStartsIsKept(t *testing.T) {
	e, _, id := queueEnv(t)
	// The turn stops in its start, the session read, before its runner
	// owns it: at the session's turn lock.
	unlockKey := e.h.turnLocks.keys.Lock(id)
	started := make(chan *Turn, 1)
	go func() {
		tr, err := e.h.StartTurn(context.Background(), TurnRequest{SessionID: id, Message: "first message"})
		if err != nil {
			t.Error(err)
		}
		started <- tr
	}()
	waitFor(t, "the turn to occupy the session", func() bool { return e.h.IsRunning(id) })
	titled := make(chan error, 1)
	go func() {
		_, err := e.h.SetTitle(id, "a person's title")
		titled <- err
	}()
	// SetTitle returned, or waits for the start (the session's lock has
	// the start and it).
	waitFor(t, "SetTitle to return or wait", func() bool {
		return len(titled) > 0 || blockedIn("(*Harness).SetTitle", "keylock.(*Map).Lock")
	})
	unlockKey()
	tr := <-started
	if tr == nil {
		t.FailNow()
	}
	<-tr.Done()
	if err := <-titled; err != nil {
		t.Fatal(err)
	}
	got, err := e.h.Session(id)
	if err != nil {
		t.Fatal(err)
	}
	if got.Title != "a person's title" {
		t.Fatalf("the session's title is %q after SetTitle during the turn's start, want the title set", got.Title)
	}
}

// blockedIn reports whether a goroutine's stack has both frames: one
// that waits in inner, called from outer.
func blockedIn(outer, inner string) bool {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, outer) && strings.Contains(g, inner) {
			return true
		}
	}
	return false
}

// A session update whose read of the session comes just before a running
// turn's last save and its end keeps that save: the update reads the
// session again once it finds no turn running, and applies itself there.
func TestUpdateWhileATurnEndsKeepsItsLastSave(t *testing.T) {
	e, qe, id := queueEnv(t)
	qe.cost = 1.5
	tr, err := e.h.StartTurn(context.Background(), TurnRequest{SessionID: id, Message: "one"})
	if err != nil {
		t.Fatal(err)
	}
	testHookUpdateRead = func() {
		testHookUpdateRead = nil
		qe.free() // the turn ends, saves its cost and is forgotten
		<-tr.Done()
		waitFor(t, "the turn forgotten", func() bool { return !e.h.IsRunning(id) })
	}
	defer func() { testHookUpdateRead = nil }()
	title := "Renamed"
	if _, err := e.h.UpdateSession(id, SessionUpdate{Title: &title}); err != nil {
		t.Fatal(err)
	}
	got, err := e.h.Session(id)
	if err != nil {
		t.Fatal(err)
	}
	if got.CostUSD != 1.5 || got.Title != "Renamed" {
		t.Fatalf("cost %v, title %q: want 1.5 (the turn's last save kept) and Renamed", got.CostUSD, got.Title)
	}
}
