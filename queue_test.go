package harness

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
)

// queueEngine records the message of every turn it starts, in order. A
// turn whose message starts with "hold" waits until the engine is
// released (or shut down); the others complete at once.
type queueEngine struct {
	mu      sync.Mutex
	msgs    []string
	release chan struct{}
	once    sync.Once
	cost    float64 // each turn's session:complete says so
}

func newQueueEngine() *queueEngine { return &queueEngine{release: make(chan struct{})} }

func (q *queueEngine) Name() string { return "queue" }
func (q *queueEngine) Check(context.Context) engine.Status {
	return engine.Status{Kind: "queue", Available: true}
}
func (q *queueEngine) Shutdown(context.Context) error { q.free(); return nil }
func (q *queueEngine) free()                          { q.once.Do(func() { close(q.release) }) }
func (q *queueEngine) messages() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.msgs)
}
func (q *queueEngine) StartTurn(_ context.Context, req engine.Request) (engine.Turn, error) {
	q.mu.Lock()
	q.msgs = append(q.msgs, req.Message)
	q.mu.Unlock()
	return &queueTurn{q: q, key: req.SessionKey, hold: strings.HasPrefix(req.Message, "hold"), stop: make(chan struct{})}, nil
}

type queueTurn struct {
	q        *queueEngine
	key      string
	hold     bool
	i        int
	ev       event.Event
	stop     chan struct{}
	stopOnce sync.Once
}

func (t *queueTurn) Next() bool {
	switch t.i++; t.i {
	case 1:
		t.ev = event.Event{Type: event.TypeSessionInit, SessionID: t.key, Init: &event.SessionInit{Engine: "queue", ConversationID: "q1"}}
	case 2:
		if t.hold {
			select {
			case <-t.q.release:
			case <-t.stop:
			}
		}
		t.ev = event.Event{Type: event.TypeSessionComplete, SessionID: t.key, Complete: &event.SessionComplete{CostUSD: t.q.cost}}
	case 3:
		t.ev = event.Event{Type: event.TypeProcessExit, SessionID: t.key, Exit: &event.ProcessExit{}}
	default:
		return false
	}
	return true
}
func (t *queueTurn) Event() event.Event { return t.ev }
func (t *queueTurn) Err() error         { return nil }
func (t *queueTurn) Interrupt() error   { t.stopOnce.Do(func() { close(t.stop) }); return nil }
func (t *queueTurn) Kill() error        { return t.Interrupt() }
func (t *queueTurn) Close() error       { return nil }

// queueEnv is a Harness with the queue engine.
func queueEnv(t *testing.T) (*testEnv, *queueEngine, string) {
	t.Helper()
	qe := newQueueEngine()
	e := newTestEnv(t, func(c *Config) { c.Engines = append(c.Engines, qe) })
	s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct", Engine: "queue"})
	if err != nil {
		t.Fatal(err)
	}
	return e, qe, s.ID
}

// startQueued is StartTurn with Queue, its outcome unpacked: a started
// turn, or where the message was queued, or the error.
func startQueued(ctx context.Context, h *Harness, id, message string, o TurnOptions) (*Turn, *Queued, error) {
	t, err := h.StartTurn(ctx, TurnRequest{SessionID: id, Message: message, Options: o, Queue: true})
	if q := (*Queued)(nil); errors.As(err, &q) {
		if t != nil {
			return t, q, errors.New("StartTurn returned a turn and queued")
		}
		return nil, q, nil
	}
	return t, nil, err
}

// logEvents reads session id's whole log.
func logEvents(t *testing.T, e *testEnv, h *Harness, id string) []stored {
	t.Helper()
	var out []stored
	elog, err := h.Store().EventLog(id)
	if err != nil {
		t.Fatal(err)
	}
	for rec, err := range elog.Records(0) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, decode(t, rec))
	}
	return out
}

