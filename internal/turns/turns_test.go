package turns

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/chirality/harness/engine"
)

// fakeTurn ends on Interrupt when obedient, and always on Kill.
type fakeTurn struct {
	obedient bool
	once     sync.Once
	done     chan struct{}
	mu       sync.Mutex
	intr     int
	killed   bool
}

func newFake(obedient bool) *fakeTurn {
	return &fakeTurn{obedient: obedient, done: make(chan struct{})}
}
func (f *fakeTurn) end() { f.once.Do(func() { close(f.done) }) }
func (f *fakeTurn) Done() <-chan struct{} {
	return f.done
}
func (f *fakeTurn) Interrupt() error {
	f.mu.Lock()
	f.intr++
	f.mu.Unlock()
	if f.obedient {
		f.end()
	}
	return nil
}
func (f *fakeTurn) Kill() error {
	f.mu.Lock()
	f.killed = true
	f.mu.Unlock()
	f.end()
	return nil
}

func TestBusyRemoveAndClosed(t *testing.T) {
	var r Registry[*fakeTurn]
	a, b := newFake(true), newFake(true)
	if err := r.Add("s", a); err != nil {
		t.Fatal(err)
	}
	if err := r.Add("s", b); !errors.Is(err, engine.ErrBusy) {
		t.Fatalf("second turn of a key: %v", err)
	}
	r.Remove("s", b) // not s's turn: nothing happens
	if got, ok := r.Get("s"); !ok || got != a {
		t.Fatal("a stale Remove dropped the running turn")
	}
	r.Remove("s", a)
	if err := r.Add("s", b); err != nil {
		t.Fatalf("after Remove: %v", err)
	}
	r.Remove("s", b)
	if err := r.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := r.Add("t", newFake(true)); !errors.Is(err, engine.ErrClosed) || !r.Closed() {
		t.Fatalf("after Shutdown: %v", err)
	}
}

// Shutdown interrupts every turn and waits; one that does not end by the
// deadline is killed, and Shutdown returns the context's error only then.
func TestShutdownInterruptsThenKills(t *testing.T) {
	var r Registry[*fakeTurn]
	good, stuck := newFake(true), newFake(false)
	_ = r.Add("good", good)
	_ = r.Add("stuck", stuck)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := r.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v, want the deadline", err)
	}
	for name, f := range map[string]*fakeTurn{"good": good, "stuck": stuck} {
		select {
		case <-f.done:
		default:
			t.Errorf("%s not done after Shutdown", name)
		}
		if f.intr != 1 {
			t.Errorf("%s interrupted %d times", name, f.intr)
		}
	}
	if good.killed || !stuck.killed {
		t.Errorf("killed: good %v stuck %v; want only the stuck one", good.killed, stuck.killed)
	}

	var r2 Registry[*fakeTurn]
	_ = r2.Add("good", newFake(true))
	if err := r2.Shutdown(context.Background()); err != nil {
		t.Errorf("all obedient: %v", err)
	}
	if err := r2.Shutdown(context.Background()); err != nil {
		t.Errorf("second Shutdown: %v", err)
	}
}

// Close refuses new turns and leaves the registered ones running, and
// they stay the registry's: Keys lists them and Shutdown ends them.
func TestCloseKeepsRunningTurns(t *testing.T) {
	var r Registry[*fakeTurn]
	a := newFake(true)
	_ = r.Add("a", a)
	r.Close()
	if err := r.Add("b", newFake(true)); !errors.Is(err, engine.ErrClosed) || !r.Closed() {
		t.Fatalf("Add after Close: %v", err)
	}
	select {
	case <-a.done:
		t.Fatal("Close ended a running turn")
	default:
	}
	if a.intr != 0 || a.killed {
		t.Fatalf("Close touched the running turn: interrupted %d, killed %v", a.intr, a.killed)
	}
	if keys := r.Keys(); len(keys) != 1 || keys[0] != "a" {
		t.Fatalf("Keys = %v, want [a]", keys)
	}
	if err := r.Shutdown(context.Background()); err != nil || a.intr != 1 {
		t.Fatalf("Shutdown after Close: %v, interrupted %d times", err, a.intr)
	}
}
