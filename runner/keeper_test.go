package runner_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/chirality/harness/runner"
)

// fakeRunner is a Runner and TurnReporter driven by the test: crash()
// and endTurn() play what the Core reports.
type fakeRunner struct {
	mu       sync.Mutex
	running  bool
	starts   []string // initial prompts, one per Start
	stops    int
	prompts  []string
	onMsg    func(runner.Message)
	onExit   func(int)
	onStart  func(runner.TurnStart)
	onEnd    func(runner.TurnEnd)
	startErr error
	// gate, when set, holds Start until it is closed (a slow restart)
	gate chan struct{}
}

func (f *fakeRunner) Start(ctx context.Context, p string) error {
	f.mu.Lock()
	gate := f.gate
	f.mu.Unlock()
	if gate != nil {
		<-gate
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.startErr != nil {
		return f.startErr
	}
	f.running = true
	f.starts = append(f.starts, p)
	return nil
}

func (f *fakeRunner) Stop(ctx context.Context) error {
	f.mu.Lock()
	was := f.running
	f.running = false
	f.stops++
	exit := f.onExit
	f.mu.Unlock()
	if was {
		exit(0)
	}
	return nil
}

func (f *fakeRunner) SendPrompt(p string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.running {
		return runner.ErrNotRunning
	}
	f.prompts = append(f.prompts, p)
	return nil
}

func (f *fakeRunner) IsRunning() bool                       { f.mu.Lock(); defer f.mu.Unlock(); return f.running }
func (f *fakeRunner) SessionID() string                     { return "s1" }
func (f *fakeRunner) OnMessage(fn func(runner.Message))     { f.onMsg = fn }
func (f *fakeRunner) OnExit(fn func(int))                   { f.onExit = fn }
func (f *fakeRunner) OnTurnStart(fn func(runner.TurnStart)) { f.onStart = fn }
func (f *fakeRunner) OnTurnEnd(fn func(runner.TurnEnd))     { f.onEnd = fn }

// crash plays a crash: not running, OnExit(code).
func (f *fakeRunner) crash(code int) {
	f.mu.Lock()
	f.running = false
	f.mu.Unlock()
	f.onExit(code)
}

func (f *fakeRunner) turn(o runner.Outcome) {
	f.onStart(runner.TurnStart{Prompt: "p"})
	f.onEnd(runner.TurnEnd{Prompt: "p", Outcome: o, Error: "boom"})
}

func (f *fakeRunner) startCount() int { f.mu.Lock(); defer f.mu.Unlock(); return len(f.starts) }

// clock is a fake clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time          { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

func newKeeper(t *testing.T, f *fakeRunner, clk *clock, opened *[]string) *runner.Keeper {
	var mu sync.Mutex
	k := runner.NewKeeper(runner.KeeperConfig{Runner: f, ResumePrompt: "resume", Now: clk.Now,
		OnCircuitOpen: func(r string) { mu.Lock(); *opened = append(*opened, r); mu.Unlock() }})
	if err := k.Start(context.Background(), "hello"); err != nil {
		t.Fatal(err)
	}
	return k
}

func TestKeeperBreakerOpensOnThreeCrashesInWindow(t *testing.T) {
	f := &fakeRunner{}
	clk := &clock{now: time.Unix(1_000_000, 0)}
	var opened []string
	k := newKeeper(t, f, clk, &opened)
	for i := 1; i <= 2; i++ {
		f.crash(1)
		waitFor(t, "the restart", func() bool { return f.startCount() == i+1 })
		clk.advance(100 * time.Second)
	}
	if st := k.Status(); st.CircuitOpen || !st.Running {
		t.Fatalf("after two crashes: %+v", st)
	}
	f.mu.Lock()
	if f.starts[1] != "resume" || f.starts[2] != "resume" || f.stops != 2 {
		t.Errorf("restarts %v after %d stops, want Stop then Start(resume) each time", f.starts, f.stops)
	}
	f.mu.Unlock()
	f.crash(1) // the third within 300 s (at 0, 100, 200)
	st := k.Status()
	if !st.CircuitOpen || st.Running || len(opened) != 1 || st.Activity != "paused" {
		t.Fatalf("after three crashes in the window: %+v opened %v", st, opened)
	}
	if err := k.SendPrompt("x"); !errors.Is(err, runner.ErrCircuitOpen) {
		t.Errorf("SendPrompt = %v, want ErrCircuitOpen", err)
	}
	stop(t, k)
	if f.startCount() != 3 {
		t.Errorf("%d starts, want no restart after the breaker opened", f.startCount())
	}
}

func TestKeeperBreakerStaysClosedWhenSpread(t *testing.T) {
	f := &fakeRunner{}
	clk := &clock{now: time.Unix(1_000_000, 0)}
	var opened []string
	k := newKeeper(t, f, clk, &opened)
	for i := 1; i <= 6; i++ {
		f.crash(2)
		waitFor(t, "the restart", func() bool { return f.startCount() == i+1 })
		clk.advance(151 * time.Second) // never three within 300 s
	}
	if st := k.Status(); st.CircuitOpen || !st.Running || len(opened) != 0 {
		t.Fatalf("crashes spread out opened the breaker: %+v", st)
	}
	stop(t, k)
}

func TestKeeperResumeClosesCircuit(t *testing.T) {
	f := &fakeRunner{}
	clk := &clock{now: time.Unix(1_000_000, 0)}
	var opened []string
	k := newKeeper(t, f, clk, &opened)
	for i := 1; i <= 3; i++ {
		f.crash(1)
		if i < 3 {
			waitFor(t, "the restart", func() bool { return f.startCount() == i+1 })
		}
	}
	if !k.Status().CircuitOpen {
		t.Fatal("breaker not open")
	}
	k.Resume()
	waitFor(t, "the restart after Resume", func() bool { return f.startCount() == 4 })
	if st := k.Status(); st.CircuitOpen || !st.Running {
		t.Errorf("after Resume: %+v", st)
	}
	stop(t, k)
}

func TestKeeperFailedTurnsPauseAndResume(t *testing.T) {
	f := &fakeRunner{}
	var reasons []string
	k := runner.NewKeeper(runner.KeeperConfig{Runner: f, OnPause: func(r string) { reasons = append(reasons, r) }})
	k.Start(context.Background(), "")
	f.turn(runner.Failed)
	f.turn(runner.Failed)
	f.turn(runner.Completed) // a success in between resets the count
	f.turn(runner.Failed)
	f.turn(runner.Interrupted) // neither
	f.turn(runner.Failed)
	if k.Status().Paused || len(reasons) != 0 {
		t.Fatal("paused before three consecutive failures")
	}
	f.turn(runner.Failed)
	st := k.Status()
	if !st.Paused || len(reasons) != 1 || st.TurnCount != 7 || st.Activity != "paused" {
		t.Fatalf("status %+v reasons %v", st, reasons)
	}
	if err := k.SendPrompt("x"); !errors.Is(err, runner.ErrPaused) {
		t.Errorf("SendPrompt = %v, want ErrPaused", err)
	}
	f.turn(runner.Failed) // still paused: OnPause not called again
	if len(reasons) != 1 {
		t.Errorf("OnPause called %d times", len(reasons))
	}
	k.Resume()
	if err := k.SendPrompt("x"); err != nil {
		t.Errorf("SendPrompt after Resume = %v", err)
	}
	k.Pause()
	if err := k.SendPrompt("y"); !errors.Is(err, runner.ErrPaused) || len(reasons) != 1 {
		t.Errorf("manual Pause: %v, OnPause calls %d", err, len(reasons))
	}
	k.Resume()
	if err := k.Compact(context.Background()); !errors.Is(err, runner.ErrUnsupported) {
		t.Errorf("Compact on a runner without it = %v", err)
	}
	stop(t, k)
}

func TestKeeperActivityAndStopEndsRecovery(t *testing.T) {
	f := &fakeRunner{}
	clk := &clock{now: time.Unix(5, 0)}
	k := runner.NewKeeper(runner.KeeperConfig{Runner: f, Now: clk.Now})
	k.Start(context.Background(), "")
	if st := k.Status(); st.Activity != "idle" || !st.Running {
		t.Errorf("status %+v", st)
	}
	f.onStart(runner.TurnStart{})
	if st := k.Status(); st.Activity != "working" || st.TurnCount != 1 || !st.LastActivation.Equal(time.Unix(5, 0)) {
		t.Errorf("status %+v", st)
	}
	f.onEnd(runner.TurnEnd{Outcome: runner.Completed})
	stop(t, k)
	f.crash(1) // after Stop: no restart
	if f.startCount() != 1 {
		t.Errorf("restarted after Stop")
	}
}

func TestKeeperStartFailureCountsAsCrash(t *testing.T) {
	f := &fakeRunner{}
	clk := &clock{now: time.Unix(1_000_000, 0)}
	var opened []string
	k := newKeeper(t, f, clk, &opened)
	f.mu.Lock()
	f.startErr = errors.New("cannot start")
	f.mu.Unlock()
	f.crash(1)
	waitFor(t, "the breaker", func() bool { return k.Status().CircuitOpen })
	stop(t, k)
}

// Mentions that come while a crashed runner restarts are not refused:
// they wait in the Keeper and run after the resume prompt, in order.
func TestKeeperPromptsDuringRestartWait(t *testing.T) {
	f := &fakeRunner{}
	clk := &clock{now: time.Unix(1_000_000, 0)}
	var opened []string
	k := newKeeper(t, f, clk, &opened)
	gate := make(chan struct{})
	f.mu.Lock()
	f.gate = gate
	f.mu.Unlock()
	f.crash(1)
	for _, p := range []string{"one", "two"} {
		if err := k.SendPrompt(p); err != nil {
			t.Fatalf("SendPrompt(%q) during the restart: %v", p, err)
		}
	}
	f.mu.Lock()
	if len(f.prompts) != 0 {
		t.Errorf("prompts reached a runner that was down: %v", f.prompts)
	}
	f.mu.Unlock()
	close(gate)
	waitFor(t, "the restart", func() bool { return f.startCount() == 2 })
	waitFor(t, "the waiting prompts", func() bool { f.mu.Lock(); defer f.mu.Unlock(); return len(f.prompts) == 2 })
	if err := k.SendPrompt("three"); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	got := append([]string(nil), f.prompts...)
	first := f.starts[1]
	f.mu.Unlock()
	if first != "resume" || len(got) != 3 || got[0] != "one" || got[1] != "two" || got[2] != "three" {
		t.Fatalf("started with %q, then %v", first, got)
	}
	stop(t, k)
	if err := k.SendPrompt("after stop"); !errors.Is(err, runner.ErrNotRunning) {
		t.Fatalf("SendPrompt after Stop = %v", err)
	}
}
