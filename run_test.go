package harness

import (
	"context"
	"errors"
	"testing"

	"github.com/chirality/harness/claudecode"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/session"
)

// runTurn starts a turn of session id and reads it to its end.
func runTurn(ctx context.Context, h *Harness, id, message string, fn func(session.Record) error) (Result, error) {
	tr, err := h.StartTurn(ctx, TurnRequest{SessionID: id, Message: message})
	if err != nil {
		return Result{SessionID: id, Status: TurnFailed}, err
	}
	return tr.Wait(ctx, fn)
}

// Wait hands each event typed (the same event as its JSON says) and
// returns how the turn ended.
func TestWaitTypedEventsAndResult(t *testing.T) {
	e := newTestEnv(t, nil)
	s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct"})
	if err != nil {
		t.Fatal(err)
	}
	e.api.Script(claudetest.TextReply("the final answer"))
	var recs []session.Record
	res, err := runTurn(context.Background(), e.h, s.ID, "say it", func(rec session.Record) error {
		recs = append(recs, rec)
		return nil
	})
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	evs := make([]stored, len(recs))
	for i, rec := range recs {
		if rec.Typed == nil {
			t.Fatalf("record %d has no typed event", i)
		}
		evs[i] = decode(t, rec)
		if got, want := rec.Typed.AppendJSON(nil), evs[i].Event.AppendJSON(nil); string(got) != string(want) {
			t.Errorf("record %d: typed event %s, its JSON says %s", i, got, want)
		}
	}
	checkTurn(t, s.ID, 0, evs)
	if evs[0].Type != event.TypeUserMessage || evs[0].Text != "say it" {
		t.Errorf("first event %+v", evs[0].Event)
	}
	if res.Status != TurnCompleted || res.Final != "the final answer" || res.Complete == nil || res.Exit == nil ||
		res.Exit.Code != 0 || res.Error != nil || res.LastSeq != evs[len(evs)-1].Seq || res.SessionID != s.ID {
		t.Errorf("result %+v", res)
	}

	// Read back from the log, the records are not typed; Decode gives the
	// same events.
	seq, err := e.h.Follow(context.Background(), s.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	for rec, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		if rec.Typed != nil {
			t.Errorf("record %d read from the log has a typed event", rec.Seq)
		}
		ev, derr := rec.Decode()
		if derr != nil || string(ev.AppendJSON(nil)) != string(recs[i].Typed.AppendJSON(nil)) {
			t.Errorf("record %d decodes to %+v (%v)", rec.Seq, ev, derr)
		}
		i++
	}
	if i != len(recs) {
		t.Errorf("%d records in the log, Wait saw %d", i, len(recs))
	}
}

