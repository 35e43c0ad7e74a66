//go:build unix

package trust

import (
	"fmt"
	"os"
	"syscall"
)

// lockFile holds an exclusive flock on path (created 0600) until the
// returned function is called; the kernel drops it with the process.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("trust: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("trust: lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}
