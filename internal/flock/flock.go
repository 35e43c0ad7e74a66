//go:build unix

// Package flock is the one advisory file lock of the harness: an
// exclusive flock(2) on a lock file, which the kernel drops with the
// process that holds it (a crash or SIGKILL leaves no stale lock).
//
// Locks are per open file: two Locks of one path in one process exclude
// each other as two processes' do.
package flock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"
)

// ErrHeld is TryLock's answer when another holder has the lock.
var ErrHeld = errors.New("flock: held by another holder")

// poll is how often Lock tries again while another holder has the lock.
const poll = 10 * time.Millisecond

// A lock is held by its open file, and a child forked while that file
// was open shares it until its exec has closed it (O_CLOEXEC), which
// ends a moment after the parent's fork returns (later still on a busy
// machine). So this process's own TryLock right after its own unlock can
// find the lock held by its own child: a warm agent spawned as one turn
// ends kept the session's turn lock from the next. No lock owned by the
// process rather than the file avoids this without worse (fcntl locks
// vanish when any file of the path is closed, and a session fork copies
// its lock file). So TryLock waits, up to childGrace after this process
// let a path go, for the lock to be free; a lock held by another process
// is still refused at once otherwise.
const (
	childGrace = 2 * time.Second
	childPoll  = time.Millisecond
)

var released = releases{m: map[string]time.Time{}}

// releases are the paths this process let go within childGrace.
type releases struct {
	mu sync.Mutex
	m  map[string]time.Time
}

func (r *releases) note(path string) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[path] = now
	if len(r.m) > 64 { // bounded by the locks let go in childGrace
		for p, t := range r.m {
			if now.Sub(t) >= childGrace {
				delete(r.m, p)
			}
		}
	}
}

func (r *releases) recent(path string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.m[path]
	return ok && time.Since(t) < childGrace
}

// TryLock takes the lock on path (created 0600) if nobody holds it, and
// returns the function that lets it go; ErrHeld if somebody does.
func TryLock(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return func() {
				f.Close()
				released.note(path)
			}, nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			if released.recent(path) {
				time.Sleep(childPoll) // our own child's, in all likelihood: see released
				continue
			}
			f.Close()
			return nil, ErrHeld
		}
		f.Close()
		return nil, fmt.Errorf("flock %s: %w", path, err)
	}
}

// Lock takes the lock on path, waiting while another holder has it until
// ctx ends (then ctx's error, wrapped with ErrHeld).
func Lock(ctx context.Context, path string) (unlock func(), err error) {
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		unlock, err := TryLock(path)
		if !errors.Is(err, ErrHeld) {
			return unlock, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %w", ErrHeld, ctx.Err())
		case <-tick.C:
		}
	}
}