func promptIDs(ps []QueuedPrompt) []string {
	var ids []string
	for _, p := range ps {
		ids = append(ids, p.Message)
	}
	return ids
}

// Three prompts queued behind a long turn: a person deletes one and moves
// another to the front; they run in the order the person left, each as
// its own turn opened by prompt:dequeued, after the long turn ends.
// Without queueing, the busy session still refuses (ErrBusy).
func TestQueueRunsInOrderWithEditsHonoured(t *testing.T) {
	e, qe, id := queueEnv(t)
	ctx := context.Background()
	tr, q, err := startQueued(ctx, e.h, id, "hold the first turn", TurnOptions{})
	if err != nil || tr == nil || q != nil {
		t.Fatalf("StartTurn with Queue on an idle session = %v, %+v, %v; want a started turn", tr, q, err)
	}
	if _, err := e.h.StartTurn(ctx, TurnRequest{SessionID: id, Message: "not queued"}); !errors.Is(err, ErrBusy) {
		t.Fatalf("StartTurn on a busy session = %v, want ErrBusy", err)
	}
	var ids []string
	for i, m := range []string{"one", "two", "three"} {
		tr, err := e.h.StartTurn(ctx, TurnRequest{SessionID: id, Message: m, Queue: true})
		var q *Queued
		if !errors.As(err, &q) || !errors.Is(err, ErrQueued) || tr != nil || q.Position != i || q.PromptID == "" {
			t.Fatalf("queue %q = %v, %v; want a *Queued error at %d and no turn", m, tr, err, i)
		}
		ids = append(ids, q.PromptID)
	}
	if _, err := e.h.StartTurn(ctx, TurnRequest{Message: "ephemeral", Queue: true}); !errors.Is(err, ErrInvalidTurnOptions) {
		t.Fatalf("an ephemeral turn asking to queue = %v, want ErrInvalidTurnOptions", err)
	}
	if err := e.h.DeleteQueued(id, ids[1]); err != nil {
		t.Fatal(err)
	}
	if err := e.h.DeleteQueued(id, ids[1]); !errors.Is(err, ErrPromptNotFound) {
		t.Fatalf("deleting twice = %v, want ErrPromptNotFound", err)
	}
	zero, edited := 0, "one, edited"
	if _, err := e.h.EditQueued(id, ids[2], QueueEdit{Position: &zero}); err != nil {
		t.Fatal(err)
	}
	list, err := e.h.EditQueued(id, ids[0], QueueEdit{Message: &edited})
	if err != nil {
		t.Fatal(err)
	}
	if got := promptIDs(list); !slices.Equal(got, []string{"three", "one, edited"}) {
		t.Fatalf("queue after the edits = %v", got)
	}
	qe.free()
	<-tr.Done()
	waitFor(t, "the queue to drain", func() bool {
		l, _ := e.h.Queue(id)
		return len(l) == 0 && len(qe.messages()) == 3 && !e.h.IsRunning(id)
	})
	if got := qe.messages(); !slices.Equal(got, []string{"hold the first turn", "three", "one, edited"}) {
		t.Fatalf("turns ran %q", got)
	}
	evs := logEvents(t, e, e.h, id)
	if n := len(ofType(evs, event.TypePromptQueued)); n != 3 {
		t.Errorf("%d prompt:queued, want 3", n)
	}
	deq := ofType(evs, event.TypePromptDequeued)
	want := []event.PromptDequeued{{PromptID: ids[1], Reason: "deleted"}, {PromptID: ids[2], Reason: "started"}, {PromptID: ids[0], Reason: "started"}}
	if len(deq) != len(want) {
		t.Fatalf("prompt:dequeued %+v", deq)
	}
	for i, d := range deq {
		if *d.Dequeued != want[i] {
			t.Errorf("prompt:dequeued %d = %+v, want %+v", i, *d.Dequeued, want[i])
		}
	}
	// A started prompt opens its turn: its user:message comes next, and
	// every turn ends with its process:exit.
	for i, ev := range evs {
		if ev.Type == event.TypePromptDequeued && ev.Dequeued.Reason == "started" {
			if i+1 >= len(evs) || evs[i+1].Type != event.TypeUserMessage {
				t.Errorf("prompt:dequeued at seq %d is not followed by its user:message", ev.Seq)
			}
		}
	}
	if n, m := len(ofType(evs, event.TypeUserMessage)), len(ofType(evs, event.TypeProcessExit)); n != 3 || m != 3 {
		t.Errorf("%d user:message and %d process:exit, want 3 of each", n, m)
	}
}

