package notify

import (
	"context"

	"github.com/chirality/harness"
)

// Start watches every event of h and notifies cfg's sinks, with the
// sessions' project roots and titles from h. The notifier ends with h
// (Shutdown closes the watch); Close ends the watch, delivers what is
// queued until its ctx is done and abandons the rest.
func Start(h *harness.Harness, cfg Config) (*Notifier, error) {
	if cfg.Lookup == nil {
		cfg.Lookup = func(id string) (string, string) {
			s, err := h.Session(id)
			if err != nil {
				return "", ""
			}
			return s.ProjectRoot, s.Title
		}
	}
	n, err := New(cfg)
	if err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(context.Background())
	events := h.Watch(ctx, 0)
	n.mu.Lock()
	n.stopWatch = stop
	n.mu.Unlock()
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		n.Run(events)
	}()
	return n, nil
}
