// Package turns is the turn registry every engine keeps: at most one
// running turn per session key, no new turn after Shutdown, and Shutdown
// itself — interrupt every turn, wait for them with the caller's
// deadline, kill what is left and wait for that too. An engine adds a
// turn when it starts one and removes it when the turn is over; the rules
// and their errors (engine.ErrBusy, engine.ErrClosed) are the same on
// every engine because they are written once, here.
package turns

import (
	"context"
	"sync"

	"github.com/chirality/harness/engine"
)

// Turn is what the registry needs of a running turn. Done is closed when
// the turn is over (its process, if any, gone); Interrupt and Kill return
// at once and may be called more than once.
type Turn interface {
	comparable
	Interrupt() error
	Kill() error
	Done() <-chan struct{}
}

// Registry holds the running turns of one engine by session key. The zero
// value is ready to use; it is safe for concurrent use.
type Registry[T Turn] struct {
	mu     sync.Mutex
	turns  map[string]T
	closed bool
}

// Add registers t under key. It fails with engine.ErrClosed after
// Shutdown and engine.ErrBusy while key has a turn.
func (r *Registry[T]) Add(key string, t T) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return engine.ErrClosed
	}
	if _, ok := r.turns[key]; ok {
		return engine.ErrBusy
	}
	if r.turns == nil {
		r.turns = map[string]T{}
	}
	r.turns[key] = t
	return nil
}

// Remove unregisters t, if it is still key's turn (a later turn of the
// key is left alone).
func (r *Registry[T]) Remove(key string, t T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cur, ok := r.turns[key]; ok && cur == t {
		delete(r.turns, key)
	}
}

// Get returns key's running turn.
func (r *Registry[T]) Get(key string) (T, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.turns[key]
	return t, ok
}

// Keys returns the keys with a registered turn, in no order.
func (r *Registry[T]) Keys() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	keys := make([]string, 0, len(r.turns))
	for k := range r.turns {
		keys = append(keys, k)
	}
	return keys
}

// Close refuses new turns (Add fails with engine.ErrClosed) and leaves
// the running ones alone: for an engine that must let turns it is
// starting finish their start before Shutdown interrupts them (Claude
// Code reserves a key before it spawns the child). Shutdown closes too.
func (r *Registry[T]) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
}

// Closed reports whether Close or Shutdown was called.
func (r *Registry[T]) Closed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

// Shutdown refuses new turns, interrupts the running ones and waits for
// each to be done; when ctx ends first it kills the ones left and waits
// for them, and returns ctx's error. Turns keep their own removal (Remove)
// and must end once killed. Safe to call more than once.
func (r *Registry[T]) Shutdown(ctx context.Context) error {
	r.mu.Lock()
	r.closed = true
	ts := make([]T, 0, len(r.turns))
	for _, t := range r.turns {
		ts = append(ts, t)
	}
	r.mu.Unlock()
	for _, t := range ts {
		_ = t.Interrupt()
	}
	var err error
	for _, t := range ts {
		// A turn that has ended is never killed: with ctx done too, the
		// select below would pick either case at random.
		select {
		case <-t.Done():
			continue
		default:
		}
		select {
		case <-t.Done():
		case <-ctx.Done():
			err = ctx.Err()
			_ = t.Kill()
			<-t.Done()
		}
	}
	return err
}