// The queue is bounded: MaxQueued prompts, MaxQueuedMessage bytes each.
func TestQueueBounds(t *testing.T) {
	e, qe, id := queueEnv(t)
	ctx := context.Background()
	tr, _, err := startQueued(ctx, e.h, id, "hold", TurnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := startQueued(ctx, e.h, id, strings.Repeat("x", MaxQueuedMessage+1), TurnOptions{}); !errors.Is(err, ErrMessageTooLarge) {
		t.Fatalf("a message over the limit = %v, want ErrMessageTooLarge", err)
	}
	if _, _, err := startQueued(ctx, e.h, id, "  ", TurnOptions{}); !errors.Is(err, ErrEmptyMessage) {
		t.Fatalf("a blank message = %v, want ErrEmptyMessage", err)
	}
	for i := range MaxQueued {
		if _, _, err := startQueued(ctx, e.h, id, "p", TurnOptions{}); err != nil {
			t.Fatalf("prompt %d: %v", i, err)
		}
	}
	if _, _, err := startQueued(ctx, e.h, id, "one too many", TurnOptions{}); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("prompt %d = %v, want ErrQueueFull", MaxQueued+1, err)
	}
	neg := -1
	l, _ := e.h.Queue(id)
	if _, err := e.h.EditQueued(id, l[0].PromptID, QueueEdit{Position: &neg}); !errors.Is(err, ErrInvalidQueueEdit) {
		t.Fatalf("a negative position = %v, want ErrInvalidQueueEdit", err)
	}
	// Deleting the session drops its queue: nothing queued runs.
	if err := e.h.DeleteSession(ctx, id); err != nil {
		t.Fatal(err)
	}
	<-tr.Done()
	if got := qe.messages(); len(got) != 1 {
		t.Fatalf("after deleting the session, turns ran %d messages, want only the first", len(got))
	}
}

