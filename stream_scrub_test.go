package harness

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/internal/secrets"
	"github.com/chirality/harness/session"
)

// deltaEngine plays a fixed list of events as its turn. With hang, the
// turn then waits for Interrupt and ends as an interrupted turn does
// (session:error of kind interrupted, a non-zero process:exit).
type deltaEngine struct {
	evs     []event.Event
	hang    bool
	waiting chan struct{} // closed when the turn waits for Interrupt
}

func (d *deltaEngine) Name() string { return "delta" }
func (d *deltaEngine) Check(context.Context) engine.Status {
	return engine.Status{Kind: "delta", Available: true}
}
func (d *deltaEngine) Shutdown(context.Context) error { return nil }
func (d *deltaEngine) StartTurn(context.Context, engine.Request) (engine.Turn, error) {
	return &hangTurn{evs: d.evs, hang: d.hang, i: -1, stop: make(chan struct{}), waiting: d.waiting}, nil
}

type hangTurn struct {
	evs     []event.Event
	hang    bool
	i       int
	once    sync.Once
	stop    chan struct{}
	waiting chan struct{}
}

func (t *hangTurn) Next() bool {
	t.i++
	if t.i == len(t.evs) && t.hang {
		t.hang = false
		close(t.waiting) // every event before has been emitted: the runner asks for the next only then
		select {
		case <-t.stop:
		case <-time.After(30 * time.Second): // the test fails on the kind below
		}
		t.evs = append(t.evs,
			event.Event{Type: event.TypeSessionError, Error: &event.SessionError{Error: "interrupted", Kind: event.ErrorInterrupted}},
			event.Event{Type: event.TypeProcessExit, Exit: engine.TurnExit(false, 0, "")})
	}
	return t.i < len(t.evs)
}
func (t *hangTurn) Event() event.Event { return t.evs[t.i] }
func (t *hangTurn) Err() error         { return nil }
func (t *hangTurn) Interrupt() error   { t.once.Do(func() { close(t.stop) }); return nil }
func (t *hangTurn) Kill() error        { return t.Interrupt() }
func (t *hangTurn) Close() error       { return nil }

func deltas(typ event.Type, parts ...string) []event.Event {
	var evs []event.Event
	for _, p := range parts {
		evs = append(evs, event.Event{Type: typ, Text: p})
	}
	return evs
}

// joined is the text of a turn's events of type typ, in order.
func joined(evs []stored, typ event.Type) string {
	var b strings.Builder
	for _, ev := range evs {
		if ev.Type == typ {
			b.WriteString(ev.Text)
		}
	}
	return b.String()
}

