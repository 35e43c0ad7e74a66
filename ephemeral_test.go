package harness

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
)

// leakEngine is an engine whose agent prints the secret it was handed
// (its ChildEnv's key) in a tool result, in deltas that split it, and in
// its error.
type leakEngine struct {
	req engine.Request
	// scrubbed: its turns say their events are scrubbed already
	// (engine.ScrubbedTurn), with this answer.
	scrubbed *bool
}

func (l *leakEngine) Name() string { return "leak" }
func (l *leakEngine) Check(context.Context) engine.Status {
	return engine.Status{Kind: "leak", Available: true}
}
func (l *leakEngine) Shutdown(context.Context) error { return nil }
func (l *leakEngine) StartTurn(_ context.Context, req engine.Request) (engine.Turn, error) {
	l.req = req
	key := ""
	for _, kv := range req.Env {
		if v, ok := strings.CutPrefix(kv, "LEAK_API_KEY="); ok {
			key = v
		}
	}
	k := req.SessionKey
	lt := &leakTurn{sliceTurn: sliceTurn{i: -1, evs: []event.Event{
		{Type: event.TypeToolResult, SessionID: k, ToolResult: &event.ToolResult{ToolUseID: "t1", Content: "LEAK_API_KEY=" + key}},
		{Type: event.TypeChatDelta, SessionID: k, Text: "it is " + key[:5]},
		{Type: event.TypeChatDelta, SessionID: k, Text: key[5:] + " ok"},
		{Type: event.TypeSessionError, SessionID: k, Error: &event.SessionError{Kind: event.ErrorProcess, Error: "died with " + key}},
		{Type: event.TypeProcessExit, SessionID: k, Exit: &event.ProcessExit{Code: 1}},
	}}, err: errors.New("the agent said " + key)}
	if l.scrubbed != nil {
		return &claimTurn{leakTurn: lt, scrubbed: *l.scrubbed}, nil
	}
	return lt, nil
}

// claimTurn is a leakTurn that answers engine.ScrubbedTurn.
type claimTurn struct {
	*leakTurn
	scrubbed bool
}

func (t *claimTurn) EventsScrubbed() bool { return t.scrubbed }

type leakTurn struct {
	sliceTurn
	err error
}

func (t *leakTurn) Err() error { return t.err }