// A server abandoned mid-turn (as by SIGKILL) with a queued prompt's turn
// running and two more queued: a new Harness on the same root and state
// directory reports the cut turn, does not run the started prompt again,
// and runs the two queued ones in order, once each.
func TestQueueSurvivesAbandonedServer(t *testing.T) {
	e, qa, id := queueEnv(t)
	ctx := context.Background()
	first, _, err := startQueued(ctx, e.h, id, "first", TurnOptions{}) // completes at once
	if err != nil || first == nil {
		t.Fatal(err)
	}
	<-first.Done()
	waitFor(t, "the first turn to end", func() bool { return !e.h.IsRunning(id) })
	// Queue behind a held turn: "hold queued" starts from the queue and is cut.
	tr, _, err := startQueued(ctx, e.h, id, "hold running", TurnOptions{})
	if err != nil || tr == nil {
		t.Fatal(err)
	}
	for _, m := range []string{"hold cut", "after one", "after two"} {
		if _, q, err := startQueued(ctx, e.h, id, m, TurnOptions{}); err != nil || q == nil {
			t.Fatal(err)
		}
	}
	// The held turn ends only once its engine is released: let the first
	// held one end by interrupting it; "hold cut" then starts and holds.
	if err := e.h.Interrupt(id); err != nil {
		t.Fatal(err)
	}
	// Its session:init too: the engine's first event is emitted after the
	// engine started, and one written after the second server opened the
	// log would land between the cut turn's end and its report.
	waitFor(t, "the queued held turn to start", func() bool {
		evs := logEvents(t, e, e.h, id)
		return len(qa.messages()) == 3 && e.h.IsRunning(id) && len(evs) > 0 && evs[len(evs)-1].Type == event.TypeSessionInit
	})
	if got := qa.messages(); got[2] != "hold cut" {
		t.Fatalf("first server ran %q", got)
	}
	// The first server is abandoned here: its turn never ends, nothing
	// of it is shut down before the second one opens the same state; the
	// kernel would let a dead process's turn lock go (cutturn.go).
	e.h.dieForTest()
	qb := newQueueEngine()
	cfg := e.cfg
	cfg.Engines = []engine.Engine{qb}
	cfg.ResumeQueues = true
	h2, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h2.Shutdown(context.Background()) })
	waitFor(t, "the second server to drain the queue", func() bool {
		l, _ := h2.Queue(id)
		return len(l) == 0 && len(qb.messages()) == 2 && !h2.IsRunning(id)
	})
	if got := qb.messages(); !slices.Equal(got, []string{"after one", "after two"}) {
		t.Fatalf("second server ran %q, want the two queued prompts once each, in order", got)
	}
	evs := logEvents(t, e, h2, id)
	cut := false
	for i, ev := range evs {
		if ev.Type == event.TypeSessionError && strings.Contains(ev.Error.Error, "cut") {
			cut = i+1 < len(evs) && evs[i+1].Type == event.TypeProcessExit
		}
	}
	if !cut {
		t.Error("the cut turn is not reported (session:error then process:exit)")
	}
	if n, m := len(ofType(evs, event.TypeUserMessage)), len(ofType(evs, event.TypeProcessExit)); n != 5 || m != 5 {
		t.Errorf("%d user:message and %d process:exit, want 5 of each (every turn ended once)", n, m)
	}
}

// An event the core stores outside a turn (the queue's, a fork's, a
// rewind's) is scrubbed as a turn's events are: a queued prompt holding a
// key in a known format is stored redacted.
func TestEventsOutsideATurnAreScrubbed(t *testing.T) {
	e, _, id := queueEnv(t)
	const key = "sk-ant-api03-OutsideATurnSecretValue0123456789"
	ev := event.Event{Type: event.TypePromptQueued, Queued: &event.PromptQueued{PromptID: "p1", Message: "use " + key}}
	if err := e.h.appendEvent(id, ev); err != nil {
		t.Fatal(err)
	}
	evs := logEvents(t, e, e.h, id)
	last := evs[len(evs)-1]
	if last.Type != event.TypePromptQueued || last.Queued == nil || !strings.HasPrefix(last.Queued.Message, "use ") {
		t.Fatalf("last stored event %+v, want the prompt:queued", last)
	}
	if strings.Contains(last.Queued.Message, key) {
		t.Fatalf("stored unscrubbed: %q", last.Queued.Message)
	}
}

