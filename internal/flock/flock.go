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
	"syscall"
	"time"
)

// ErrHeld is TryLock's answer when another holder has the lock.
var ErrHeld = errors.New("flock: held by another holder")

// poll is how often Lock tries again while another holder has the lock.
const poll = 10 * time.Millisecond

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
			return func() { f.Close() }, nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
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
