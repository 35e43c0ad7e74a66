//go:build unix

package trust

import (
	"errors"
	"testing"
	"time"
)

// A lock another holder keeps (anything on the machine can take it) makes
// a write fail with ErrLocked after lockWait instead of hanging it; once
// released, the write goes through.
func TestWriteDoesNotWaitForeverForTheLock(t *testing.T) {
	defer func(w time.Duration) { lockWait = w }(lockWait)
	lockWait = 100 * time.Millisecond
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	unlock, err := lockFile(s.Path(root) + lockSuffix) // another open file: flock conflicts
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.AddRule(root, "s1", "Bash(ls)") }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrLocked) {
			t.Fatalf("AddRule while the lock is held = %v, want ErrLocked", err)
		}
	case <-time.After(time.Minute): // a guard against the hang this test is about
		t.Fatal("AddRule waited for the lock without a deadline")
	}
	unlock()
	if err := s.AddRule(root, "s1", "Bash(ls)"); err != nil {
		t.Fatalf("AddRule after the lock was released: %v", err)
	}
}
