//go:build unix

package trust

import (
	"fmt"
	"os"
	"syscall"
	"time"
)

// lockFile holds an exclusive flock on path (created 0600) until the
// returned function is called; the kernel drops it with the process. It
// waits at most lockWait for another holder (ErrLocked).
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("trust: %w", err)
	}
	deadline := time.Now().Add(lockWait)
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if err != syscall.EINTR && err != syscall.EWOULDBLOCK {
			break
		}
		if err == syscall.EWOULDBLOCK && time.Now().After(deadline) {
			err = fmt.Errorf("%w (held by another process for %v)", ErrLocked, lockWait)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	f.Close()
	return nil, fmt.Errorf("trust: lock %s: %w", path, err)
}

// lockWait bounds how long lockFile waits for another holder (a process
// anything on the machine may have started, an agent's among them): a
// write to the record fails with ErrLocked rather than hang.
var lockWait = 10 * time.Second
