//go:build !linux

package checkpoint

import (
	"context"
	"runtime"
)

// watcher: only on Linux (inotify); elsewhere every snapshot walks.
type watcher struct{ inject chan error }

func startWatcher(root, cookies string, maxTouched int) (*watcher, string) {
	return nil, "no watcher on " + runtime.GOOS
}

func (w *watcher) close() {}

func (w *watcher) take(ctx context.Context) ([]string, string) { return nil, "no watcher" }
