package harness

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/session"
)

// readUntil reads seq until stop says so; it returns the types read and
// whether seq ended by itself (not by stop).
func readUntil(t *testing.T, seq func(func(session.Record, error) bool), stop func(session.Record) bool) (types []event.Type, ended bool) {
	t.Helper()
	ended = true
	for rec, err := range seq {
		if err != nil {
			t.Fatalf("after %v: %v", types, err)
		}
		if rec.Typed == nil {
			t.Fatalf("record %d without its typed event", rec.Seq)
		}
		types = append(types, rec.Typed.Type)
		if stop != nil && stop(rec) {
			ended = false
			break
		}
	}
	return types, ended
}

// The one context rule, for a session's turn and for an ephemeral one:
// cancelling the ctx given to Events ends the sequence; the turn goes on,
// completes and (a session's) is stored; Events read again yields it
// whole, to its process:exit.
func TestEventsContextStopsReadingNotTheTurn(t *testing.T) {
	e := newTestEnv(t, nil)
	s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		req  TurnRequest
	}{
		{"session", TurnRequest{SessionID: s.ID, Message: "talk slowly"}},
		{"ephemeral", TurnRequest{Engine: engine.ClaudeCode, Message: "talk slowly", Request: engine.Request{Cwd: e.root}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.api.Script(shortSlowReply())
			tr, err := e.h.StartTurn(context.Background(), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			types, ended := readUntil(t, tr.Events(ctx), func(rec session.Record) bool {
				if rec.Typed.Type == event.TypeChatDelta {
					cancel() // the reader goes away mid-turn
				}
				return false
			})
			if !ended || len(types) == 0 || types[len(types)-1] == event.TypeProcessExit {
				t.Fatalf("the cancelled sequence read %v; want it to end before the turn's end", types)
			}
			<-tr.Done()
			if err := tr.Err(); err != nil {
				t.Fatalf("the turn: %v, want it completed", err)
			}
			types, _ = readUntil(t, tr.Events(context.Background()), nil)
			joined := strings.Join(eventTypes(types), ",")
			if !strings.HasSuffix(joined, "session:complete,process:exit") || strings.Count(joined, "process:exit") != 1 {
				t.Errorf("the turn read again: %s", joined)
			}
			if tc.req.SessionID == "" {
				return
			}
			// Stored: the log has it, from user:message to process:exit.
			follow, err := e.h.Follow(context.Background(), s.ID, tr.StartSeq)
			if err != nil {
				t.Fatal(err)
			}
			stored, _ := readUntil(t, func(yield func(session.Record, error) bool) {
				for rec, err := range follow {
					if err == nil && rec.Typed == nil {
						ev, derr := rec.Decode()
						if derr != nil {
							t.Fatal(derr)
						}
						rec.Typed = &ev
					}
					if !yield(rec, err) {
						return
					}
				}
			}, nil)
			if got := strings.Join(eventTypes(stored), ","); got != joined || stored[0] != event.TypeUserMessage {
				t.Errorf("stored %s\nEvents %s", got, joined)
			}
		})
	}
}

// Interrupt stops a turn, a session's or an ephemeral one; a reader sees
// it end interrupted. Events yields one turn only, even when the session
// has run another since.
func TestInterruptStopsTheTurnAndEventsIsOneTurn(t *testing.T) {
	e := newTestEnv(t, nil)
	s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct"})
	if err != nil {
		t.Fatal(err)
	}
	for _, req := range []TurnRequest{
		{SessionID: s.ID, Message: "talk slowly"},
		{Engine: engine.ClaudeCode, Message: "talk slowly", Request: engine.Request{Cwd: e.root}},
	} {
		e.api.Script(slowReply())
		tr, err := e.h.StartTurn(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		interrupted := false
		res, err := tr.Wait(context.Background(), func(rec session.Record) error {
			if rec.Typed.Type == event.TypeChatDelta && !interrupted {
				interrupted = true
				return tr.Interrupt()
			}
			return nil
		})
		var te *TurnError
		if !errors.As(err, &te) || !te.Interrupted() || res.Status != TurnInterrupted || res.Exit == nil {
			t.Fatalf("%q: Wait = %+v, %v; want an interrupted turn", req.SessionID, res, err)
		}
		if err := tr.Kill(); !errors.Is(err, ErrNotRunning) {
			t.Errorf("%q: Kill after the end: %v, want ErrNotRunning", req.SessionID, err)
		}
	}

	e.api.Script(claudetest.TextReply("first"))
	first, err := e.h.StartTurn(context.Background(), TurnRequest{SessionID: s.ID, Message: "one"})
	if err != nil {
		t.Fatal(err)
	}
	<-first.Done()
	e.api.Script(claudetest.TextReply("second"))
	second, err := e.h.StartTurn(context.Background(), TurnRequest{SessionID: s.ID, Message: "two"})
	if err != nil {
		t.Fatal(err)
	}
	<-second.Done()
	res, err := first.Wait(context.Background(), nil)
	if err != nil || res.Final != "first" || res.LastSeq >= second.StartSeq+1 {
		t.Errorf("the first turn read after the second ran: %+v, %v (second starts after seq %d)", res, err, second.StartSeq)
	}
}

// shortSlowReply is slowReply that ends by itself in a few seconds: for
// tests that read a turn to its end after a reader left it.
func shortSlowReply() claudetest.Reply {
	r := slowReply()
	r.Blocks = []claudetest.Block{claudetest.Text(shortSlowText)}
	return r
}

var shortSlowText = strings.Repeat("slow words ", 40)

func eventTypes(ts []event.Type) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = string(t)
	}
	return out
}
