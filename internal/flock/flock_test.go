//go:build unix

package flock_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chirality/harness/internal/flock"
)

func TestTryLockExcludesAndReleases(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.lock")
	unlock, err := flock.TryLock(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := flock.TryLock(p); !errors.Is(err, flock.ErrHeld) {
		t.Fatalf("a second TryLock while held: %v, want ErrHeld", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := flock.Lock(ctx, p); !errors.Is(err, flock.ErrHeld) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock while held, ctx ending: %v", err)
	}
	unlock()
	again, err := flock.TryLock(p)
	if err != nil {
		t.Fatalf("TryLock after unlock: %v", err)
	}
	again()
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("lock file: %v %v", fi, err)
	}
}

// Another process's lock is seen, and goes with that process when it is
// killed: no stale lock after a crash.
func TestAKilledHolderLeavesNoLock(t *testing.T) {
	if os.Getenv("FLOCK_HOLD") != "" {
		if _, err := flock.TryLock(os.Getenv("FLOCK_HOLD")); err != nil {
			os.Exit(2)
		}
		os.Stdout.WriteString("held\n")
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	p := filepath.Join(t.TempDir(), "x.lock")
	cmd := exec.Command(os.Args[0], "-test.run=^TestAKilledHolderLeavesNoLock$")
	cmd.Env = append(os.Environ(), "FLOCK_HOLD="+p)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := out.Read(buf); err != nil || string(buf) != "held\n" {
		t.Fatalf("child: %q %v", buf, err)
	}
	if _, err := flock.TryLock(p); !errors.Is(err, flock.ErrHeld) {
		t.Fatalf("TryLock while another process holds it: %v", err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	unlock, err := flock.Lock(ctx, p)
	if err != nil {
		t.Fatalf("the killed holder's lock is still held: %v", err)
	}
	unlock()
}

// A lock let go while this process starts children is free at once: a
// child forked while the lock's file was open holds that file only
// until its exec, and the unlock waits for that (the flake of
// TestRewindDropsTheWarmAgent: a warm agent spawned as a turn ended kept
// the session's turn lock for the next turn).
func TestUnlockWhileChildrenStartIsFreeAtOnce(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.lock")
	stop := make(chan struct{})
	done := make(chan struct{})
	for range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := exec.Command("true").Run(); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	defer func() {
		close(stop)
		for range 4 {
			<-done
		}
	}()
	deadline := time.Now().Add(time.Second)
	for n := 0; time.Now().Before(deadline); n++ {
		unlock, err := flock.TryLock(p)
		if err != nil {
			t.Fatalf("TryLock %d right after an unlock: %v", n, err)
		}
		unlock()
	}
}