// A held queue starts no queued prompt: the running turn finishes, a
// prompt sent to the idle held session is queued rather than started, a
// direct turn is still allowed, and the hold outlives a restart. Released,
// the queue runs in order. The drains are called directly, so "nothing
// started" is asserted after the drain has surely run.
func TestQueueHoldPausesAndOutlivesRestart(t *testing.T) {
	e, qe, id := queueEnv(t)
	ctx := context.Background()
	tr, _, err := startQueued(ctx, e.h, id, "hold first", TurnOptions{})
	if err != nil || tr == nil {
		t.Fatal(err)
	}
	if err := e.h.HoldQueue(id, true); err != nil {
		t.Fatal(err)
	}
	if _, q, err := startQueued(ctx, e.h, id, "two", TurnOptions{}); err != nil || q == nil || q.Position != 0 {
		t.Fatalf("queue behind the running turn = %+v, %v", q, err)
	}
	qe.free()
	<-tr.Done()
	waitFor(t, "the first turn to end", func() bool { return !e.h.IsRunning(id) })
	e.h.drainQueue(id)
	if e.h.IsRunning(id) || len(qe.messages()) != 1 {
		t.Fatalf("a held queue started a prompt: turns ran %q", qe.messages())
	}
	// Idle and held: a prompt is queued, not started.
	tr2, q, err := startQueued(ctx, e.h, id, "three", TurnOptions{})
	if err != nil || tr2 != nil || q == nil || q.Position != 1 {
		t.Fatalf("StartTurn with Queue on an idle held session = %v, %+v, %v; want queued at 1", tr2, q, err)
	}
	// A direct turn is not the queue's: the hold does not refuse it.
	direct, err := e.h.StartTurn(ctx, TurnRequest{SessionID: id, Message: "direct"})
	if err != nil {
		t.Fatalf("a direct turn on a held idle session = %v", err)
	}
	<-direct.Done()
	waitFor(t, "the direct turn to end", func() bool { return !e.h.IsRunning(id) })
	e.h.drainQueue(id)
	if got := qe.messages(); !slices.Equal(got, []string{"hold first", "direct"}) {
		t.Fatalf("turns ran %q while held", got)
	}
	if err := e.h.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	// A restart keeps the hold and the queue.
	qb := newQueueEngine()
	qb.free()
	cfg := e.cfg
	cfg.Engines = []engine.Engine{qb}
	cfg.ResumeQueues = true
	h2, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h2.Shutdown(context.Background()) })
	h2.drainQueue(id)
	if held, err := h2.QueueHeld(id); err != nil || !held {
		t.Fatalf("after a restart QueueHeld = %v, %v; want held", held, err)
	}
	if l, _ := h2.Queue(id); !slices.Equal(promptIDs(l), []string{"two", "three"}) || len(qb.messages()) != 0 {
		t.Fatalf("after a restart the held queue is %q and turns ran %q", promptIDs(l), qb.messages())
	}
	if err := h2.HoldQueue(id, false); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the released queue to drain", func() bool {
		l, _ := h2.Queue(id)
		return len(l) == 0 && len(qb.messages()) == 2 && !h2.IsRunning(id)
	})
	if got := qb.messages(); !slices.Equal(got, []string{"two", "three"}) {
		t.Fatalf("released, the queue ran %q", got)
	}
	if held, err := h2.QueueHeld(id); err != nil || held {
		t.Fatalf("released, QueueHeld = %v, %v", held, err)
	}
	// Nothing left and not held: no queue file is kept (the drain after
	// the last turn removes it; called here, it has surely run).
	h2.drainQueue(id)
	if ids := h2.Store().QueuedSessions(cfg.Roots); slices.Contains(ids, id) {
		t.Errorf("an empty released queue is still stored")
	}
}

// hookDrained returns a channel that gets a value as a drain of a queue
// returns (at most one waits); call it before the Harness is made, whose
// Shutdown then comes before the hook goes (cleanups run last first).
func hookDrained(t *testing.T) <-chan struct{} {
	drained := make(chan struct{}, 1)
	testHookDrained = func(string) {
		select {
		case drained <- struct{}{}:
		default:
		}
	}
	t.Cleanup(func() { testHookDrained = nil })
	return drained
}

// A prompt queued while the session is reserved (a rewind, a files
// restore, a worktree merge or commit: the session is busy but no turn
// runs) starts when the reservation ends, as it does when a turn ends:
// nothing else would start it on the idle session.
func TestQueuedPromptStartsWhenAReservationEnds(t *testing.T) {
	drained := hookDrained(t)
	e, qe, id := queueEnv(t)
	release, err := e.h.reserve(id)
	if err != nil {
		t.Fatal(err)
	}
	tr, q, err := startQueued(context.Background(), e.h, id, "after the restore", TurnOptions{})
	if err != nil || tr != nil || q == nil {
		t.Fatalf("StartTurn with Queue on a reserved session = %v, %+v, %v; want it queued", tr, q, err)
	}
	<-drained // the drain its queueing kicked found the session busy
	release()
	waitFor(t, "the queued prompt to run", func() bool {
		l, _ := e.h.Queue(id)
		return len(l) == 0 && slices.Equal(qe.messages(), []string{"after the restore"}) && !e.h.IsRunning(id)
	})
}

