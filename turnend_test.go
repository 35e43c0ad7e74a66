package harness

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
)

// A client that read a turn's process:exit from the log and starts the
// next turn at once is not refused with ErrBusy while the ended turn
// still saves (finalize): the start waits for it, and the next turn's
// records follow the ended one's process:exit.
func TestNextTurnRightAfterProcessExitWaitsForTheEnd(t *testing.T) {
	slow := make(chan struct{}, 1)
	testHookFinalize = func() {
		select {
		case slow <- struct{}{}: // the first turn's end only
			time.Sleep(300 * time.Millisecond)
		default:
		}
	}
	defer func() { testHookFinalize = nil }()
	e := newTestEnv(t, func(c *Config) { c.Engines = []engine.Engine{countEngine{n: 3}} })
	s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct", Engine: "count"})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := e.h.StartTurn(context.Background(), TurnRequest{SessionID: s.ID, Message: "one"})
	if err != nil {
		t.Fatal(err)
	}
	var exitSeq int64
	recs, err := e.h.Follow(context.Background(), s.ID, tr.StartSeq)
	if err != nil {
		t.Fatal(err)
	}
	for rec, err := range recs {
		if err != nil {
			t.Fatal(err)
		}
		if rec.Typed != nil && rec.Typed.Type == event.TypeProcessExit || rec.Typed == nil && strings.Contains(string(rec.Event), `"process:exit"`) {
			exitSeq = rec.Seq
			break
		}
	}
	tr2, err := e.h.StartTurn(context.Background(), TurnRequest{SessionID: s.ID, Message: "two"})
	if err != nil {
		t.Fatalf("the next turn, started on the first one's process:exit: %v", err)
	}
	<-tr2.Done()
	if tr2.StartSeq < exitSeq {
		t.Errorf("the next turn starts after seq %d, before the first one's process:exit (%d)", tr2.StartSeq, exitSeq)
	}
}
