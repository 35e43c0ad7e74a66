//go:build unix

package trust

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/chirality/harness/internal/flock"
)

// lockFile holds an exclusive flock on path (created 0600) until the
// returned function is called; the kernel drops it with the process. It
// waits at most lockWait for another holder (ErrLocked).
func lockFile(path string) (func(), error) {
	ctx, cancel := context.WithTimeout(context.Background(), lockWait)
	defer cancel()
	unlock, err := flock.Lock(ctx, path)
	if errors.Is(err, flock.ErrHeld) {
		err = fmt.Errorf("%w (held by another process for %v)", ErrLocked, lockWait)
	}
	if err != nil {
		return nil, fmt.Errorf("trust: lock %s: %w", path, err)
	}
	return unlock, nil
}

// lockWait bounds how long lockFile waits for another holder (a process
// anything on the machine may have started, an agent's among them): a
// write to the record fails with ErrLocked rather than hang.
var lockWait = 10 * time.Second