// Issue 29.5: a turn outside any session (`harness turn` without
// --session) goes through the core's scrubbing and leaves nothing in the
// project: no session, event log, prompt or log file.
func TestEphemeralTurnScrubsAndKeepsNothing(t *testing.T) {
	const key = "ephemeral-test-key-value-0123"
	root := realDir(t)
	le := &leakEngine{}
	h, err := New(Config{Roots: []string{root}, StateDir: t.TempDir(), Engines: []engine.Engine{le},
		ChildEnv: []string{"LEAK_API_KEY=" + key}, AllowedTools: []string{"Read"}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Shutdown(context.Background())
	if _, err := h.StartTurn(context.Background(), TurnRequest{Engine: "leak", Message: " "}); !errors.Is(err, ErrEmptyMessage) {
		t.Errorf("empty message: %v", err)
	}
	if _, err := h.StartTurn(context.Background(), TurnRequest{Engine: "nope", Message: "hi"}); !errors.Is(err, ErrUnknownEngine) {
		t.Errorf("unknown engine: %v", err)
	}
	if _, err := h.StartTurn(context.Background(), TurnRequest{Message: "hi", Options: TurnOptions{Persona: "REVIEWER"}}); !errors.Is(err, ErrInvalidTurnOptions) {
		t.Errorf("an ephemeral turn with a persona: %v", err)
	}
	tr, err := h.StartTurn(context.Background(), TurnRequest{Message: "hi", Request: engine.Request{Cwd: root, AllowedTools: []string{"Bash(ls)"}}})
	if err != nil {
		t.Fatal(err)
	}
	var evs []event.Event
	var all strings.Builder
	for rec, err := range tr.Events(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		ev := *rec.Typed
		if rec.Seq != int64(len(evs)+1) || rec.Event != nil || !strings.Contains(string(rec.Wire()), string(ev.Type)) {
			t.Errorf("record %d: seq %d, stored JSON %s, JSON %s", len(evs), rec.Seq, rec.Event, rec.Wire())
		}
		evs = append(evs, ev)
		all.Write(rec.Wire())
	}
	<-tr.Done()
	if tr.SessionID != "" || tr.Err() == nil {
		t.Fatalf("an ephemeral turn: session %q, error %v", tr.SessionID, tr.Err())
	}
	all.WriteString(tr.Err().Error())
	if strings.Contains(all.String(), key) || strings.Contains(all.String(), key[:5]+key[5:]) {
		t.Errorf("the key came out: %s", all.String())
	}
	var text string
	var types []string
	for _, ev := range evs {
		types = append(types, string(ev.Type))
		if ev.Type == event.TypeChatDelta {
			text += ev.Text
		}
	}
	if text != "it is [REDACTED] ok" {
		t.Errorf("deltas %q: the key split across two is replaced whole, the rest kept", text)
	}
	if got := strings.Join(types, ","); !strings.HasPrefix(got, "tool:result,") || !strings.HasSuffix(got, "session:error,process:exit") {
		t.Errorf("events %s", got)
	}
	if !strings.Contains(evs[0].ToolResult.Content, "LEAK_API_KEY=[REDACTED]") || !strings.Contains(tr.Err().Error(), "the agent said [REDACTED]") {
		t.Errorf("tool:result %q, error %q", evs[0].ToolResult.Content, tr.Err())
	}
	if le.req.SessionKey == "" || !strings.HasPrefix(le.req.SessionKey, "ephemeral-") || evs[0].SessionID != le.req.SessionKey {
		t.Errorf("session key %q, events' %q", le.req.SessionKey, evs[0].SessionID)
	}
	if strings.Join(le.req.AllowedTools, ",") != "Bash(ls),Read" || len(le.req.Env) != 1 {
		t.Errorf("the core's AllowedTools and ChildEnv are added: %q %q", le.req.AllowedTools, le.req.Env)
	}
	if _, err := os.Stat(filepath.Join(root, ".chirality")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the project has .chirality (%v): an ephemeral turn keeps nothing there", err)
	}
	h.Shutdown(context.Background())
	if _, err := h.StartTurn(context.Background(), TurnRequest{Engine: "leak", Message: "hi"}); !errors.Is(err, ErrClosed) {
		t.Errorf("after Shutdown: %v", err)
	}
}

// A turn whose engine scrubs its own events (engine.ScrubbedTurn: Claude
// Code's) is not scrubbed a second time by an ephemeral StartTurn: its events
// come out exactly as the engine gave them (this engine "forgot", so the
// key shows that no second pass ran), while its error is still scrubbed.
// A turn that answers false is scrubbed as any other.
func TestEphemeralTurnTrustsAnEngineThatScrubs(t *testing.T) {
	const key = "ephemeral-claim-key-value-4567"
	for _, claim := range []bool{true, false} {
		root := realDir(t)
		le := &leakEngine{scrubbed: &claim}
		h, err := New(Config{Roots: []string{root}, StateDir: t.TempDir(), Engines: []engine.Engine{le},
			ChildEnv: []string{"LEAK_API_KEY=" + key}})
		if err != nil {
			t.Fatal(err)
		}
		tr, err := h.StartTurn(context.Background(), TurnRequest{Message: "hi", Engine: "leak", Request: engine.Request{Cwd: root}})
		if err != nil {
			t.Fatal(err)
		}
		var text string
		n := 0
		for rec, err := range tr.Events(context.Background()) {
			if err != nil {
				t.Fatal(err)
			}
			n++
			if ev := rec.Typed; ev.Type == event.TypeChatDelta {
				text += ev.Text
			}
		}
		<-tr.Done()
		want := "it is [REDACTED] ok"
		if claim {
			want = "it is " + key + " ok"
		}
		if text != want || n != 5 {
			t.Errorf("EventsScrubbed %v: %d events, deltas %q, want 5 and %q", claim, n, text, want)
		}
		if e := tr.Err().Error(); e != "the agent said [REDACTED]" {
			t.Errorf("EventsScrubbed %v: error %q, want it scrubbed", claim, e)
		}
		h.Shutdown(context.Background())
	}
}

// A long ephemeral turn is not held whole (harness turn on a 54 MB
// stream held it all: 130 MB): a slow reader gets every record once, in
// order, while what is held stays within the bound; a reader that comes
// after the end starts at the oldest record still held and reads on to
// the end.
func TestEphemeralTurnHoldsABoundedTail(t *testing.T) {
	defer func(m int) { maxHeldBytes = m }(maxHeldBytes)
	maxHeldBytes = 16 << 10
	const n = 3000
	gate := make(chan struct{})
	tr := startCount(t, countEngine{n: n, gate: gate, pad: 100})
	want, most := int64(1), 0
	go func() {
		waitReaders(t, tr, 1) // the reader reads from the first record
		close(gate)
	}()
	for rec, err := range tr.Events(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		if rec.Seq != want {
			t.Fatalf("record %d, want %d", rec.Seq, want)
		}
		want++
		tr.eph.mu.Lock()
		most = max(most, tr.eph.bytes)
		tr.eph.mu.Unlock()
		if want%500 == 0 {
			time.Sleep(5 * time.Millisecond) // a slow reader: the engine turn must wait, not run ahead
		}
	}
	<-tr.Done()
	last := want - 1
	if last < n+1 {
		t.Fatalf("read %d records, want at least %d", last, n+1)
	}
	if limit := maxHeldBytes + 1024; most > limit {
		t.Errorf("held up to %d bytes, want at most %d", most, limit)
	}
	var late []int64
	for rec, err := range tr.Events(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		late = append(late, rec.Seq)
	}
	if len(late) == 0 || late[len(late)-1] != last || late[0] == 1 {
		t.Fatalf("a late reader read %d records from %v: want the held tail, up to %d", len(late), late[:min(3, len(late))], last)
	}
	for i := 1; i < len(late); i++ {
		if late[i] != late[i-1]+1 {
			t.Fatalf("a late reader's records are not consecutive at %d: %d then %d", i, late[i-1], late[i])
		}
	}
}

// countEngine's turns say "1", "2", … n as deltas (each followed by pad
// x's), then end; a turn waits for gate (when set) before its first
// event, and ends at once (process:exit) once interrupted.
type countEngine struct {
	n, pad int
	gate   chan struct{}
	deaf   bool // its turns ignore Interrupt (Kill still ends them)
}

func (c countEngine) Name() string { return "count" }
func (c countEngine) Check(context.Context) engine.Status {
	return engine.Status{Kind: "count", Available: true}
}
func (c countEngine) Shutdown(context.Context) error { return nil }
func (c countEngine) StartTurn(_ context.Context, req engine.Request) (engine.Turn, error) {
	return &countTurn{n: c.n, pad: strings.Repeat("x", c.pad), gate: c.gate, key: req.SessionKey, deaf: c.deaf}, nil
}

type countTurn struct {
	n, i    int
	deaf    bool
	pad     string
	gate    chan struct{}
	key     string
	ev      event.Event
	stopped atomic.Bool
	ended   bool
}

func (t *countTurn) Next() bool {
	if t.i == 0 && t.gate != nil {
		<-t.gate
	}
	t.i++
	switch {
	case t.ended:
		return false
	case t.stopped.Load():
		t.ended = true
		t.ev = event.Event{Type: event.TypeProcessExit, SessionID: t.key, Exit: &event.ProcessExit{Code: -1}}
	case t.i <= t.n:
		t.ev = event.Event{Type: event.TypeChatDelta, SessionID: t.key, Text: strconv.Itoa(t.i) + t.pad}
	default:
		t.ended = true
		t.ev = event.Event{Type: event.TypeProcessExit, SessionID: t.key, Exit: &event.ProcessExit{}}
	}
	return true
}
func (t *countTurn) Event() event.Event { return t.ev }
func (t *countTurn) Err() error         { return nil }
func (t *countTurn) Interrupt() error {
	if !t.deaf {
		t.stopped.Store(true)
	}
	return nil
}
func (t *countTurn) Kill() error  { t.stopped.Store(true); return nil }
func (t *countTurn) Close() error { return nil }

// readCount reads an ephemeral countEngine turn's records, checking that
// each is the next one and says its own number (a slot written again
// while a reader still had it would say another); every is called after
// each record.
func readCount(t *testing.T, tr *Turn, ctx context.Context, every func(seq int64)) (last int64) {
	t.Helper()
	for rec, err := range tr.Events(ctx) {
		if err != nil {
			t.Error(err)
			return last
		}
		if last != 0 && rec.Seq != last+1 {
			t.Errorf("record %d after %d", rec.Seq, last)
			return last
		}
		if ev := rec.Typed; ev.Type == event.TypeChatDelta && strings.TrimRight(ev.Text, "x") != strconv.FormatInt(rec.Seq, 10) {
			t.Errorf("record %d says %q", rec.Seq, ev.Text)
			return last
		}
		last = rec.Seq
		if every != nil {
			every(rec.Seq)
		}
	}
	return last
}

// startCount starts an ephemeral turn of c on a Harness that the test
// shuts down at its end.
func startCount(t *testing.T, c countEngine) *Turn {
	t.Helper()
	h, err := New(Config{Roots: []string{realDir(t)}, StateDir: t.TempDir(), Engines: []engine.Engine{c}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Shutdown(context.Background()) })
	tr, err := h.StartTurn(context.Background(), TurnRequest{Message: "count", Engine: "count"})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// waitReaders waits until the ephemeral turn tr has n readers.
func waitReaders(t *testing.T, tr *Turn, n int) {
	t.Helper()
	for {
		tr.eph.mu.Lock()
		r := len(tr.eph.readers)
		tr.eph.mu.Unlock()
		if r == n {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// Two readers of one ephemeral turn, one that reads the engine turn
// itself (its ctx cannot be cancelled) and one that the Harness feeds (a
// cancellable ctx, slower), each read every record once, in order, each
// saying its own number, through many times the records held (the ring
// is written again only behind the slower reader).
func TestEphemeralTurnTwoReadersReadEveryRecord(t *testing.T) {
	defer func(n int) { heldRecords = n }(heldRecords)
	heldRecords = 64
	const n = 5000
	gate := make(chan struct{})
	tr := startCount(t, countEngine{n: n, gate: gate})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	lasts := make([]int64, 2)
	for i, c := range []context.Context{context.Background(), ctx} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lasts[i] = readCount(t, tr, c, func(seq int64) {
				if i == 1 && seq%100 == 0 {
					time.Sleep(time.Millisecond) // the slower one
				}
			})
		}()
	}
	waitReaders(t, tr, 2) // both read from the first record
	close(gate)
	wg.Wait()
	<-tr.Done()
	for i, last := range lasts {
		if last != n+1 {
			t.Errorf("reader %d read up to %d, want %d (every record)", i, last, n+1)
		}
	}
}

// A reader that reads the engine turn itself and then stops (break)
// leaves the turn running: the Harness reads it to its end with no
// reader, and a late reader reads the newest records held.
func TestEphemeralTurnRunsOnWhenItsReaderLeaves(t *testing.T) {
	defer func(n int) { heldRecords = n }(heldRecords)
	heldRecords = 64
	const n = 1000
	tr := startCount(t, countEngine{n: n})
	read := 0
	for range tr.Events(context.Background()) {
		if read++; read == 10 {
			break
		}
	}
	select {
	case <-tr.Done():
	case <-time.After(time.Minute):
		t.Fatal("the turn stopped with its reader")
	}
	if tr.Err() != nil {
		t.Fatal(tr.Err())
	}
	if last := readCount(t, tr, context.Background(), nil); last != n+1 {
		t.Errorf("a late reader read up to %d, want %d", last, n+1)
	}
}

// Interrupt ends an ephemeral turn whose only reader stopped reading in
// the middle (its loop body blocks): the turn is not held back by that
// reader once stopped, and the reader, going on, still reads every
// record in order, to the end.
func TestEphemeralTurnStopsPastAStuckReader(t *testing.T) {
	defer func(n int) { heldRecords = n }(heldRecords)
	heldRecords = 16
	gate := make(chan struct{})
	tr := startCount(t, countEngine{n: 1 << 30, gate: gate})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stuck, release := make(chan struct{}), make(chan struct{})
	var last int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		last = readCount(t, tr, ctx, func(seq int64) {
			if seq == 5 {
				close(stuck)
				<-release
			}
		})
	}()
	waitReaders(t, tr, 1)
	close(gate)
	<-stuck
	// The turn is held back by the stuck reader (16 records ahead of it
	// at most) until it is interrupted.
	if err := tr.Interrupt(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-tr.Done():
	case <-time.After(time.Minute):
		t.Fatal("an interrupted turn waited for a stuck reader")
	}
	close(release)
	<-done
	tr.eph.mu.Lock()
	newest := tr.eph.newest
	tr.eph.mu.Unlock()
	if last != newest || last < 6 {
		t.Errorf("the reader read up to %d, want every record to the turn's last, %d", last, newest)
	}
}

// An agent that goes on after Interrupt while the turn's only reader is
// stuck does not grow the held records without end: past stoppedGrowth
// times the ring the turn is killed, it ends, and the reader, going on,
// still reads every record in order.
func TestEphemeralTurnKillsAnAgentThatOutrunsAStuckReader(t *testing.T) {
	defer func(n int) { heldRecords = n }(heldRecords)
	heldRecords = 16
	interruptPastAStuckReader(t, countEngine{n: 1 << 30, deaf: true}, 5, func(e *ephemeral) {
		if size := len(e.ring); size > 2*stoppedGrowth*16 {
			t.Errorf("the ring grew to %d records, want at most %d", size, 2*stoppedGrowth*16)
		}
	})
}

// The bound that kills an agent going on after Interrupt past a stuck
// reader is on what the held records cost too, not only on how many
// there are: an agent whose records are large (tool results, long
// deltas) must not grow the held text to stoppedGrowth times the ring's
// records at their size (with the real bounds, 32768 records of 64 KB
// are 2 GB) before it is killed.
func TestEphemeralTurnKillsAnAgentWhoseLargeRecordsOutrunAStuckReader(t *testing.T) {
	defer func(n, b int) { heldRecords, maxHeldBytes = n, b }(heldRecords, maxHeldBytes)
	heldRecords, maxHeldBytes = 64, 1<<10
	const pad = 100
	interruptPastAStuckReader(t, countEngine{n: 1 << 30, pad: pad, deaf: true}, 2, func(e *ephemeral) {
		// Killed once over stoppedGrowth times maxHeldBytes: what it had
		// at hand then (one record in flight) and its process:exit follow.
		if limit := stoppedGrowth*maxHeldBytes + 2*(pad+16); e.bytes > limit {
			t.Errorf("a stopped turn held %d bytes (%d records) past its stuck reader before it was killed, want at most %d", e.bytes, e.newest, limit)
		}
	})
}

// interruptPastAStuckReader runs c's turn (its gate is the helper's) with
// one reader that stops in its loop body at record stuckAt, interrupts
// the turn then and waits for its end, which an agent that ignores
// Interrupt only reaches by being killed; inspect sees the turn's held
// records then. The reader, let go on, must read every record in order,
// to the turn's last.
func interruptPastAStuckReader(t *testing.T, c countEngine, stuckAt int64, inspect func(*ephemeral)) {
	t.Helper()
	c.gate = make(chan struct{})
	tr := startCount(t, c)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stuck, release := make(chan struct{}), make(chan struct{})
	var last int64
	done := make(chan struct{})
	every := func(seq int64) {
		if seq == stuckAt {
			close(stuck)
			<-release
		}
	}
	go func() {
		defer close(done)
		if c.pad == 0 {
			last = readCount(t, tr, ctx, every)
			return
		}
		// Not readCount: the scrubber moves a delta's last byte to the
		// next delta, so a padded record does not say its own number.
		for rec, err := range tr.Events(ctx) {
			if err != nil || (last != 0 && rec.Seq != last+1) {
				t.Errorf("record %d after %d (%v)", rec.Seq, last, err)
				return
			}
			last = rec.Seq
			every(last)
		}
	}()
	waitReaders(t, tr, 1)
	close(c.gate)
	<-stuck
	if err := tr.Interrupt(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-tr.Done():
	case <-time.After(time.Minute):
		t.Fatal("an agent that ignored Interrupt grew the held records past a stuck reader and was not killed")
	}
	tr.eph.mu.Lock()
	inspect(tr.eph)
	newest := tr.eph.newest
	tr.eph.mu.Unlock()
	close(release)
	<-done
	if last != newest {
		t.Errorf("the reader read up to %d, want every record to the turn's last, %d", last, newest)
	}
}

// endlessEngine's turns wait for gate, then say deltas until the engine
// shuts down (as an engine's Shutdown ends its turns), then end.
type endlessEngine struct{ gate, down chan struct{} }

func (e endlessEngine) Name() string { return "endless" }
func (e endlessEngine) Check(context.Context) engine.Status {
	return engine.Status{Kind: "endless", Available: true}
}
func (e endlessEngine) Shutdown(context.Context) error { close(e.down); return nil }
func (e endlessEngine) StartTurn(_ context.Context, req engine.Request) (engine.Turn, error) {
	return &endlessTurn{gate: e.gate, down: e.down, key: req.SessionKey}, nil
}

type endlessTurn struct {
	gate  chan struct{}
	down  chan struct{}
	key   string
	ev    event.Event
	ended bool
}

func (t *endlessTurn) Next() bool {
	if t.ended {
		return false
	}
	<-t.gate
	select {
	case <-t.down:
		t.ended = true
		t.ev = event.Event{Type: event.TypeProcessExit, SessionID: t.key, Exit: &event.ProcessExit{Code: -1}}
	default:
		t.ev = event.Event{Type: event.TypeChatDelta, SessionID: t.key, Text: "more "}
	}
	return true
}
func (t *endlessTurn) Event() event.Event { return t.ev }
func (t *endlessTurn) Err() error         { return nil }
func (t *endlessTurn) Interrupt() error   { return nil }
func (t *endlessTurn) Kill() error        { return nil }
func (t *endlessTurn) Close() error       { return nil }

// Shutdown ends an ephemeral turn whose reader is stuck in its loop
// body, whether that reader reads the engine turn itself (its ctx cannot
// be cancelled) or the Harness feeds it: the engine's Shutdown ends the
// engine turn, and the Harness reads it to its end past the stuck
// reader, as it does a session's turn, instead of waiting for the reader
// to come back (Shutdown waited for it without end, whatever its ctx).
func TestShutdownEndsAnEphemeralTurnPastAStuckReader(t *testing.T) {
	defer func(n int) { heldRecords = n }(heldRecords)
	heldRecords = 16
	for _, pulls := range []bool{true, false} {
		t.Run(map[bool]string{true: "reader pulls", false: "reader fed"}[pulls], func(t *testing.T) {
			gate := make(chan struct{})
			h, err := New(Config{Roots: []string{realDir(t)}, StateDir: t.TempDir(), Engines: []engine.Engine{endlessEngine{gate: gate, down: make(chan struct{})}}})
			if err != nil {
				t.Fatal(err)
			}
			tr, err := h.StartTurn(context.Background(), TurnRequest{Message: "talk", Engine: "endless"})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			rctx := ctx
			if pulls {
				rctx = context.Background()
			}
			stuck, release, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
			go func() {
				defer close(done)
				for rec := range tr.Events(rctx) {
					if rec.Seq == 5 {
						close(stuck)
						<-release
					}
				}
			}()
			defer func() { <-done }()
			defer close(release)
			waitReaders(t, tr, 1)
			close(gate)
			<-stuck
			sctx, scancel := context.WithTimeout(context.Background(), time.Second)
			defer scancel()
			shut := make(chan struct{})
			go func() {
				defer close(shut)
				h.Shutdown(sctx)
			}()
			select {
			case <-shut:
			case <-time.After(time.Minute):
				t.Fatal("Shutdown waited for the stuck reader of an ephemeral turn")
			}
			select {
			case <-tr.Done():
			default:
				t.Error("Shutdown returned before the ephemeral turn ended")
			}
		})
	}
}