// How a turn that did not complete ends (interrupted), what a cancelled
// context or a callback that fails do to a reader (stop it, never the
// turn), and the start errors.
func TestWaitEndings(t *testing.T) {
	e := newTestEnv(t, nil)
	s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct"})
	if err != nil {
		t.Fatal(err)
	}
	onFirstDelta := func(do func() error) func(session.Record) error {
		done := false
		return func(rec session.Record) error {
			if rec.Typed.Type == event.TypeChatDelta && !done {
				done = true
				return do()
			}
			return nil
		}
	}

	t.Run("interrupted", func(t *testing.T) {
		e.api.Script(slowReply())
		res, err := runTurn(context.Background(), e.h, s.ID, "talk slowly", onFirstDelta(func() error { return e.h.Interrupt(s.ID) }))
		var te *TurnError
		if !errors.As(err, &te) || te.Kind != event.ErrorInterrupted || !te.Interrupted() {
			t.Fatalf("err = %v, want a *TurnError of kind interrupted", err)
		}
		if !errors.Is(err, claudecode.ErrInterrupted) {
			t.Errorf("err = %v does not unwrap to the engine's ErrInterrupted", err)
		}
		if res.Status != TurnInterrupted || res.Exit == nil || res.Final == "" {
			t.Errorf("result %+v", res)
		}
	})

	// The one context rule: a cancelled ctx stops the reading, never
	// the turn, which completes and is stored.
	t.Run("context cancelled", func(t *testing.T) {
		e.api.Script(shortSlowReply())
		tr, err := e.h.StartTurn(context.Background(), TurnRequest{SessionID: s.ID, Message: "talk slowly"})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		res, err := tr.Wait(ctx, onFirstDelta(func() error { cancel(); return nil }))
		if !errors.Is(err, context.Canceled) || res.Exit != nil {
			t.Fatalf("Wait = %+v, %v; want context.Canceled before the turn's end", res, err)
		}
		<-tr.Done()
		if tr.Err() != nil {
			t.Fatalf("the turn: %v, want it completed", tr.Err())
		}
		res, err = tr.Wait(context.Background(), nil) // read again, from the log
		if err != nil || res.Status != TurnCompleted || res.Final != shortSlowText {
			t.Errorf("the stored turn: %v, %v, final %d bytes", err, res.Status, len(res.Final))
		}
	})

	t.Run("callback error", func(t *testing.T) {
		e.api.Script(shortSlowReply())
		stop := errors.New("the reader gave up")
		calls := 0
		fn := onFirstDelta(func() error { return stop })
		tr, err := e.h.StartTurn(context.Background(), TurnRequest{SessionID: s.ID, Message: "talk slowly"})
		if err != nil {
			t.Fatal(err)
		}
		res, err := tr.Wait(context.Background(), func(rec session.Record) error {
			calls++
			return fn(rec)
		})
		if !errors.Is(err, stop) {
			t.Fatalf("err = %v, want the callback's error", err)
		}
		n := calls
		<-tr.Done() // the turn went on without its reader
		if tr.Err() != nil {
			t.Errorf("the turn: %v, want it completed", tr.Err())
		}
		if calls != n || res.Exit != nil {
			t.Errorf("the callback was called after its error (%d calls), result %+v", calls, res)
		}
	})

	// The other half of the rule: Interrupt stops the turn; its readers
	// see it end.
	t.Run("Turn.Interrupt", func(t *testing.T) {
		e.api.Script(slowReply())
		tr, err := e.h.StartTurn(context.Background(), TurnRequest{SessionID: s.ID, Message: "talk slowly"})
		if err != nil {
			t.Fatal(err)
		}
		res, err := tr.Wait(context.Background(), onFirstDelta(tr.Interrupt))
		var te *TurnError
		if !errors.As(err, &te) || !te.Interrupted() || res.Status != TurnInterrupted || res.Exit == nil {
			t.Fatalf("Wait = %+v, %v; want an interrupted turn", res, err)
		}
		if err := tr.Interrupt(); !errors.Is(err, ErrNotRunning) {
			t.Errorf("Interrupt after the end: %v, want ErrNotRunning", err)
		}
	})

	t.Run("start errors", func(t *testing.T) {
		if _, err := runTurn(context.Background(), e.h, s.ID, "  ", nil); !errors.Is(err, ErrEmptyMessage) {
			t.Errorf("blank message: %v", err)
		}
		if _, err := e.h.StartTurn(context.Background(), TurnRequest{SessionID: s.ID, Message: "hi", Engine: "native"}); !errors.Is(err, ErrInvalidTurnOptions) {
			t.Errorf("an engine for a session's turn: %v", err)
		}
		if _, err := runTurn(context.Background(), e.h, "7d0ed6bc-0d0e-4b8a-9c53-6b6c6e0c1a7b", "hi", nil); !errors.Is(err, ErrNotFound) {
			t.Errorf("unknown session: %v", err)
		}
	})

	t.Run("completes after all that", func(t *testing.T) {
		e.api.Script(claudetest.TextReply("still here"))
		res, err := runTurn(context.Background(), e.h, s.ID, "again", nil)
		if err != nil || res.Status != TurnCompleted || res.Final != "still here" {
			t.Fatalf("Run = %+v, %v", res, err)
		}
	})
}
