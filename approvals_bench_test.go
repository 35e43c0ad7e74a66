package harness

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
)

// askEngine's turns ask their Approver once, timing both directions: Ask →
// a Follow reader holding approval:requested, and Approve → Ask returning.
type askEngine struct {
	ready    chan struct{}      // the reader is live: ask now
	asked    chan time.Time     // when Ask was called
	answered chan time.Duration // Approve → Ask returned
}

func (a *askEngine) Name() string                        { return "ask" }
func (a *askEngine) Check(context.Context) engine.Status { return engine.Status{Available: true} }
func (a *askEngine) Shutdown(context.Context) error      { return nil }
func (a *askEngine) StartTurn(_ context.Context, req engine.Request) (engine.Turn, error) {
	t := &chanTurn{ch: make(chan event.Event, 4)}
	go func() {
		k := req.SessionKey
		t.ch <- event.Event{Type: event.TypeSessionInit, SessionID: k, Init: &event.SessionInit{Engine: "ask", ConversationID: "c"}}
		<-a.ready // as a browser would be: connected before the question comes
		t0 := time.Now()
		a.asked <- t0
		req.Approver.Ask(context.Background(), engine.ApprovalRequest{ToolUseID: "t", ToolName: "Bash", Input: json.RawMessage(`{"command":"touch x"}`)})
		a.answered <- time.Since(answerSent)
		t.ch <- event.Event{Type: event.TypeSessionComplete, SessionID: k, Complete: &event.SessionComplete{}}
		t.ch <- event.Event{Type: event.TypeProcessExit, SessionID: k, Exit: &event.ProcessExit{}}
		close(t.ch)
	}()
	return t, nil
}

var answerSent time.Time // written before Approve, read after Ask returns (same benchmark goroutine order)

type chanTurn struct {
	ch  chan event.Event
	cur event.Event
}

func (t *chanTurn) Next() bool         { e, ok := <-t.ch; t.cur = e; return ok }
func (t *chanTurn) Event() event.Event { return t.cur }
func (t *chanTurn) Err() error         { return nil }
func (t *chanTurn) Interrupt() error   { return nil }
func (t *chanTurn) Kill() error        { return nil }
func (t *chanTurn) Close() error {
	for t.Next() {
	}
	return nil
}

// BenchmarkApprovalRoundTrip measures what the core adds to an approval:
// from the engine's question to the request at a reader already following
// the turn (a connected browser), and from Approve to the engine holding
// the answer (p50/p99 over b.N turns).
func BenchmarkApprovalRoundTrip(b *testing.B) {
	ae := &askEngine{ready: make(chan struct{}, 1), asked: make(chan time.Time, 1), answered: make(chan time.Duration, 1)}
	root := b.TempDir()
	h, err := New(Config{Roots: []string{root}, StateDir: b.TempDir(), Engines: []engine.Engine{ae}, DefaultEngine: "ask",
		Approvals: true, PermissionMode: "default", NoProjectLogs: true})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Shutdown(context.Background())
	s, _ := h.NewSession(SessionSpec{ProjectRoot: root, Mode: "direct"})
	var toReader, toEngine []time.Duration
	for range b.N {
		tr, err := h.StartTurn(context.Background(), TurnRequest{SessionID: s.ID, Message: "go"})
		if err != nil {
			b.Fatal(err)
		}
		events, _ := h.Follow(context.Background(), s.ID, tr.StartSeq)
		for rec := range events {
			var ev event.Event
			json.Unmarshal(rec.Event, &ev)
			if ev.Type == event.TypeSessionInit {
				ae.ready <- struct{}{}
			}
			if ev.Type == event.TypeApprovalRequested {
				toReader = append(toReader, time.Since(<-ae.asked))
				answerSent = time.Now()
				if err := h.Approve(s.ID, ev.Approval.RequestID, ApprovalAnswer{Decision: "allow"}); err != nil {
					b.Fatal(err)
				}
				toEngine = append(toEngine, <-ae.answered)
			}
		}
		<-tr.Done()
	}
	b.StopTimer()
	for name, d := range map[string][]time.Duration{"ask→reader": toReader, "approve→engine": toEngine} {
		slices.Sort(d)
		b.ReportMetric(float64(d[len(d)/2].Microseconds()), name+"-p50-µs")
		b.ReportMetric(float64(d[len(d)*99/100].Microseconds()), name+"-p99-µs")
	}
}