// Issue 24: a secret split across two streamed deltas (a registered
// value in thinking, a key-shaped one in the answer) reaches neither
// the event log nor a live reader, not even in part; the text around it
// is whole and in order, and the completed block says the same.
func TestSecretSplitAcrossDeltas(t *testing.T) {
	const value = "stream-core-secret-value-77" // withheld from the agent
	const key = "sk-ant-api03-CoreSplitKey0123456789"
	secrets.FilterEnv([]string{"MY_SERVICE_PASSWORD=" + value}, nil)
	var evs []event.Event
	evs = append(evs, event.Event{Type: event.TypeSessionInit, Init: &event.SessionInit{Engine: "delta", ConversationID: "c1"}})
	evs = append(evs, deltas(event.TypeThinkingDelta, "the password is stream-core-", "secret-value-77, so")...)
	evs = append(evs, deltas(event.TypeChatDelta, "Your key: sk-an", "t-api03-CoreSplit", "Key0123456789", " — keep it.")...)
	evs = append(evs,
		event.Event{Type: event.TypeChatComplete, Text: "Your key: " + key + " — keep it."},
		event.Event{Type: event.TypeToolStart, ToolStart: &event.ToolStart{ToolUseID: "t1", Name: "Bash", Input: []byte(`{}`)}})
	// A tail held at a tool:start: released before it.
	evs = append(evs, deltas(event.TypeChatDelta, "then sk-ant-")...)
	evs = append(evs,
		event.Event{Type: event.TypeToolStart, ToolStart: &event.ToolStart{ToolUseID: "t2", Name: "Bash", Input: []byte(`{}`)}},
		event.Event{Type: event.TypeSessionComplete, Complete: &event.SessionComplete{}},
		event.Event{Type: event.TypeProcessExit, Exit: engine.TurnExit(true, 0, "")})
	e := newTestEnv(t, func(c *Config) { c.Engines = []engine.Engine{&deltaEngine{evs: evs}}; c.DefaultEngine = "delta" })
	s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct"})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := e.h.StartTurn(context.Background(), TurnRequest{SessionID: s.ID, Message: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	var live []string
	if _, err := tr.Wait(context.Background(), func(rec session.Record) error { live = append(live, string(rec.Event)); return nil }); err != nil {
		t.Fatal(err)
	}
	got := e.follow(e.h, s.ID, tr.StartSeq)
	checkTurn(t, s.ID, tr.StartSeq, got)
	if th := joined(got, event.TypeThinkingDelta); th != "the password is [REDACTED], so" {
		t.Errorf("thinking = %q", th)
	}
	if chat := joined(got, event.TypeChatDelta); chat != "Your key: [REDACTED] — keep it.then sk-ant-" {
		t.Errorf("chat deltas = %q", chat)
	}
	var order []string
	for _, ev := range got {
		order = append(order, string(ev.Type))
		if ev.Type == event.TypeChatComplete && ev.Text != "Your key: [REDACTED] — keep it." {
			t.Errorf("chat:complete = %q", ev.Text)
		}
	}
	// The tail "then sk-ant-" comes out before the tool:start that ended
	// its block; the thinking block's tail before the first chat delta.
	if want := "user:message session:init thinking:delta thinking:delta chat:delta chat:delta chat:delta chat:complete tool:start chat:delta chat:delta tool:start session:complete process:exit"; strings.Join(order, " ") != want {
		t.Errorf("events\n %s\nwant\n %s", strings.Join(order, " "), want)
	}
	all := strings.Join(live, "\n")
	for _, ev := range got {
		all += "\n" + ev.Raw
	}
	for _, frag := range []string{"core-secret", "secret-value-77", "CoreSplit", "0123456789", "api03"} {
		if strings.Contains(all, frag) {
			t.Errorf("a part of a secret (%q) was stored or published:\n%s", frag, all)
		}
	}
}

// Issue 24: what a block holds back at the end of an interrupted turn
// is emitted before the turn's session:error: nothing is lost.
func TestHeldTailFlushedOnInterrupt(t *testing.T) {
	evs := []event.Event{{Type: event.TypeSessionInit, Init: &event.SessionInit{Engine: "delta", ConversationID: "c1"}}}
	evs = append(evs, deltas(event.TypeChatDelta, "Working on it; the key starts sk-ant-AB")...)
	de := &deltaEngine{evs: evs, hang: true, waiting: make(chan struct{})}
	e := newTestEnv(t, func(c *Config) {
		c.Engines = []engine.Engine{de}
		c.DefaultEngine = "delta"
	})
	s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct"})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := e.h.StartTurn(context.Background(), TurnRequest{SessionID: s.ID, Message: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-de.waiting:
	case <-time.After(30 * time.Second):
		t.Fatal("the turn never reached its end")
	}
	if err := e.h.Interrupt(s.ID); err != nil {
		t.Fatal(err)
	}
	got := e.follow(e.h, s.ID, tr.StartSeq)
	checkTurn(t, s.ID, tr.StartSeq, got)
	if chat := joined(got, event.TypeChatDelta); chat != "Working on it; the key starts sk-ant-AB" {
		t.Errorf("chat deltas = %q: the held tail was lost", chat)
	}
	var order []string
	for _, ev := range got {
		order = append(order, string(ev.Type))
		if ev.Type == event.TypeSessionError && ev.Error.Kind != event.ErrorInterrupted {
			t.Errorf("session:error %+v", ev.Error)
		}
	}
	if want := "user:message session:init chat:delta chat:delta session:error process:exit"; strings.Join(order, " ") != want {
		t.Errorf("events\n %s\nwant\n %s", strings.Join(order, " "), want)
	}
}
