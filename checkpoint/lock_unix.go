//go:build unix

package checkpoint

import (
	"context"
	"errors"
	"fmt"

	"github.com/chirality/harness/internal/flock"
)

// lockFile takes an exclusive flock on path (created 0600), waiting
// until ctx ends: two processes (a server and a CLI) never run git on one
// store at once. The lock goes with the process if it dies.
func lockFile(ctx context.Context, path string) (func(), error) {
	unlock, err := flock.Lock(ctx, path)
	if errors.Is(err, flock.ErrHeld) {
		return nil, fmt.Errorf("checkpoint: waiting for the store's lock: %w", ctx.Err())
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint: lock %s: %w", path, err)
	}
	return unlock, nil
}