// A record stored in a session's log while a turn runs but not through
// the turn's stream is not lost to a reader that follows the turn live:
// it finds the gap in the seqs and reads the missing records from the
// log. queueEvent stores a queue event so (appendEvent) when the turn in
// the running set has no runner yet: a prompt queued, edited or deleted
// while the next turn starts (between occupy and its runner). The test
// stores one so directly, in the middle of a turn.
func TestFollowReadsARecordStoredBesideTheTurn(t *testing.T) {
	e, qe, id := queueEnv(t)
	ctx := context.Background()
	tr, err := e.h.StartTurn(ctx, TurnRequest{SessionID: id, Message: "hold the turn"})
	if err != nil {
		t.Fatal(err)
	}
	seqs := make(chan int64, 64)
	follow, err := e.h.Follow(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(seqs)
		for rec, err := range follow {
			if err != nil {
				t.Error(err)
				return
			}
			seqs <- rec.Seq
		}
	}()
	var got []int64
	for s := range seqs { // user:message, session:init: the reader waits for the turn's next
		if got = append(got, s); s == 2 {
			break
		}
	}
	if err := e.h.appendEvent(id, event.Event{Type: event.TypePromptQueued, Queued: &event.PromptQueued{PromptID: "p1", Message: "later"}}); err != nil {
		t.Fatal(err)
	}
	qe.free()
	<-tr.Done()
	for s := range seqs {
		got = append(got, s)
	}
	if want := []int64{1, 2, 3, 4, 5}; !slices.Equal(got, want) {
		t.Fatalf("the live reader read seqs %v, want %v", got, want)
	}
}

// gatedFailEngine is the queue engine whose turns of a message starting
// with "fail" fail to start, once gate is closed.
type gatedFailEngine struct {
	*queueEngine
	gate chan struct{}
}

func (g gatedFailEngine) StartTurn(ctx context.Context, req engine.Request) (engine.Turn, error) {
	if strings.HasPrefix(req.Message, "fail") {
		<-g.gate
		return nil, errors.New("the agent could not start")
	}
	return g.queueEngine.StartTurn(ctx, req)
}

// A prompt whose drain found the session busy with a turn that then
// failed to start runs all the same: that turn never ends as a turn that
// ran does (its runner is what starts the next queued prompt), so its
// failed start starts it.
func TestQueuedPromptStartsWhenABusyTurnFailsToStart(t *testing.T) {
	drained := hookDrained(t)
	qe := newQueueEngine()
	ge := gatedFailEngine{queueEngine: qe, gate: make(chan struct{})}
	e := newTestEnv(t, func(c *Config) { c.Engines = append(c.Engines, ge) })
	s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct", Engine: "queue"})
	if err != nil {
		t.Fatal(err)
	}
	id := s.ID
	failed := make(chan error, 1)
	go func() {
		_, err := e.h.StartTurn(context.Background(), TurnRequest{SessionID: id, Message: "fail to start"})
		failed <- err
	}()
	waitFor(t, "the failing turn to occupy the session", func() bool { return e.h.IsRunning(id) })
	if _, err := e.h.Enqueue(id, "after the failure"); err != nil {
		t.Fatal(err)
	}
	<-drained // the drain its queueing kicked found the session busy
	close(ge.gate)
	if err := <-failed; err == nil {
		t.Fatal("the failing turn started")
	}
	waitFor(t, "the queued prompt to run", func() bool {
		l, _ := e.h.Queue(id)
		return len(l) == 0 && slices.Equal(qe.messages(), []string{"after the failure"}) && !e.h.IsRunning(id)
	})
}
