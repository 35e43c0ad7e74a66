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

// Run hands each event typed (the same event as its JSON says) and
// returns how the turn ended.
func TestRunTypedEventsAndResult(t *testing.T) {
	e := newTestEnv(t, nil)
	s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct"})
	if err != nil {
		t.Fatal(err)
	}
	e.api.Script(claudetest.TextReply("the final answer"))
	var recs []session.Record
	res, err := e.h.Run(context.Background(), s.ID, "say it", func(rec session.Record) error {
		recs = append(recs, rec)
		return nil
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
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
		t.Errorf("%d records in the log, Run saw %d", i, len(recs))
	}
}

// How a turn that did not complete ends: interrupted, a cancelled
// context, a callback that fails; and the start errors.
func TestRunEndings(t *testing.T) {
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
		res, err := e.h.Run(context.Background(), s.ID, "talk slowly", onFirstDelta(func() error { return e.h.Interrupt(s.ID) }))
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

	t.Run("context cancelled", func(t *testing.T) {
		e.api.Script(slowReply())
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		res, err := e.h.Run(ctx, s.ID, "talk slowly", onFirstDelta(func() error { cancel(); return nil }))
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if res.Status != TurnInterrupted || res.Exit == nil || res.Error == nil || res.Error.Kind != event.ErrorKilled {
			t.Errorf("result %+v (error %+v), want a killed turn", res, res.Error)
		}
	})

	t.Run("callback error", func(t *testing.T) {
		e.api.Script(slowReply())
		stop := errors.New("the reader gave up")
		calls := 0
		fn := onFirstDelta(func() error { return stop })
		res, err := e.h.Run(context.Background(), s.ID, "talk slowly", func(rec session.Record) error {
			calls++
			return fn(rec)
		})
		if !errors.Is(err, stop) {
			t.Fatalf("err = %v, want the callback's error", err)
		}
		n := calls
		// Wait returned after the turn ended: the session is free.
		if e.h.IsRunning(s.ID) {
			t.Error("after Run the session still runs a turn")
		}
		if calls != n || res.Exit != nil {
			t.Errorf("the callback was called after its error (%d calls), result %+v", calls, res)
		}
	})

	t.Run("start errors", func(t *testing.T) {
		if _, err := e.h.Run(context.Background(), s.ID, "  ", nil); !errors.Is(err, ErrEmptyMessage) {
			t.Errorf("blank message: %v", err)
		}
		if _, err := e.h.Run(context.Background(), "7d0ed6bc-0d0e-4b8a-9c53-6b6c6e0c1a7b", "hi", nil); !errors.Is(err, ErrNotFound) {
			t.Errorf("unknown session: %v", err)
		}
	})

	t.Run("completes after all that", func(t *testing.T) {
		e.api.Script(claudetest.TextReply("still here"))
		res, err := e.h.Run(context.Background(), s.ID, "again", nil)
		if err != nil || res.Status != TurnCompleted || res.Final != "still here" {
			t.Fatalf("Run = %+v, %v", res, err)
		}
	})
}
