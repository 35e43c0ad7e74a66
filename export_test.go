package harness

import "github.com/chirality/harness/session"

// What exists only for this package's tests; the public API does not
// offer it (issue 30: unexport what exists only for tests).

// Store returns the session store.
func (h *Harness) Store() *session.Store { return h.sessionStore() }

// WarmPids returns the process ids of the waiting warm agents by session.
func (h *Harness) WarmPids() map[string]int { return h.warmPids() }

// Subscribers returns how many live readers session id's running turn
// has (0 when none is running).
func (h *Harness) Subscribers(id string) int { return h.subscribers(id) }
